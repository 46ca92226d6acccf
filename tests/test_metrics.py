"""Metric functions: METHOD.md's worked example reproduced exactly, and every edge-case decision."""

from __future__ import annotations

import dataclasses
import math

import pytest

from scaffold_local.method.metrics import SummaryScores, SummaryVerdicts, rouge_l, score_summary, system_means
from scaffold_local.method.scaffold import Scaffold
from scaffold_local.method.views import ViewVerdicts
from scaffold_local.method.views.entities import Attribute, Entity
from scaffold_local.method.views.facts import Fact
from scaffold_local.method.views.questions import KeyQuestion
from scaffold_local.method.views.scoring import preference_score


def judged(facts=None, cited=None, questions=None, attributes=None, **rest) -> SummaryVerdicts:
    """SummaryVerdicts with the given verdicts: facts and questions as {id: kept}, kept attribute ids."""
    views = {}
    if facts is not None:
        views["facts"] = ViewVerdicts(kept=facts, cited=cited or {})
    if questions is not None:
        views["questions"] = ViewVerdicts(kept=questions)
    if attributes is not None:
        views["entities"] = ViewVerdicts(kept={a: True for a in attributes})
    return SummaryVerdicts(views=views, **rest)


def make_scaffold(main_facts: int, supp_facts: int, other_facts: int = 0, main_q: int = 0, supp_q: int = 0,
                  attributes_per_entity: tuple[int, ...] = ()) -> Scaffold:
    labels = ["main point"] * main_facts + ["supporting detail"] * supp_facts + ["other"] * other_facts
    q_labels = ["main point"] * main_q + ["supporting detail"] * supp_q
    return Scaffold(
        key="k", doc_id="doc", document_sha256="0" * 64,
        facts=tuple(Fact(id=f"F{i}", text=f"fact {i}", label=label) for i, label in enumerate(labels, 1)),
        questions=tuple(KeyQuestion(id=f"Q{i}", question="?", expected_answer="a", provenance="Sentence 1", label=label)
                        for i, label in enumerate(q_labels, 1)),
        entities=tuple(
            Entity(id=f"E{e}", name=f"entity {e}", kind="thing",
                   attributes=tuple(Attribute(id=f"E{e}.A{a}", text="x", label="main point") for a in range(1, n + 1)))
            for e, n in enumerate(attributes_per_entity, 1)
        ),
    )


def hits(scaffold: Scaffold, inferred: set[str]) -> dict[str, bool]:
    return {f.id: f.id in inferred for f in scaffold.view("facts")}


# METHOD.md, Appendix B: 4 main + 3 supporting facts, 3 + 2 questions, 4 entities with 3+2+2+2 attributes.
WORKED = make_scaffold(4, 3, main_q=3, supp_q=2, attributes_per_entity=(3, 2, 2, 2))


def test_worked_example_summary_a_fps_is_one_third():
    # Summary A: 2 main facts (F1, F2) and 1 supporting fact (F5).
    judgments = judged(facts=hits(WORKED, {"F1", "F2", "F5"}))
    scores = score_summary(WORKED, judgments, system="A", n_sentences=3)
    assert scores.values["fps"] == pytest.approx(2 / 4 * (1 - 1 / 3))
    assert round(scores.values["fps"], 3) == 0.333
    assert scores.values["main_fc"] == 0.5 and scores.values["supp_fc"] == pytest.approx(1 / 3)


def test_worked_example_summary_b_covers_more_and_scores_lower():
    judgments = judged(facts=hits(WORKED, {"F1", "F2", "F3", "F5", "F6"}))
    scores = score_summary(WORKED, judgments, system="B", n_sentences=4)
    assert scores.values["fps"] == pytest.approx(0.25)
    assert scores.values["fc"] == pytest.approx(5 / 7)  # more coverage ...
    a = score_summary(WORKED, judged(facts=hits(WORKED, {"F1", "F2", "F5"})), system="A", n_sentences=3)
    assert scores.values["fc"] > a.values["fc"] and scores.values["fps"] < a.values["fps"]  # ... lower FPS


def test_worked_example_summary_a_eps_is_four_ninths():
    # Entities keep 2/3, 1/2, 1/2 and 0/2 attributes.
    preserved = frozenset({"E1.A1", "E1.A2", "E2.A1", "E3.A2"})
    scores = score_summary(WORKED, judged(attributes=preserved), system="A", n_sentences=3)
    assert scores.values["eps"] == pytest.approx(4 / 9)
    assert round(scores.values["eps"], 3) == 0.444


def test_qps_uses_question_labels():
    answered = {"Q1": True, "Q2": True, "Q3": True, "Q4": True, "Q5": False}
    scores = score_summary(WORKED, judged(questions=answered), system="A", n_sentences=2)
    assert scores.values["qps"] == pytest.approx(1.0 * (1 - 1 / 2))
    assert scores.values["qc"] == pytest.approx(4 / 5)


def test_preference_score_edges():
    assert preference_score(0, 0, 1, 2) is None  # no main items: undefined
    assert preference_score(1, 2, 0, 0) == 0.5  # no supporting items: penalty factor 1
    assert preference_score(0, 3, 0, 2) == 0.0  # no main facts kept -> 0
    assert preference_score(3, 3, 2, 2) == 0.0  # every supporting fact restated -> 0


def test_other_items_never_count():
    scaffold = make_scaffold(2, 2, other_facts=3)
    with_other = hits(scaffold, {"F1", "F5", "F6", "F7"})
    scores = score_summary(scaffold, judged(facts=with_other), system="s", n_sentences=1)
    assert scores.values["fc"] == 0.25  # 1 of 4 main+supporting; the 3 "other" hits are ignored
    assert scores.values["fps"] == 0.5


def test_no_main_facts_makes_fps_undefined_with_reason():
    scaffold = make_scaffold(0, 2)
    scores = score_summary(scaffold, judged(facts=hits(scaffold, {"F1"})), system="s", n_sentences=1)
    assert scores.values["fps"] is None and scores.values["main_fc"] is None
    assert scores.undefined["fps"] == "scaffold has no main facts"
    assert scores.values["supp_fc"] == 0.5


def test_no_supporting_facts_keeps_fps_and_leaves_supp_fc_undefined():
    scaffold = make_scaffold(2, 0)
    scores = score_summary(scaffold, judged(facts=hits(scaffold, {"F1"})), system="s", n_sentences=1)
    assert scores.values["fps"] == 0.5
    assert scores.values["supp_fc"] is None


def test_zero_sentence_summary_has_undefined_f_and_focus():
    scaffold = make_scaffold(2, 1, main_q=1, attributes_per_entity=(2,))
    judgments = judged(facts=hits(scaffold, set()), questions={"Q1": False},
                     attributes=frozenset())
    scores = score_summary(scaffold, judgments, system="s", n_sentences=0)
    assert scores.values["fps"] == 0.0 and scores.values["fc"] == 0.0 and scores.values["eps"] == 0.0
    assert scores.values["f"] is None and scores.values["fact_focus"] is None
    assert scores.undefined["f"] == "summary has no sentences"


def test_fact_focus_a_sentence_that_conveys_only_an_other_fact_is_not_aligned():
    """The decision (README, decisions): "other" facts never affect a score, so a sentence cited only
    by an inferred "other" fact is not aligned; one that a main or supporting fact also cites is."""
    scaffold = make_scaffold(1, 1, other_facts=1)
    judgments = judged(
        facts={"F1": True, "F2": False, "F3": True},
        cited={"F1": [1, 2], "F2": [3], "F3": [2, 4]},  # F2 not inferred; F3 is "other", alone in sentence 4
    )
    scores = score_summary(scaffold, judgments, system="s", n_sentences=4)
    assert scores.values["fact_focus"] == 0.5  # sentences 1 and 2: not 3 (its fact missed), not 4 (only "other")


def test_faithfulness_share_and_failed_judgments():
    scaffold = make_scaffold(1, 0)
    judgments = SummaryVerdicts(sentence_faithful=[True, False, True, True], failures={"facts": "schema violation: F1"})
    scores = score_summary(scaffold, judgments, system="s", n_sentences=4)
    assert scores.values["f"] == 0.75
    assert scores.values["fps"] is None
    assert scores.undefined["fps"] == "fact alignment failed: schema violation: F1"


def test_failed_extraction_view_is_named():
    scaffold = make_scaffold(1, 1).model_copy(update={"entities": None, "failures": {"entities": "not valid JSON"}})
    scores = score_summary(scaffold, SummaryVerdicts(), system="s", n_sentences=1)
    assert scores.undefined["eps"] == "entity extraction failed: not valid JSON"


def test_rouge_l_matches_hand_computed_lcs():
    # candidate 6 tokens, reference 5, LCS "the cat on the mat" = 5 -> P 5/6, R 1, F = 10/11
    assert rouge_l("The cat sat on the mat", ["the cat on the mat"]) == pytest.approx(2 * (5 / 6) / (5 / 6 + 1))
    assert rouge_l("abc", ["", "   "]) is None
    assert rouge_l("x y", ["a b", "x y"]) == 1.0  # best over references


def test_system_means_report_exclusions():
    def row(system: str, fps: float | None) -> SummaryScores:
        values = {"fps": fps}
        return SummaryScores(doc_id="d", system=system, n_sentences=1, values=values,
                             undefined={} if fps is not None else {"fps": "scaffold has no main facts"})

    means = {s.system: s for s in system_means([row("a", 0.2), row("a", None), row("a", 0.4), row("b", None)])}
    assert means["a"].metrics["fps"].mean == pytest.approx(0.3)
    assert means["a"].metrics["fps"].n == 2 and means["a"].metrics["fps"].excluded == 1
    assert means["a"].metrics["fps"].excluded_reasons == {"scaffold has no main facts": 1}
    assert means["b"].metrics["fps"].mean is None and means["b"].metrics["fps"].excluded == 1
    assert math.isclose(means["a"].n_summaries, 3)


def test_eps_denominator_counts_every_attribute_whatever_its_label():
    """The paper's G.6: "always the total scaffold attribute count"; an `other` attribute counts too."""
    scaffold = make_scaffold(1, 0).model_copy(update={"entities": (
        Entity(id="E1", name="Alpha", kind="org", attributes=(
            Attribute(id="E1.A1", text="a", label="main point"),
            Attribute(id="E1.A2", text="b", label="supporting detail"),
            Attribute(id="E1.A3", text="published Monday", label="other"))),)})
    scores = score_summary(scaffold, judged(attributes=frozenset({"E1.A1"})), system="s", n_sentences=1)
    assert scores.values["eps"] == pytest.approx(1 / 3)
    kept_other = score_summary(scaffold, judged(attributes=frozenset({"E1.A3"})), system="s", n_sentences=1)
    assert kept_other.values["eps"] == pytest.approx(1 / 3)
    no_attributes = score_summary(make_scaffold(1, 0), judged(attributes=frozenset()), system="s", n_sentences=1)
    assert no_attributes.values["eps"] is None and no_attributes.undefined["eps"] == "scaffold has no entity attributes"


def test_fact_focus_is_undefined_without_main_or_supporting_facts():
    scaffold = make_scaffold(0, 0, other_facts=2)
    judgments = judged(facts={"F1": True, "F2": False}, cited={"F1": [1], "F2": []})
    scores = score_summary(scaffold, judgments, system="s", n_sentences=2)
    assert scores.values["fact_focus"] is None
    assert scores.undefined["fact_focus"] == "scaffold has no main or supporting facts"


# ---------------------------------------------------------------- items whose verdict failed (issue 18)
# A failed verdict counts neither as kept nor as missed: a share is over the judged items and says so;
# it is undefined only when none of its items was judged, or (Fact Focus) when a failed fact could change it.


def test_worked_example_with_a_failed_main_and_a_failed_supporting_fact():
    # Summary A (F1, F2, F5 inferred) with F2 (main) and F6 (supporting) failed: main F1 kept of F1, F3, F4;
    # supporting F5 kept of F5, F7. FPS = 1/3 x (1 - 1/2) = 1/6; FC = 2/5; Main FC 1/3; Supp FC 1/2.
    verdicts = ViewVerdicts(kept={i: i in {"F1", "F5"} for i in ("F1", "F3", "F4", "F5", "F7")},
                            cited={"F1": [1], "F5": [2]}, failed={"F2": "duplicate key", "F6": "missing"})
    scores = score_summary(WORKED, SummaryVerdicts(views={"facts": verdicts}), system="A", n_sentences=3)
    assert scores.values["fps"] == pytest.approx(1 / 6) and scores.values["fc"] == pytest.approx(2 / 5)
    assert scores.values["main_fc"] == pytest.approx(1 / 3) and scores.values["supp_fc"] == 0.5
    assert scores.notes == {
        "fps": "FPS over 3 of 4 main and 2 of 3 supporting facts: no valid verdict for F2, F6",
        "fc": "FC over 5 of 7 facts: no valid verdict for F2, F6",
        "main_fc": "Main FC over 3 of 4 main facts: no valid verdict for F2",
        "supp_fc": "Supp FC over 2 of 3 supporting facts: no valid verdict for F6"}
    # Sentence 3 is aligned by no judged fact, and F2 or F6 could align it.
    assert scores.values["fact_focus"] is None
    assert scores.undefined["fact_focus"] == "no valid verdict for F2, F6, which could align a sentence no judged fact aligns"


def test_fact_focus_is_exact_when_the_judged_facts_align_every_sentence():
    scaffold = make_scaffold(2, 0)
    verdicts = ViewVerdicts(kept={"F1": True}, cited={"F1": [1, 2]}, failed={"F2": "missing"})
    scores = score_summary(scaffold, SummaryVerdicts(views={"facts": verdicts}), system="s", n_sentences=2)
    assert scores.values["fact_focus"] == 1.0
    assert scores.notes["fact_focus"] == "Fact Focus from 1 of 2 facts (no valid verdict for F2): exact, as they align every sentence"


def test_every_main_or_every_supporting_item_failed_leaves_its_metrics_undefined():
    scaffold = make_scaffold(1, 2, main_q=2, supp_q=1)
    no_main = ViewVerdicts(kept={"F2": True, "F3": False}, cited={"F2": [1]}, failed={"F1": "missing"})
    no_supp = ViewVerdicts(kept={"Q1": True, "Q2": False}, failed={"Q3": "duplicate key"})
    scores = score_summary(scaffold, SummaryVerdicts(views={"facts": no_main, "questions": no_supp}), system="s", n_sentences=1)
    assert (scores.values["fps"], scores.values["main_fc"]) == (None, None)
    assert scores.undefined["fps"] == scores.undefined["main_fc"] == "no main fact has a valid verdict (F1)"
    assert scores.values["supp_fc"] == 0.5 and scores.values["fc"] == 0.5  # F2 kept, F3 missed
    assert scores.values["qps"] is None  # the penalty factor of no judged supporting question is unknown, not 1
    assert scores.undefined["qps"] == "no supporting question has a valid verdict (Q3)"
    assert scores.values["qc"] == 0.5 and scores.notes["qc"] == "QC over 2 of 3 questions: no valid verdict for Q3"


def test_eps_and_f_over_the_judged_attributes_and_sentences():
    # Entity E2's verdict failed: its 2 attributes are neither kept nor missed; E1 keeps 1 of its 3.
    verdicts = ViewVerdicts(kept={"E1.A1": True}, failed={"E2": "not an item of this request"})
    judgments = SummaryVerdicts(views={"entities": verdicts}, sentence_faithful=[True, None, False, True])
    scores = score_summary(make_scaffold(1, 0, attributes_per_entity=(3, 2)), judgments, system="s", n_sentences=4)
    assert scores.values["eps"] == pytest.approx(1 / 3)
    assert scores.notes["eps"] == "EPS over 3 of 5 entity attributes: no valid verdict for E2.A1, E2.A2"
    assert scores.values["f"] == pytest.approx(2 / 3)
    assert scores.notes["f"] == "F over 3 of 4 sentences: no valid verdict for S2"


def test_system_means_count_the_summaries_over_judged_items_only():
    rows = [SummaryScores(doc_id=d, system="a", n_sentences=1, values={"fc": v}, undefined={}, notes=notes)
            for d, v, notes in (("d1", 0.5, {"fc": "FC over 3 of 4 facts: no valid verdict for F1"}), ("d2", 1.0, {}))]
    [a] = system_means(rows)
    assert (a.metrics["fc"].mean, a.metrics["fc"].n, a.metrics["fc"].excluded, a.metrics["fc"].partial) == (0.75, 2, 0, 1)


def test_ds_is_the_mean_of_the_four_axes():
    grades = {"faithfulness": 9, "completeness": 6, "understandability": 8, "hallucination": 10}
    scores = score_summary(make_scaffold(1, 0), SummaryVerdicts(direct_score=grades), system="s", n_sentences=1)
    assert scores.values["ds"] == pytest.approx(8.25)
    assert scores.values["ds_completeness"] == 6.0
    failed = score_summary(make_scaffold(1, 0), SummaryVerdicts(failures={"direct_score": "not valid JSON"}),
                           system="s", n_sentences=1)
    assert failed.values["ds"] is None and failed.undefined["ds"] == "direct score failed: not valid JSON"


ENGLISH_PAIRS = [
    ("The cat sat on the mat.", ["The cat was on the mat!"]),
    ("Alpha Corp opened a $50m factory in Denton, Texas, on Monday.", ["Alpha Corp's new Denton plant opened Monday."]),
    ("Revenue rose 3.5 percent; iPhone sales fell.", ["iPhone sales fell while revenue rose 3.5%.", "Sales fell."]),
    ("U.S. stocks closed higher at 5 p.m. on Friday", ["Stocks in the U.S. closed higher on Friday afternoon."]),
]


@pytest.mark.parametrize("candidate, references", ENGLISH_PAIRS)
def test_rouge_l_equals_the_rouge_score_package_on_english(candidate, references):
    from rouge_score import rouge_scorer

    package = rouge_scorer.RougeScorer(["rougeL"]).score_multi(references, candidate)["rougeL"].fmeasure
    assert rouge_l(candidate, references) == pytest.approx(package)
    assert package > 0


def test_rouge_l_scores_text_without_latin_letters():
    from rouge_score import rouge_scorer

    japanese, reference = "東京は日本の首都です。", "日本の首都は東京です。"
    assert rouge_scorer.RougeScorer(["rougeL"]).score(reference, japanese)["rougeL"].fmeasure == 0  # the package alone
    # 10 characters each; the longest common subsequence 日本の首都です has 7.
    assert rouge_l(japanese, [reference]) == pytest.approx(0.7)
    assert rouge_l("Они приехали в Москву.", ["Они приехали в Москву вчера."]) == pytest.approx(2 * 4 / 9)


def test_system_means_give_the_paired_mean_beside_the_mean_over_all_summaries():
    """One label, one mean: a system's mean over all its summaries, and its paired mean over the
    documents every system has a value for (the report's number), with why each was left out."""
    def row(doc: str, system: str, fc: float | None) -> SummaryScores:
        return SummaryScores(doc_id=doc, system=system, n_sentences=1, values={"fc": fc},
                             undefined={} if fc is not None else {"fc": "fact alignment failed: bad JSON"})

    rows = [row("d1", "a", 0.5), row("d2", "a", None), row("d1", "b", 0.25), row("d2", "b", 1.0), row("d3", "b", 0.5)]
    means = {s.system: s.metrics["fc"] for s in system_means(rows)}
    a, b = means["a"], means["b"]
    # over all summaries b leads (0.583 > 0.5); over the one document both have, a leads (0.5 > 0.25)
    assert (a.mean, a.n, a.excluded_reasons) == (0.5, 1, {"fact alignment failed: bad JSON": 1})
    assert b.mean == pytest.approx(1.75 / 3) and b.n == 3 and b.excluded == 0
    assert (a.paired_mean, a.paired_documents, b.paired_mean, b.paired_documents) == (0.5, 1, 0.25, 1)
    assert a.paired_left_out == {}  # a's one value is in its paired mean
    assert b.paired_left_out == {"no value for a (fact alignment failed: bad JSON)": 1, "no value for a (no summary)": 1}
    alone = system_means([row("d1", "a", 0.5), row("d2", "a", None)])[0].metrics["fc"]
    assert (alone.mean, alone.paired_mean, alone.paired_documents, alone.paired_left_out) == (0.5, 0.5, 1, {})


def test_fact_focus_with_a_kept_fact_whose_citation_was_not_read():
    """F1 kept, cited sentence 1; F2 kept, its citation reading failed (method version 16: the verdict stands). With
    sentence 2 aligned by no other fact, F2 could align it: undefined. With F1 citing both, exact (2 of 2)."""
    scaffold = make_scaffold(2, 0)
    uncited = ViewVerdicts(kept={"F1": True, "F2": True}, cited={"F1": [1], "F2": []}, uncited={"F2": "low mass"})
    scores = score_summary(scaffold, SummaryVerdicts(views={"facts": uncited}), system="s", n_sentences=2)
    assert scores.values["fc"] == 1.0 and scores.values["fact_focus"] is None
    assert scores.undefined["fact_focus"] == "no citation read for F2, which could align a sentence no judged fact aligns"
    covered = dataclasses.replace(uncited, cited={"F1": [1, 2], "F2": []})
    scores = score_summary(scaffold, SummaryVerdicts(views={"facts": covered}), system="s", n_sentences=2)
    assert scores.values["fact_focus"] == 1.0
    assert scores.notes["fact_focus"] == ("Fact Focus from 1 of 2 facts (no citation read for F2): exact, as they "
                                          "align every sentence")
