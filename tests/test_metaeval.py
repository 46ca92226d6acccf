"""Meta-evaluation on small files written here in the shape of the shared human-labelled data (the
tests never read the project's evaluation data folder), its statistics by hand, the built-in judge check, verdict
confidence and scaffold quality checks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold_local import cli
from scaffold_local.cli import app
from scaffold_local.data.loading import load_input
from scaffold_local.judging.quality import inspect
from scaffold_local.metaeval.agreement import binary_agreement, calibration, majority_of_others
from scaffold_local.method.scaffold import Scaffold
from scaffold_local.method.schemas import SchemaLimits
from scaffold_local.method.views.entities import Attribute, Entity
from scaffold_local.method.views.facts import Fact
from scaffold_local.runs.pipeline import Pipeline

from .helpers import FACTORY, LIBRARY, RESPONDER_CONFIG, write_jsonl

runner = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    monkeypatch.setattr(cli.console, "width", 250)
    monkeypatch.setattr(cli.err, "width", 250)


def eval_data(root: Path) -> Path:
    """A tiny evaluation-data folder in the shared shape: realsumm/, frank/, summeval/, summedits/, aggrefact_spans/."""
    realsumm = [
        {"doc_id": "factory", "document": FACTORY,
         "keyfacts": ["Alpha Corp opened a factory in Denton on Monday.", "The factory employs 200 local workers.",
                      "The plant cost 50 million dollars to build."],
         "summaries": [
             {"system": "a", "summary": "Alpha Corp opened a factory in Denton on Monday.",
              "human": {"scu_presence": [1, 0, 0], "litepyramid_recall": 1 / 3, "n_annotators": 3,
                        "scu_presence_per_annotator": [[1, 0, 0], [1, 0, 1], [1, 0, 0]]}},
             {"system": "b", "summary": "The factory employs 200 local workers. It cost 50 million dollars.",
              "human": {"scu_presence": [0, 1, 1], "litepyramid_recall": 2 / 3, "n_annotators": 3,
                        "scu_presence_per_annotator": [[0, 1, 1], [0, 1, 1], [1, 1, 0]]}}]},
        {"doc_id": "library", "document": LIBRARY,
         "keyfacts": ["The Oakvale library lends bicycles to members.", "The bicycles were donated by a cycling club."],
         "summaries": [
             {"system": "a", "summary": "The Oakvale library now lends bicycles to members.",
              "human": {"scu_presence": [1, 0], "litepyramid_recall": 0.5, "n_annotators": 3,
                        "scu_presence_per_annotator": [[1, 0], [1, 0], [1, 0]]}},
             {"system": "b", "summary": "A club gave the town some bikes.",
              "human": {"scu_presence": [0, 1], "litepyramid_recall": 0.5, "n_annotators": 3,
                        "scu_presence_per_annotator": [[0, 1], [0, 1], [0, 0]]}}]},
    ]
    frank = [{"doc_id": "factory", "document": FACTORY, "summaries": [
        {"system": "bart", "summary": "Alpha Corp opened a factory in Denton. It will export 900 panels to Mars.",
         "sentences": ["Alpha Corp opened a factory in Denton.", "It will export 900 panels to Mars."],
         "human": {"sentence_error_per_annotator": [[0, 1], [0, 1], [0, 0]], "sentence_error_majority": [0, 1],
                   "frank_summary_scores": {"Factuality": 0.5}}},
        {"system": "pgn", "summary": "The factory employs 200 local workers.",
         "sentences": ["The factory employs 200 local workers."],
         "human": {"sentence_error_per_annotator": [[0], [0], [0]], "sentence_error_majority": [0],
                   "frank_summary_scores": {"Factuality": 1.0}}}]},
        {"doc_id": "library", "document": LIBRARY, "summaries": [
            {"system": "bart", "summary": "The library lends boats to members.",
             "sentences": ["The library lends boats to members."],
             "human": {"sentence_error_per_annotator": [[1], [1], [1]], "sentence_error_majority": [1],
                       "frank_summary_scores": {"Factuality": 0.0}}}]}]
    summeval = [{"doc_id": d, "document": text, "reference": first, "summaries": [
        {"system": s, "summary": summary, "human": {f"expert_mean_{k}": v for k, v in zip(
            ("coherence", "consistency", "fluency", "relevance"), scores)}}
        for s, summary, scores in [("M1", first, (4, 5, 5, 4)), ("M2", "Something else entirely happened.", (2, 1, 4, 1)),
                                   ("M3", f"{first} More.", (3, 4, 4, 3))]]}
        for d, text, first in [("factory", FACTORY, "Alpha Corp opened a factory in Denton on Monday."),
                               ("library", LIBRARY, "The Oakvale library now lends bicycles to members.")]]

    def summary(text, consistent, edits=None):
        return {"system": "seed summary" if consistent else "LLM edit of seed summary", "summary": text,
                "human": {"label_consistent": int(consistent), "edit_types": edits}}

    summedits = [
        {"doc_id": "summedits-ectsum-0", "source_dataset": "SummEdits/ectsum", "document": FACTORY, "summaries": [
            summary("Alpha Corp opened a factory in Denton on Monday.", True),
            summary("The factory employs 900 foreign workers.", False, ["entity_modification"]),  # 3 of 5 words
            summary("Alpha Corp opened a factory in Denton on Friday.", False, ["entity_modification"])]},  # 5 of 6
        {"doc_id": "summedits-podcast-0", "source_dataset": "SummEdits/podcast", "document": LIBRARY, "summaries": [
            summary("The Oakvale library now lends bicycles to members.", True),
            summary("The library sells coffee to visitors.", False, ["hallucinated_fact_insertion"])]},
    ]

    def spanned(text, spans, types):
        return {"system": "BART", "summary": text,
                "human": {"is_consistent": int(not spans), "error_types": types, "annotated_error_spans": spans}}

    aggrefact = [
        {"doc_id": "CLIFF-cnndm-factory", "source_dataset": "CNN/DailyMail test", "document": FACTORY, "summaries": [
            spanned("Alpha Corp opened a factory in Denton on Monday.", [], []),
            spanned("Alpha Corp opened a factory in Denton. The factory employs 900 foreign workers.",
                    ["900 foreign"], ["extrinsic-NP"])]},
        {"doc_id": "Goyal21-xsum-library", "source_dataset": "XSum test", "document": LIBRARY, "summaries": [
            spanned("The Oakvale library now lends bicycles to members on Friday.", [["on Friday"]], ["extrinsic-NP"]),
            spanned("The library sells coffee to visitors.", ["tea"], ["extrinsic-predicate"]),  # a span found nowhere
            spanned("Each member may borrow a bicycle for seven days.", [], [])]},
    ]
    for name, rows in (("realsumm/realsumm.jsonl", realsumm), ("frank/frank_sentence_level.jsonl", frank),
                       ("summeval/summeval.jsonl", summeval), ("summedits/summedits.jsonl", summedits),
                       ("aggrefact_spans/aggrefact_spans.jsonl", aggrefact)):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(root / name, rows)
    return root


def test_majority_of_the_others_by_hand():
    # Annotators [[1,0],[1,1],[1,0]]: item 0 unanimous; item 1 split 0/1/0
    pairs, ties = majority_of_others([[1, 0], [1, 1], [1, 0]])
    # (item, held-out annotator's label, the others' majority); a0 and a2 held out on item 1 leave a 1-1 tie
    # among the others: no reference there, dropped and counted (never read as 0)
    assert pairs == [(0, 1, 1), (0, 1, 1), (1, 1, 0), (0, 1, 1)]
    assert ties == 2


def test_the_judge_is_scored_on_the_human_ceilings_references():
    """A judge that copies the majority of all annotators scores 1.0 against it, but not against the
    references the human ceiling uses (each annotator held out against the majority of the others),
    and on those it is scored on exactly the ceiling's (annotator, item) pairs, ties dropped alike."""
    from scaffold_local.metaeval.agreement import HumanReferences

    humans = HumanReferences()
    # d1: 3 annotators; item 0 unanimous present, items 1 and 2 split 2-1 absent: holding out one of
    # the two who agree leaves the others tied (4 ties), holding out the one who disagrees does not
    humans.add([[1, 0, 1], [1, 1, 0], [1, 0, 0]], majority=[1, 0, 0], group="d1")
    # d2: 4 annotators; item 0 splits 2-2 (the dataset's majority: 0), item 1 is 3-1 absent
    humans.add([[1, 0], [1, 0], [0, 0], [0, 1]], majority=[0, 0], group="d2")
    copier = [1, 0, 0, 0, 0]  # the majority of all annotators, item by item
    assert humans.against_all(copier)["accuracy"].value == 1.0
    assert humans.against_all(copier)["balanced_accuracy"].value == 1.0
    # References: d1 item 0 three times present, items 1 and 2 once absent each (4 tied dropped);
    # d2 item 0 absent twice (holding out a 1) and present twice (holding out a 0), item 1 absent 4 times.
    assert humans.ties == 4 and len(humans.reference) == 13
    judge = humans.against_others(copier)
    assert judge["accuracy"].value == pytest.approx(11 / 13)  # misses d2 item 0's two present references
    assert judge["balanced_accuracy"].value == pytest.approx((3 / 5 + 8 / 8) / 2)
    ceiling = humans.ceiling()
    # The annotators against the same 13 references: d1 3 of 5 agree, d2 3 of 8
    assert ceiling["accuracy"].value == pytest.approx(6 / 13)


def test_summary_level_correlation_pooled_and_per_document_and_system_level_on_shared_documents():
    """Within each document the scorer orders the summaries as people do, but documents differ in
    level: pooled over summaries the correlation is negative, the mean of per-document ones is 1.
    System means are taken over the documents every system has (d3 lacks C)."""
    import numpy as np
    from scipy import stats

    from scaffold_local.metaeval.correlation import correlation_table, spearman

    rows = [{"doc_id": d, "system": s, "x": x, "y": y} for d, s, x, y in [
        ("d1", "A", 1, 10), ("d1", "B", 2, 11), ("d1", "C", 3, 12),
        ("d2", "A", 4, 0), ("d2", "B", 5, 1), ("d2", "C", 6, 2),
        ("d3", "A", 10, 0), ("d3", "B", 0, 100), ("d3", "C", None, 5)]]
    table = {(r["level"], r["aggregation"]): r for r in correlation_table(rows, "x", "y", seed=0)}
    pooled = table["summary", "pooled over summaries"]
    x, y = [1, 2, 3, 4, 5, 6, 10, 0], [10, 11, 12, 0, 1, 2, 0, 100]
    assert pooled["spearman"] == pytest.approx(stats.spearmanr(x, y)[0]) and pooled["spearman"] < 0
    assert pooled["n"] == 8 and pooled["documents"] == 3
    assert pooled["spearman_low95"] <= pooled["spearman"] <= pooled["spearman_high95"]
    per_document = table["summary", "mean of per-document"]
    assert [per_document[k] for k in ("pearson", "spearman", "kendall")] == pytest.approx([1.0, 1.0, 1.0])
    assert per_document["documents"] == 2  # d3 has two scored summaries: no correlation of its own
    assert (per_document["spearman_low95"], per_document["spearman_high95"]) == pytest.approx((1.0, 1.0))
    shared = table["system", "over the documents every system has"]
    # A: (1+4)/2 against (10+0)/2, B: 3.5 / 6, C: 4.5 / 7 on d1 and d2
    assert shared["spearman"] == pytest.approx(1.0) and shared["n"] == 3 and shared["documents"] == 2
    # Kendall's tau with its interval at system level: three systems in the same order on both documents, so every
    # resample of the two documents orders them alike
    assert shared["kendall"] == pytest.approx(1.0) and (shared["kendall_low95"], shared["kendall_high95"]) == (1.0, 1.0)
    own = table["system", "over each system's own summaries"]
    # d3 counted for A and B only flips the order: A 5 / 3.33, B 2.33 / 37.3, C 4.5 / 7
    assert own["spearman"] == pytest.approx(-1.0) and own["documents"] == 3
    rng = np.random.default_rng(0)
    for _ in range(50):
        a, b = rng.integers(0, 4, 9).astype(float), rng.random(9)
        assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b)[0])  # ties ranked alike


def test_binary_agreement_by_hand():
    truth, predicted = [1, 1, 0, 0, 1, 0], [1, 0, 0, 0, 1, 1]
    result = binary_agreement(truth, predicted, ["d1", "d1", "d1", "d2", "d2", "d2"])
    # recall of present 2/3, specificity 2/3: balanced accuracy 2/3; precision 2/3; observed 4/6 = expected 0.5 + ...
    assert result["balanced_accuracy"].value == pytest.approx(2 / 3)
    assert result["precision_present"].value == pytest.approx(2 / 3) and result["recall_present"].value == pytest.approx(2 / 3)
    assert result["cohen_kappa"].value == pytest.approx((4 / 6 - 0.5) / 0.5)
    assert result["balanced_accuracy"].low <= 2 / 3 <= result["balanced_accuracy"].high


def test_binary_agreement_counts_give_sklearns_numbers_exactly_undefined_included():
    """The bootstrap's counted metrics against sklearn's scorers on random labels, small and one-sided
    samples included (where a measure is undefined, both say so)."""
    import warnings

    import numpy as np
    from sklearn import metrics

    from scaffold_local.metaeval.agreement import _BINARY_METRICS, _confusion

    def sklearn_value(name, t, p):
        scorer = {"balanced_accuracy": metrics.balanced_accuracy_score, "cohen_kappa": metrics.cohen_kappa_score,
                  "precision_present": lambda a, b: metrics.precision_score(a, b, zero_division=np.nan),
                  "recall_present": lambda a, b: metrics.recall_score(a, b, zero_division=np.nan),
                  "accuracy": metrics.accuracy_score}[name]
        if name == "balanced_accuracy" and len(set(t)) < 2:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = float(scorer(t, p))
        return None if np.isnan(value) else value

    rng = np.random.default_rng(0)
    undefined = 0
    for _ in range(400):
        size = int(rng.integers(1, 20))
        t, p = (rng.random(size) < rng.random()).astype(int), (rng.random(size) < rng.random()).astype(int)
        counts = _confusion(t.astype(bool), p.astype(bool))
        for name, metric in _BINARY_METRICS.items():
            expected = sklearn_value(name, t, p)
            assert metric(*counts) == expected, (name, t.tolist(), p.tolist())
            undefined += expected is None
    assert undefined > 20  # the one-sided cases were drawn
    with pytest.raises(ValueError, match="labels 0 and 1"):
        binary_agreement([0, 2], [0, 1], ["d1", "d2"])


def test_calibration_by_hand():
    truth = [1, 1, 0, 0, 1, 0, 1, 0]
    probability = [0.95, 0.85, 0.15, 0.05, 0.95, 0.15, 0.85, 0.05]
    result = calibration(truth, probability, ["d1", "d1", "d2", "d2", "d3", "d3", "d4", "d4"], seed=1)
    assert result.auroc.value == 1.0  # every present item ranks above every absent one
    # every resample of documents that holds both labels ranks them perfectly too
    assert (result.auroc.low, result.auroc.high) == (1.0, 1.0)
    # bins 0.0-0.1: p 0.05 x2, none present; 0.1-0.2: 0.15 x2, none; 0.8-0.9: 0.85 x2, all; 0.9-1.0: 0.95 x2, all
    assert result.ece == pytest.approx((2 * 0.05 + 2 * 0.15 + 2 * 0.15 + 2 * 0.05) / 8)
    assert [r["items"] for r in result.reliability] == [2, 2, 2, 2]
    assert result.held_out_balanced_accuracy == 1.0
    # on all documents, 0.85 and above separates perfectly; the threshold sits halfway to the next lower P
    assert result.threshold_all == pytest.approx((0.15 + 0.85) / 2)


def test_meta_eval_adapters_on_files_in_the_shared_shape(tmp_path):
    data = eval_data(tmp_path / "eval-data")
    out = tmp_path / "out"
    result = runner.invoke(app, ["meta-eval", "all", "-m", str(RESPONDER_CONFIG), "--data", str(data),
                                 "--store", str(tmp_path / "store"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "realsumm-alignment: 2 documents of both halves, 4 summaries" in result.output  # said before it runs
    alignment = json.loads((out / "realsumm-alignment.json").read_text())
    assert alignment["cost"]["estimates_said"][0].startswith("judging key facts: 4 requests to send; no rate measured")  # one per summary
    assert alignment["items"] == 10 and alignment["failed"] == 0
    sources = {r["source"] for r in alignment["tables"]["agreement"]}
    assert sources == {"human ceiling: annotator vs majority of the other annotators",
                       "judge vs majority of the other annotators", "judge vs majority of all annotators",
                       "word overlap >= 0.5 vs majority of the other annotators",
                       "word overlap >= 0.5 vs majority of all annotators"}
    ceiling = {r["measure"]: r for r in alignment["tables"]["agreement"] if r["source"].startswith("human")}
    # 3 annotators x 10 (summary, fact) items, less the 8 where the two others split 1-1
    assert ceiling["balanced_accuracy"]["items"] == 22 and ceiling["balanced_accuracy"]["tied_references_dropped"] == 8
    comparable = {r["measure"]: r for r in alignment["tables"]["agreement"]
                  if r["source"] == "judge vs majority of the other annotators"}
    assert comparable["balanced_accuracy"]["items"] == 22 and comparable["balanced_accuracy"]["tied_references_dropped"] == 8
    judge = {r["measure"]: r["value"] for r in alignment["tables"]["agreement"]
             if r["source"] == "judge vs majority of all annotators"}
    # The responder infers a fact when a summary sentence holds 60% of its content words: it finds
    # F1 in factory/a, F2 and F3 in factory/b, F1 in library/a and misses library/b's paraphrase.
    assert judge["recall_present"] == pytest.approx(4 / 5) and judge["precision_present"] == 1.0
    assert (out / "realsumm-alignment.agreement.csv").is_file() and (out / "realsumm-alignment.txt").is_file()

    frank = json.loads((out / "frank-faithfulness.json").read_text())
    assert frank["items"] == 4  # sentences
    frank_judge = {r["measure"]: r["value"] for r in frank["tables"]["agreement"]
                   if r["source"] == "judge vs majority of all annotators"}
    assert frank_judge["recall_present"] == 1.0  # both erroneous sentences caught ("present" = an error)

    extraction = json.loads((out / "realsumm-extraction.json").read_text())
    assert {r["rule"] for r in extraction["tables"]["coverage"]} == {"judge", "lexical"}
    # the responder labels each document's first two facts main; every extracted fact is a document sentence
    per_document = extraction["tables"]["per_document"]
    assert [r["extracted_main"] for r in per_document] == [2, 2]
    main_matched = next(r for r in extraction["tables"]["coverage"]
                        if r["measure"] == "extracted main facts matching a human fact")
    assert main_matched["value"] == pytest.approx(sum(r["matched_main"] for r in per_document) / 4)
    summeval = json.loads((out / "summeval-correlation.json").read_text())
    assert summeval["items"] == 6 and {(r["level"], r["aggregation"]) for r in summeval["tables"]["correlation"]} == {
        ("summary", "pooled over summaries"), ("summary", "mean of per-document"),
        ("system", "over the documents every system has"), ("system", "over each system's own summaries")}
    # ROUGE-L against the reference orders the systems M1 (the reference itself) > M3 > M2, as relevance does,
    # in both documents.
    lexical = {r["aggregation"]: r for r in summeval["tables"]["correlation"] if (r["metric"], r["human"]) == ("rouge_l", "relevance")}
    assert lexical["over the documents every system has"]["spearman"] == pytest.approx(1.0)
    assert lexical["over the documents every system has"]["n"] == 3
    assert lexical["mean of per-document"]["spearman"] == pytest.approx(1.0)
    assert lexical["mean of per-document"]["documents"] == 2
    # Word overlap in the judge's place. FC: M1 and M3 hold the first extracted fact of 4 scored (factory: its
    # byline is "other") and of 3 (library); M2 none. F: M1's sentence is the document's own; M3's "More." has no
    # content word the document holds (1 of 2 supported); M2's words are not in the document.
    by_word_overlap = {(r["doc_id"], r["system"]): (r["lexical_fc"], r["lexical_f"])
                       for r in summeval["tables"]["per_summary"]}
    assert by_word_overlap == {("factory", "M1"): (0.25, 1.0), ("factory", "M2"): (0.0, 0.0), ("factory", "M3"): (0.25, 0.5),
                               ("library", "M1"): (pytest.approx(1 / 3), 1.0), ("library", "M2"): (0.0, 0.0),
                               ("library", "M3"): (pytest.approx(1 / 3), 0.5)}
    assert "lexical_f with consistency: Spearman summary-level pooled over summaries" in result.output
    assert "vs the majority of the other annotators (the human ceiling's references" in result.output
    assert "rouge_l with relevance: Spearman summary-level pooled over summaries" in result.output
    assert "; summary-level mean of per-document 1.000 [1.000, 1.000] (6 summaries, 2 documents);" in result.output

    missing = runner.invoke(app, ["meta-eval", "frank", "-m", str(RESPONDER_CONFIG), "--data", str(tmp_path / "nowhere"),
                                  "--store", str(tmp_path / "store")])
    assert missing.exit_code == 2 and "frank_sentence_level.jsonl not found" in missing.output


def test_seeded_sampling_by_document(tmp_path):
    from scaffold_local.metaeval.human_labels import load

    data = eval_data(tmp_path)
    one = load(data, "realsumm", limit=1, seed=3)
    assert len(one) == 1 and one == load(data, "realsumm", limit=1, seed=3)
    assert len(load(data, "realsumm")) == 2


def test_dev_and_test_splits_never_share_a_document_and_summaries_are_drawn_per_document(tmp_path):
    from scaffold_local.metaeval.human_labels import EvalDataError, load, split_of

    root = tmp_path / "data"
    documents = [{"doc_id": f"doc{i}", "document": "x.", "keyfacts": ["x"],
                  "summaries": [{"system": f"s{j}", "summary": "x.", "human": {"scu_presence": [1], "litepyramid_recall": 1.0}}
                                for j in range(6)]} for i in range(40)]
    (root / "realsumm").mkdir(parents=True)
    write_jsonl(root / "realsumm" / "realsumm.jsonl", documents)
    dev = {d["doc_id"] for d in load(root, "realsumm", split="dev")}
    test = {d["doc_id"] for d in load(root, "realsumm", split="test")}
    assert dev and test and not dev & test and dev | test == {d["doc_id"] for d in documents}
    assert all(split_of(d) == "dev" for d in dev)  # fixed by the id: the same whatever the sample
    for seed in range(5):
        drawn = load(root, "realsumm", limit=5, seed=seed, split="test", per_document=2)
        assert len(drawn) == 5 and {d["doc_id"] for d in drawn} <= test
        for d in drawn:
            systems = [s["system"] for s in d["summaries"]]
            assert len(systems) == 2 and systems == sorted(systems)  # drawn, kept in their order
    assert load(root, "realsumm", limit=5, seed=1, split="test", per_document=2) == \
        load(root, "realsumm", limit=5, seed=1, split="test", per_document=2)
    with pytest.raises(EvalDataError, match="unknown split 'train'"):
        load(root, "realsumm", split="train")


def test_check_judge_on_the_responder_and_the_first_use_hint(small_input, tmp_path):
    store = tmp_path / "store"
    first = runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store)])
    assert "first run with judge responder in this store" in first.output and "check-judge" in first.output
    again = runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store)])
    assert "first run with judge" not in again.output
    result = runner.invoke(app, ["check-judge", "-m", str(RESPONDER_CONFIG), "--store", str(store)])
    assert result.exit_code == 0, result.output
    saved = json.loads(next((store / "judge-checks").glob("responder-*-method-v2.json")).read_text())
    assert saved["items"] == 72 and saved["failed"] == 0 and saved["auroc"] is None  # no P(kept) asked for
    # Word overlap keeps every verbatim fact, drops dropped ones, misses paraphrases and is fooled by
    # contradictions (the cases are built for it): 20 of 37 present, 17 of 35 absent found.
    assert saved["overlap_balanced_accuracy"] == pytest.approx((20 / 37 + 17 / 35) / 2)
    assert saved["kept_rate"]["word overlap"] == {"verbatim": 1.0, "paraphrased": 1 / 18, "dropped": 0.0,
                                                   "contradicted": 1.0}
    # One item per request, with P(kept): the same verdicts (the responder's rules are per item), and the
    # ranking of P(kept) is reported beside them; each method version keeps its own record.
    per_item = runner.invoke(app, ["check-judge", "-m", str(RESPONDER_CONFIG), "--store", str(store),
                                   "--method-version", "5", "--verdict-confidence"])
    assert per_item.exit_code == 0, per_item.output
    v5 = json.loads(next((store / "judge-checks").glob("responder-*-method-v5.json")).read_text())
    assert v5["judge_balanced_accuracy"] == saved["judge_balanced_accuracy"] and 0.5 < v5["auroc"] <= 1
    assert "AUROC" in per_item.output and "method version 5" in per_item.output


def test_verdict_confidence_and_weighted_verdicts(responder_config, small_input, tmp_path):
    confident = responder_config.model_copy(update={"verdict_confidence": True})
    assert confident.fingerprint() == responder_config.fingerprint()  # the requests carry it, not the judge
    # Version 4: the verdict first, so P(kept) is a confidence (under version 2 weighting is refused).
    plain = Pipeline(responder_config, tmp_path / "store", method=4).score(load_input(small_input))
    weighted = Pipeline(responder_config, tmp_path / "store", method=4, weighted_verdicts=True).score(
        load_input(small_input))
    assert weighted.run_dir != plain.run_dir
    from scaffold_local import runs

    records = runs.load(weighted.run_dir).records_for("factory", "details")
    facts = records["facts"]
    assert facts.confidence is not None and set(facts.confidence) == {"F1", "F2", "F3", "F4", "F5"}
    for item, verdict in facts.parsed.items():  # P(kept) sides with the verdict
        assert (facts.confidence[item] >= 0.5) == verdict["inferred"]
    scores = {(s.doc_id, s.system): s.values for s in weighted.summaries}
    # FC counts each main or supporting fact (F1..F4; F5 is "other") by its probability.
    assert scores["factory", "details"]["fc"] == pytest.approx(sum(facts.confidence[f"F{i}"] for i in range(1, 5)) / 4)
    assert {(s.doc_id, s.system): s.values["fc"] for s in plain.summaries}["factory", "details"] == 0.75


def test_verdict_confidence_is_read_where_the_verdict_is_decided():
    """Hand-made token alternatives in the shapes engines give: BPE pieces that straddle the
    decision, a grammar's masked -inf, and a side missing from the top alternatives."""
    import math

    from scaffold_local.backends.protocol import TokenAlternatives as T
    from scaffold_local.judging.confidence import verdict_confidence

    text = '{"F1":{"sentence_ids":[2],"inferred":true},"F2":{"sentence_ids":[],"inferred":false}}'
    pieces = [T(text='{"F1":{"sentence_ids', top={}), T(text='":[', top={}),
              # F1 decided here: "2" and "1" (kept, 0.3 + 0.1) against "]" (not kept, 0.2); " " says nothing
              T(text="2", top={"2": math.log(0.3), "1": math.log(0.1), "],": math.log(0.2), " ": math.log(0.4)}),
              T(text='],"inferred":', top={}),
              T(text="true", top={"true": 0.0, "false": -math.inf}),  # forced by the grammar after evidence
              T(text='},"F2":{"sentence_ids', top={}),
              # F2 decided inside a piece that starts before the decision: '":[]' (not kept, 0.5) vs
              # '":[1' (kept, 0.25); '":[' alone ends at the decision and decides on a token never generated
              T(text='":[]', top={'":[]': math.log(0.5), '":[1': math.log(0.25), '":[': math.log(0.25)}),
              T(text=',"inferred":', top={}),
              T(text="false", top={"false": math.log(0.9), "tr": math.log(0.05)}),
              T(text="}}", top={})]
    assert "".join(p.text for p in pieces) == text
    decided_by_evidence = verdict_confidence(text, pieces, "inferred", evidence_decides=True)
    # F2: '":[' (0.25) could move P(kept) anywhere in [0.25, 0.5], so none is offered (tests/test_confidence.py).
    assert decided_by_evidence == pytest.approx({"F1": 0.4 / 0.6})
    # Read at the words instead (method v1): F1's "false" was masked, so the word was forced, not decided.
    by_word = verdict_confidence(text, pieces, "inferred", evidence_decides=False)
    assert by_word == pytest.approx({"F2": 0.05 / 0.95})


def test_scaffold_quality_checks_without_the_judge():
    limits = SchemaLimits(statement_chars=40)
    scaffold = Scaffold(
        key="k", doc_id="d", document_sha256="0" * 64,
        facts=(Fact(id="F1", text="Alpha Corp opened a factory in Denton.", label="main point"),
               Fact(id="F2", text="alpha corp opened the factory in denton", label="supporting detail"),
               Fact(id="F3", text="x" * 40, label="other")),
        questions=(), entities=(Entity(id="E1", name="Alpha", kind="org", attributes=(
            Attribute(id="E1.A1", text="Alpha opened a factory.", label="main point"),)),
            Entity(id="E2", name="Denton", kind="other", attributes=(
                Attribute(id="E2.A1", text="Alpha opened a factory.", label="main point"),))))
    quality = inspect(scaffold, limits)
    assert quality.near_duplicates == [("F1", "F2", 1.0)]  # attributes of two entities may repeat a fact
    assert quality.at_length_bound == ["F3"]
    assert quality.labels["facts"] == {"main point": 1, "supporting detail": 1, "other": 1}
    assert quality.unsupported is None and "F1~F2" in quality.describe()


@pytest.mark.parametrize("version", [[], ["--method-version", "7"]], ids=["default", "v7"])
def test_extract_check_asks_the_judge_which_facts_the_source_supports(tmp_path, version):
    rows = [{"doc_id": "factory", "document": FACTORY, "system": "s", "summary": "A factory opened."}]
    result = runner.invoke(app, ["extract", str(write_jsonl(tmp_path / "in.jsonl", rows)), "-m", str(RESPONDER_CONFIG),
                                 "--store", str(tmp_path / "store"), "--check", *version])
    assert result.exit_code == 0, result.output
    assert "factory: main/supporting/other facts 2/2/1" in result.output
    assert "unsupported by the source: none" in result.output  # every fact is a sentence of the document
    assert list((tmp_path / "store" / "scaffolds").rglob("*.quality.json"))


def test_compact_verdicts_of_v3_score_as_v2_and_carry_confidence(responder_config, small_input, tmp_path):
    """v3 changes the verdicts' shape, not their meaning: the responder's verdicts give v2's scores
    and P(kept) is read where v3 decides the verdict (the evidence list's first character)."""
    from scaffold_local import runs

    v2 = Pipeline(responder_config, tmp_path / "store", method=2).score(load_input(small_input))
    v3 = Pipeline(responder_config, tmp_path / "store", method=3, weighted_verdicts=True).score(load_input(small_input))
    plain_v3 = Pipeline(responder_config, tmp_path / "store", method=3).score(load_input(small_input))
    assert [s.values for s in plain_v3.summaries] == [s.values for s in v2.summaries]
    tokens = lambda outcome: outcome.usage.judgments.completion_tokens  # noqa: E731
    assert tokens(plain_v3) < 0.8 * tokens(v2)
    facts = runs.load(v3.run_dir).records_for("factory", "details")["facts"]
    assert facts.parsed["F5"] == {"ids": []} and set(facts.confidence) == {"F1", "F2", "F3", "F4", "F5"}
    for item, verdict in facts.parsed.items():
        assert (facts.confidence[item] >= 0.5) == bool(verdict["ids"])


def test_realsumm_counts_the_summaries_each_rule_leaves_out(tmp_path):
    """Issue 18: one summary's fact output has an id the scaffold lacks (every fact still judged), one
    has a bad verdict for fact F2, one is prose. Before, each left its whole summary out (3 of 4); now
    only the prose does (1), and F2 alone is a failed item."""
    from scaffold_local.backends.protocol import Result
    from scaffold_local.backends.responder import ResponderBackend
    from scaffold_local.judging.config import ModelConfig
    from scaffold_local.metaeval import realsumm
    from scaffold_local.metaeval.human_labels import load

    def unknown_id(text):
        value = json.loads(text)
        return json.dumps({**value, "F9": value["F1"]})

    def bad_f2(text):
        value = json.loads(text)
        return json.dumps({**value, "F2": {**value["F2"], "inferred": "yes"}})

    edits = {"factory/a/facts": unknown_id, "factory/b/facts": bad_f2, "library/b/facts": lambda text: "All facts."}

    class ThreeBadOutputs(ResponderBackend):
        def generate(self, requests):
            return [Result(id=r.id, text=edits[r.id](result.text), finish_reason="stop") if r.id in edits else result
                    for r, result in zip(requests, super().generate(requests))]

    docs = load(eval_data(tmp_path / "eval-data"), "realsumm")
    pipeline = Pipeline(ModelConfig.load(str(RESPONDER_CONFIG)), tmp_path / "store", backend_factory=ThreeBadOutputs)
    result = realsumm.alignment(pipeline, docs)
    assert result.tables["summaries_left_out"] == [
        {"rule": "any failed item leaves the summary out (the rule before items were judged one by one)", "summaries": 3, "of": 4},
        {"rule": "only a summary without one valid fact verdict is left out", "summaries": 1, "of": 4}]
    assert (result.items, result.failed) == (10 - 1 - 2, 1 + 2)  # F2 of factory/b; both facts of library/b
    rows = {(r["doc_id"], r["system"]): r for r in result.tables["fc_per_summary"]}
    assert set(rows) == {("factory", "a"), ("factory", "b"), ("library", "a")}
    assert rows[("factory", "b")]["judge_fc"] == 0.5  # over its 2 judged facts: F1 missed, F3 inferred
    assert any("summaries left out" in line and "3 of 4" in line and "1 of 4" in line for line in result.summary)


def test_v3_reads_a_sentence_cited_twice_once_and_v2_refuses_it():
    """No grammar engine enforces uniqueItems, and small judges pad cited lists with repeats. Under v2
    the verdict that cites a sentence twice fails alone; the other verdict counts."""
    from scaffold_local.backends.protocol import Result
    from scaffold_local.data.inputs import Candidate, Document
    from scaffold_local.judging.config import ModelConfig
    from scaffold_local.judging.judge import Judge
    from scaffold_local.method.versions import method_version

    from .helpers import RESPONDER_CONFIG

    scaffold = Scaffold(key="k", doc_id="d", document_sha256="0" * 64, questions=None, entities=None,
                        facts=(Fact(id="F1", text="a", label="main point"), Fact(id="F2", text="b", label="main point")))
    document = Document(doc_id="d", text="A. B.", sha256="0" * 64)
    candidate = Candidate(record=1, doc_id="d", system="s", summary="One. Two. Three.")
    cases = ((3, '{"F1":{"ids":[2,1,2],"why":"x"},"F2":{"ids":[]}}', {"F1": {"ids": [2, 1], "why": "x"}, "F2": {"ids": []}}, None),
             (2, '{"F1":{"justification":"x","sentence_ids":[2,1,2],"inferred":true},'
                 '"F2":{"justification":"y","sentence_ids":[],"inferred":false}}',
              {"F2": {"justification": "y", "sentence_ids": [], "inferred": False}}, "F1: sentence_ids: duplicate ids"))
    for version, text, parsed, error in cases:
        judge = Judge(ModelConfig.load(str(RESPONDER_CONFIG)), method_version(version))
        planned = next(p for p in judge.plan(scaffold, document, candidate) if p.task == "align_facts")
        record = judge.record(planned, Result(id=planned.request.id, text=text, finish_reason="stop"))
        assert record.parsed == parsed and record.text == text
        assert (error is None) == (record.validation_error is None) and (error or "") in (record.validation_error or "")


def test_check_judge_on_cases_of_ones_own_is_saved_apart_with_every_item(tmp_path):
    cases = tmp_path / "cases.jsonl"
    case = {"doc_id": "pool", "document": "The town pool reopens on Monday. Entry will cost four dollars.",
            "facts": ["The town pool reopens on Monday.", "Entry will cost four dollars."],
            "summaries": [
                {"system": "copy", "summary": "The town pool reopens on Monday.", "presence": ["verbatim", "dropped"]},
                {"system": "twisted", "summary": "Swimmers can return at the start of the week. Entry will cost forty dollars.",
                 "presence": ["paraphrased", "contradicted"]}]}
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    store = tmp_path / "store"
    result = runner.invoke(app, ["check-judge", "-m", str(RESPONDER_CONFIG), "--store", str(store), "--cases", str(cases)])
    assert result.exit_code == 0, result.output
    (saved_path,) = (store / "judge-checks").glob("responder-*-method-v2-cases-*.json")
    saved = json.loads(saved_path.read_text())
    assert not list((store / "judge-checks").glob("responder-*-method-v2.json"))  # the built-in check's record: untouched
    assert saved["items"] == 4 and str(cases) in saved["cases"] and str(cases) in result.output
    assert [(i["system"], i["fact"], i["kind"]) for i in saved["items_checked"]] == [
        ("copy", 1, "verbatim"), ("copy", 2, "dropped"), ("twisted", 1, "paraphrased"), ("twisted", 2, "contradicted")]
    # Word overlap: the verbatim and the contradicted fact present (shared words), the others absent.
    assert saved["kept_rate"]["word overlap"] == {"verbatim": 1.0, "paraphrased": 0.0, "dropped": 0.0, "contradicted": 1.0}

    good = json.dumps(case)
    case["summaries"][1]["presence"] = ["paraphrased"]  # one label for two facts
    cases.write_text(good + "\n\n" + json.dumps(case) + "\n", encoding="utf-8")
    bad = runner.invoke(app, ["check-judge", "-m", str(RESPONDER_CONFIG), "--store", str(store), "--cases", str(cases)])
    assert bad.exit_code == 2 and "line 3" in bad.output
    assert "summary 'twisted': 1 presence labels for 2 facts" in bad.output


def _rewrite(path: Path, change) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(change(row)) + "\n" for row in rows))


@pytest.mark.parametrize("one", ["no list per annotator", "a list of one annotator"])
def test_meta_eval_on_ones_own_labels_by_one_annotator_has_no_ceiling_and_says_so(tmp_path, one):
    data = eval_data(tmp_path / "eval-data")

    def single(doc):
        for summary in doc["summaries"]:
            human = summary["human"]
            if one == "no list per annotator":
                human.pop("scu_presence_per_annotator")
            else:
                human["scu_presence_per_annotator"] = [human["scu_presence"]]
        return doc

    _rewrite(data / "realsumm" / "realsumm.jsonl", single)
    out = tmp_path / "out"
    result = runner.invoke(app, ["meta-eval", "realsumm-alignment", "-m", str(RESPONDER_CONFIG), "--data", str(data),
                                 "--store", str(tmp_path / "store"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    alignment = json.loads((out / "realsumm-alignment.json").read_text())
    sources = {r["source"] for r in alignment["tables"]["agreement"]}
    assert sources == {"judge vs majority of all annotators", "word overlap >= 0.5 vs majority of all annotators"}
    assert "human ceiling not computable (one annotator per item" in " ".join(result.output.split())
    judge = {r["measure"]: r["value"] for r in alignment["tables"]["agreement"]
             if r["source"] == "judge vs majority of all annotators"}
    assert judge["recall_present"] == pytest.approx(4 / 5)  # as with three annotators: the labels are the same


@pytest.mark.parametrize(("change", "said"), [
    (lambda doc: {k: v for k, v in doc.items() if k != "keyfacts"}, "line 1: keyfacts: Field required"),
    (lambda doc: {**doc, "summaries": [{**s, "human": {**s["human"], "scu_presence": [1]}} for s in doc["summaries"]]},
     "line 1: summaries.0.human: a presence label per key fact"),
    (lambda doc: {**doc, "summaries": [{**s, "human": {**s["human"], "scu_presence": [2, 0, 0][:len(s["human"]["scu_presence"])]}}
                                       for s in doc["summaries"]]},
     "line 1: summaries.0.human.scu_presence.0: Input should be less than or equal to 1"),
])
def test_meta_eval_names_the_line_and_field_of_bad_labels(tmp_path, change, said):
    data = eval_data(tmp_path / "eval-data")
    _rewrite(data / "realsumm" / "realsumm.jsonl", change)
    result = runner.invoke(app, ["meta-eval", "realsumm-alignment", "-m", str(RESPONDER_CONFIG), "--data", str(data),
                                 "--store", str(tmp_path / "store"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and said in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()
    (data / "realsumm" / "realsumm.jsonl").write_text("\n")
    empty = runner.invoke(app, ["meta-eval", "realsumm-alignment", "-m", str(RESPONDER_CONFIG), "--data", str(data),
                                "--store", str(tmp_path / "store")])
    assert empty.exit_code == 2 and "holds no documents" in empty.output


def test_pairwise_orders_against_peoples_by_hand(responder_config, tmp_path):
    from scaffold_local.backends.responder_rules import pair_preference
    from scaffold_local.metaeval.pairs import PAIR_SCORERS, VALUE_SCORERS
    from scaffold_local.metaeval.tasks import run_task
    from scaffold_local.method.text import normalize

    data = eval_data(tmp_path / "eval-data")
    # the factory's summaries in the order b, a: people's pairs follow the data's order, the preferences come
    # in the systems' sorted order, and each pair must find them turned round
    realsumm = [json.loads(line) for line in (data / "realsumm/realsumm.jsonl").read_text().splitlines()]
    realsumm[0]["summaries"].reverse()
    write_jsonl(data / "realsumm/realsumm.jsonl", realsumm)
    pipeline = Pipeline(responder_config, tmp_path / "store")
    try:
        result = run_task(pipeline, "realsumm-pairs", data)
    finally:
        pipeline.close()
    # factory: people's LitePyramid recall puts b (2/3) above a (1/3); library's pair is a tie for people: left out
    [row] = result.tables["pairs"]
    assert (row["doc_id"], row["a"], row["b"], row["people"]) == ("factory", "b", "a", 1.0)
    # word overlap with the human key facts: a holds F1 only, b holds F2 and F3 (4 of F3's 6 content words)
    assert row["word_overlap_fc"] == 1.0
    assert row["rouge_l"] is None  # the data has no reference
    # the holistic baseline as the test double's rule answers it, both orders averaged
    summaries = {"a": "Alpha Corp opened a factory in Denton on Monday.",
                 "b": "The factory employs 200 local workers. It cost 50 million dollars."}
    a_first = pair_preference(normalize(FACTORY), summaries["a"], summaries["b"])
    b_first = pair_preference(normalize(FACTORY), summaries["b"], summaries["a"])
    p_a = (a_first["A"] + b_first["B"]) / 2 + (a_first["tie"] + b_first["tie"]) / 4
    assert row["holistic pairwise"] == (0.5 if p_a == 0.5 else float(p_a < 0.5))  # people prefer b
    shares = {r["scorer"]: r for r in result.tables["pair_agreement"]}
    assert set(shares) == {*PAIR_SCORERS, *VALUE_SCORERS}
    assert shares["word_overlap_fc"]["share"] == 1.0 and shares["word_overlap_fc"]["pairs"] == 1
    assert shares["rouge_l"]["pairs"] == 0 and shares["rouge_l"]["share"] is None
    for scorer in PAIR_SCORERS:  # every kind of preference found for the pair
        assert row[scorer] in (0.0, 0.5, 1.0)


def test_summedits_balanced_accuracy_per_domain_and_per_edit_type_by_hand(responder_config, tmp_path):
    from scaffold_local.metaeval.tasks import run_task

    root = eval_data(tmp_path / "eval-data")
    pipeline = Pipeline(responder_config, tmp_path / "store")
    try:
        result = run_task(pipeline, "summedits", root)
    finally:
        pipeline.close()
    # the test double calls a sentence unsupported below 80% of its content words in the document: it catches
    # the 900 foreign workers and the coffee, and misses Friday (5 of 6 words), as word overlap does
    assert [(r["inconsistent"], r["judge"]) for r in result.tables["per_summary"]] == [(0, 0), (1, 1), (1, 0), (0, 0), (1, 1)]
    balanced = {r["source"]: r["value"] for r in result.tables["agreement"] if r["measure"] == "balanced_accuracy"}
    assert balanced["judge (ectsum)"] == pytest.approx((1 / 2 + 1) / 2) and balanced["judge (podcast)"] == 1.0
    assert "mean over 2 domains, judge: balanced accuracy 0.875" in result.summary
    caught = {r["type"]: r["judge_caught"] for r in result.tables["edit_types"]}
    assert caught == {"entity_modification": 0.5, "hallucinated_fact_insertion": 1.0}


def test_a_summarys_p_consistent_is_its_least_supported_sentences_where_the_check_is_read(responder_config, tmp_path):
    from scaffold_local.metaeval.tasks import run_task

    root = eval_data(tmp_path / "eval-data")
    pipeline = Pipeline(responder_config, tmp_path / "store", method=10)  # the sentence check read: P(yes)
    try:
        result, spans = run_task(pipeline, "summedits", root), run_task(pipeline, "aggrefact", root)
    finally:
        pipeline.close()
    rows = result.tables["per_summary"]
    # the test double's P(yes) is a logistic of the sentence's word overlap; each summary here is one sentence
    for row in rows:
        assert row["judge_p_consistent"] == pytest.approx(1 / (1 + math.exp(-12 * (row["least_overlap"] - 0.8))))
    assert [round(r["least_overlap"], 3) for r in rows] == [1.0, 0.6, round(5 / 6, 3), 1.0, 0.25]  # content words found
    (confidence,) = result.tables["confidence"]
    assert confidence["items"] == 5 and confidence["auroc"] == 1.0  # both consistent summaries rank above the rest
    assert any(line.startswith("verdict confidence (5 of 5 items have P(consistent))") for line in result.summary)
    assert spans.tables["confidence"][0]["items"] == len(spans.tables["per_summary"]) == 5  # AggreFact's the same way


def test_summedits_entity_edits_pair_each_consistent_summary_with_the_entity_edited_ones_by_hand(responder_config,
                                                                                                 tmp_path):
    """The responder's scaffold of FACTORY has the entities Denton (A1: the first sentence, A2: "Published by the
    Denton Daily."), Monday (A1: the first sentence) and Denton Daily (A1: "Published ..."); an attribute's P is a
    logistic of its best word overlap (0.5 at 60%) where the summary names the entity, else 0.02. The podcast
    document has no entity edit: it is left out."""
    from scaffold_local.metaeval.summedits import best_of
    from scaffold_local.metaeval.tasks import run_task

    root = eval_data(tmp_path / "eval-data")
    pipeline = Pipeline(responder_config, tmp_path / "store", method=12)  # every entity attribute read: its P
    try:
        result = run_task(pipeline, "summedits-entities", root)
    finally:
        pipeline.close()

    def p(overlap):
        return 1 / (1 + math.exp(-12 * (overlap - 0.6)))

    rows = result.tables["per_summary"]
    assert [(r["system"], r["edited"]) for r in rows] == [("seed summary #1", 0), ("LLM edit of seed summary #2", 1),
                                                          ("LLM edit of seed summary #3", 1)]
    # the seed keeps Denton's and Monday's first attributes: 2 of 4; the 900 workers name no entity: 0; the Friday
    # edit names no Monday and keeps Denton's first attribute (5 of its 6 words): 1 of 4
    assert [r["judge_eps"] for r in rows] == [0.5, 0.0, 0.25]
    assert [r["weighted_eps"] for r in rows] == pytest.approx([(2 * p(1) + p(1 / 3) + 0.02) / 4, 0.02,
                                                               (p(5 / 6) + p(1 / 3) + 0.02 + 0.02) / 4])
    # word overlap keeps Monday's attribute in the Friday edit too (5 of its 6 words): a tie with the seed
    assert [r["word_overlap_eps"] for r in rows] == [0.5, 0.0, 0.5]
    paired = {r["scorer"]: r for r in result.tables["paired"]}
    assert (paired["judge_eps"]["value"], paired["judge_eps"]["pairs"]) == (1.0, 2)
    assert paired["word_overlap_eps"]["value"] == 0.75  # one pair won, one tied
    assert paired["judge_eps at P >= 0.95"]["value"] == 1.0  # Denton's first attribute in the seed: p(1) = 0.992
    assert best_of([{"threshold": t, "value": v} for t, v in [(0.1, 0.6), (0.2, 0.8), (0.3, 0.8), (0.4, 0.8), (0.5, 0.7)]]) == 0.3
    assert (result.documents, result.items, result.failed) == (2, 3, 0)
    # where each edit touches an attribute: the 900 workers drop "Alpha Corp opened ... Denton ... Monday", which every
    # attribute holds (Denton Daily's in its name); Friday drops "Monday", which Denton's first attribute and Monday's hold
    touched = result.tables["touched"]
    assert [(r["system"][-2:], r["attribute"]) for r in touched] == [
        ("#2", "E1.A1"), ("#2", "E1.A2"), ("#2", "E2.A1"), ("#2", "E3.A1"), ("#3", "E1.A1"), ("#3", "E2.A1")]
    assert [r["fall"] for r in touched] == pytest.approx([p(1) - 0.02, p(1 / 3) - 0.02, p(1) - 0.02, 0.0,
                                                          p(1) - p(5 / 6), p(1) - 0.02])
    assert any(line.startswith("edits that touch an attribute (it holds a word only the most similar consistent summary "
                               "has): 2 of 2; P(kept) falls on 5 of the 6 attribute readings they touch") and
               line.endswith("move by a median of 0.000") for line in result.summary)  # Friday leaves the Daily's alone

    nine = Pipeline(responder_config, tmp_path / "store", method=10)  # entity verdicts written: no P, no threshold
    try:
        written = run_task(nine, "summedits-entities", root)
    finally:
        nine.close()
    assert [r["judge_eps"] for r in written.tables["per_summary"]] == [0.5, 0.0, 0.25]
    assert all(r["weighted_eps"] is None for r in written.tables["per_summary"])
    assert any(line.startswith("no threshold compared: method version 10") for line in written.summary)


def test_aggrefact_error_spans_per_source_per_sentence_and_per_error_type_by_hand(responder_config, tmp_path):
    from scaffold_local.metaeval.tasks import run_task

    root = eval_data(tmp_path / "eval-data")
    pipeline = Pipeline(responder_config, tmp_path / "store")
    try:
        result = run_task(pipeline, "aggrefact", root)
    finally:
        pipeline.close()
    # the test double flags a sentence below 80% of its content words in the document: it catches the 900 foreign
    # workers and the coffee, and misses Friday
    assert [(r["source"], r["inconsistent"], r["judge"]) for r in result.tables["per_summary"]] == [
        ("CNN/DM", 0, 0), ("CNN/DM", 1, 1), ("XSum", 1, 0), ("XSum", 1, 1), ("XSum", 0, 0)]
    balanced = {r["source"]: r["value"] for r in result.tables["agreement"] if r["measure"] == "balanced_accuracy"}
    assert balanced["judge (CNN/DM)"] == 1.0
    assert balanced["judge (XSum)"] == pytest.approx((1 / 2 + 1) / 2)
    assert balanced["judge (both sources)"] == pytest.approx((2 / 3 + 1) / 2)
    # per sentence: [0] [0, 1] [1] [0] against the judge's [0] [0, 1] [0] [0]; the coffee's span is in no sentence
    assert balanced["judge, per sentence"] == pytest.approx((1 / 2 + 1) / 2)
    [per_sentence] = [r for r in result.tables["agreement"]
                      if r["source"] == "judge, per sentence" and r["measure"] == "recall_present"]
    assert (per_sentence["value"], per_sentence["items"]) == (0.5, 5)
    assert any(line.endswith("(left out of the sentence level): 1") for line in result.summary)
    caught = {r["type"]: r["judge_caught"] for r in result.tables["error_types"]}
    assert caught == {"extrinsic-NP": 0.5, "extrinsic-predicate": 1.0}


def test_error_spans_are_found_in_sentences_whatever_the_tokenization():
    from scaffold_local.metaeval.aggrefact import error_sentences, spans_of

    summary = {"human": {"annotated_error_spans": [["Lee Westwood", "world number one"], "Nedbank Golf Challenge"]}}
    spans = spans_of(summary)
    assert spans == ["lee westwood", "world number one", "nedbank golf challenge"]
    sentences = ["McIlroy leads the Nedbank  Golf Challenge .", "He is level with Rory.", "Lee Westwood , too."]
    assert error_sentences(sentences, spans) == [1, 0, 1]
    assert error_sentences(["Nothing here."], spans) is None


def test_the_benchmark_tables_keep_the_agreement_and_leave_the_labels_out(responder_config, tmp_path):
    from benchmarks.meta_eval_tables import gather, markdown
    from scaffold_local.metaeval.results import write
    from scaffold_local.metaeval.tasks import run_task

    pipeline = Pipeline(responder_config, tmp_path / "store")
    try:
        write(run_task(pipeline, "summedits", eval_data(tmp_path / "eval-data")), tmp_path / "out")
    finally:
        pipeline.close()
    [run] = gather(tmp_path / "out")
    assert set(run["tables"]) == {"agreement", "edit_types"}  # per_summary holds people's labels: left out
    text = markdown([run], ["scaffold-local meta-eval summedits"])
    assert "| judge (ectsum) | SummEdits label | balanced_accuracy | 0.750 |" in text
    assert "label_consistent" not in text and "summedits-ectsum-0" not in text
    assert "on this machine" in text and "> checking summaries: 5 requests to send" in text  # the run's cost and what it said first


def test_summeval_pairs_are_ordered_by_each_expert_score(responder_config, tmp_path):
    from scaffold_local.metaeval.pairs import PAIR_SCORERS
    from scaffold_local.metaeval.tasks import run_task

    pipeline = Pipeline(responder_config, tmp_path / "store")
    try:
        result = run_task(pipeline, "summeval-pairs", eval_data(tmp_path / "eval-data"))
    finally:
        pipeline.close()
    # per document M1 (relevance 4, consistency 5) > M3 (3, 4) > M2 (1, 1): three pairs each, two documents
    assert [(r["human"], r["doc_id"], r["a"], r["b"], r["people"]) for r in result.tables["pairs"]][:3] == [
        ("expert relevance", "factory", "M1", "M2", 1.0), ("expert relevance", "factory", "M1", "M3", 1.0),
        ("expert relevance", "factory", "M2", "M3", 0.0)]
    shares = {(r["human"], r["scorer"]): r for r in result.tables["pair_agreement"]}
    for human in ("expert relevance", "expert consistency"):
        # ROUGE-L against the reference (M1's text): M1 1.0 > M3 (M1 and one word) > M2 (no word shared)
        assert (shares[human, "rouge_l"]["share"], shares[human, "rouge_l"]["pairs"]) == (1.0, 6)
        assert shares[human, "word_overlap_fc"]["pairs"] == 0  # SummEval has no human key facts
        assert all(shares[human, scorer]["pairs"] == 6 for scorer in PAIR_SCORERS)


def test_realsumm_end_to_end_scores_each_summary_with_the_extracted_scaffold_by_hand(responder_config, tmp_path):
    """The judge's own scaffold (the responder's: each document sentence a fact, the first two main, the rest
    supporting, "Published ..." / "Posted ..." other) against LitePyramid recall, and the same fact metrics with
    word overlap as the alignment."""
    from scaffold_local.metaeval.results import MetaEvalResult
    from scaffold_local.metaeval.tasks import run_task

    data = eval_data(tmp_path / "eval-data")
    realsumm = [json.loads(line) for line in (data / "realsumm/realsumm.jsonl").read_text().splitlines()]
    realsumm[0]["reference"] = "Alpha Corp opened a factory in Denton on Monday."  # summary a, word for word
    # library/b: F3's words spread over two sentences: no sentence holds 60% of them (the responder misses it),
    # the summary holds 3 of its 5 (word overlap keeps it)
    realsumm[1]["summaries"][1]["summary"] = "The bicycles came from Oakvale. A club gave them."
    write_jsonl(data / "realsumm/realsumm.jsonl", realsumm)

    def run() -> MetaEvalResult:
        pipeline = Pipeline(responder_config, tmp_path / "store")
        try:
            return run_task(pipeline, "realsumm-end-to-end", data)
        finally:
            pipeline.close()

    result = run()
    rows = {(r["doc_id"], r["system"]): r for r in result.tables["per_summary"]}
    # factory: F1, F2 main, F3, F4 supporting (F5 "Published ..." other); library: F1, F2 main, F3 supporting
    # (FC, Main FC, FPS = Main FC x (1 - Supp FC))
    expected_judge = {("factory", "a"): (1 / 4, 1 / 2, 1 / 2),  # F1
                      ("factory", "b"): (2 / 4, 1 / 2, 1 / 4),  # F2, F4
                      ("library", "a"): (1 / 3, 1 / 2, 1 / 2),  # F1
                      ("library", "b"): (0.0, 0.0, 0.0)}  # nothing
    for key, (fc, main_fc, fps) in expected_judge.items():
        assert (rows[key]["judge_fc"], rows[key]["judge_main_fc"], rows[key]["judge_fps"]) == \
            pytest.approx((fc, main_fc, fps)), key
    assert (rows[("library", "b")]["lexical_fc"], rows[("library", "b")]["lexical_fps"]) == pytest.approx((1 / 3, 0.0))
    assert [rows[k]["facts_scored"] for k in expected_judge] == [4, 4, 3, 3]
    # people's key facts: factory/b holds the 2nd and 3rd of 3; library/b "bicycles" and "club", half of the 2nd
    assert [rows[k]["lexical_fc_key_facts"] for k in expected_judge] == pytest.approx([1 / 3, 2 / 3, 1 / 2, 1 / 2])
    assert rows[("factory", "a")]["rouge_l"] == 1.0 and rows[("library", "a")]["rouge_l"] is None
    # FC orders factory's summaries as people do (b 2/3 over a 1/3); library's people tie: undefined there
    correlation = {(r["scorer"], r["aggregation"]): r for r in result.tables["correlation"]}
    per_document = correlation[("judge_fc", "mean of per-document")]
    assert (per_document["documents"], per_document["spearman"]) == (0, None)  # fewer than 3 summaries each
    pooled = correlation[("judge_fc", "pooled over summaries")]
    assert pooled["n"] == 4 and pooled["documents"] == 2
    # ranks: FC (0.25, 0.5, 0.333, 0) -> (2, 4, 3, 1); people (1/3, 2/3, 1/2, 1/2) -> (1, 4, 2.5, 2.5)
    assert pooled["spearman"] == pytest.approx(3 / math.sqrt(5 * 4.5))
    assert (result.items, result.failed) == (4, 0)
    assert any(line.startswith("judge_fc with LitePyramid recall: Spearman") for line in result.summary)
    # one fact request per summary under the responder's method version; a rerun reads them all from the store
    assert result.summary[-1].endswith("fact judgments sent to the engine: 4 of 4 (the rest read from the store)")
    again = run()
    assert again.summary[-1].endswith("sent to the engine: 0 of 4 (the rest read from the store)")
    assert again.tables["per_summary"] == result.tables["per_summary"]


def test_a_later_draw_leaves_out_every_document_that_earlier_results_list(tmp_path):
    """Test documents no earlier measurement drew: every list of ids under a "documents" key of the named result
    files (flat or per split) is left out; the rest are drawn at random, seeded, in their own order."""
    from benchmarks.earlier_draws import documents_in, fresh

    (tmp_path / "a.json").write_text(json.dumps({"documents": {"dev": ["d1"], "test": ["d2", "d3"]}, "notes": ["d4"]}))
    (tmp_path / "b.json").write_text(json.dumps({"test": {"documents": ["d5"], "summaries": 3}}))
    used = documents_in([tmp_path / "a.json", tmp_path / "b.json"])
    assert used == {"d1", "d2", "d3", "d5"}  # "notes" is not a draw
    docs = [{"doc_id": f"d{i}"} for i in range(1, 9)]
    drawn = fresh(docs, used, 2, seed=0)
    assert len(drawn) == 2 and {d["doc_id"] for d in drawn} <= {"d4", "d6", "d7", "d8"}
    assert drawn == sorted(drawn, key=lambda d: d["doc_id"]) and drawn == fresh(docs, used, 2, seed=0)
    assert [d["doc_id"] for d in fresh(docs, used, 10, seed=0)] == ["d4", "d6", "d7", "d8"]


def calibration_data(root: Path) -> Path:
    """eval_data with the library document's FRANK sentences three, one of them wrong: both labels on the dev half."""
    data = eval_data(root)
    sentences = [("The Oakvale library now lends bicycles to members.", 0), ("The library lends boats to pirates.", 1),
                 ("Each member may borrow a bicycle for seven days.", 0)]
    write_jsonl(data / "frank" / "frank_sentence_level.jsonl", [{"doc_id": "library", "document": LIBRARY, "summaries": [
        {"system": f"s{n}", "summary": text, "sentences": [text],
         "human": {"sentence_error_per_annotator": [[error]] * 3, "sentence_error_majority": [error],
                   "frank_summary_scores": {"Factuality": 1.0 - error}}} for n, (text, error) in enumerate(sentences)]}])
    return data


def test_calibrate_writes_a_config_with_the_dev_halves_thresholds(tmp_path):
    """`calibrate` reads the dev halves only (here the library document: REALSumm's 4 key-fact items, 3 FRANK
    sentences, one of them wrong) and writes a config that extends the judge with [thresholds.N]: facts and sentences at the thresholds
    meta-eval reports for those dev documents, questions and attributes at the facts'. A version that writes its
    verdicts has nothing to calibrate."""
    from scaffold_local.judging.config import ModelConfig

    data = calibration_data(tmp_path / "eval-data")
    common = ["-m", str(RESPONDER_CONFIG), "--data", str(data), "--store", str(tmp_path / "store"), "--method-version", "15"]
    written = tmp_path / "calibrated.toml"
    result = runner.invoke(app, ["calibrate", *common, "--out", str(written)])
    assert result.exit_code == 0, result.output
    config = ModelConfig.load(str(written))
    thresholds = config.thresholds[15]
    assert config.method_version == 15 and config.backend == "responder"
    assert thresholds["questions"] == thresholds["entities"] == thresholds["facts"] and "faithfulness" in thresholds
    for task, kind in (("realsumm-alignment", "facts"), ("frank", "faithfulness")):
        out = tmp_path / task
        assert runner.invoke(app, ["meta-eval", task, *common, "--split", "dev", "--out", str(out)]).exit_code == 0
        reported = json.loads(next(out.glob("*.json")).read_text())
        assert reported["documents"] == 1  # library: the one dev document
        assert thresholds[kind] == round(reported["tables"]["confidence"][0]["threshold_all_documents"], 3)
    refused = runner.invoke(app, ["calibrate", *common[:-1], "9"])
    assert refused.exit_code == 2 and "does not read its fact and sentence verdicts" in refused.output


def test_calibrate_reads_the_main_points_threshold_under_a_version_that_reads_them(tmp_path):
    """Under version 19, `calibrate` also writes `main`: the threshold on P(main) that best separates the extracted
    facts the judge matches to a key fact of people's from the rest (`meta-eval realsumm-importance` on the dev half).
    On the library document the responder extracts four facts; two match people's key facts ("lends bicycles", "were
    donated by a cycling club"); it reads P(main) 0.9 for its two main sentences and 0.2 for the others."""
    from scaffold_local.judging.config import ModelConfig

    data = calibration_data(tmp_path / "eval-data")
    common = ["-m", str(RESPONDER_CONFIG), "--data", str(data), "--store", str(tmp_path / "store"), "--method-version", "19"]
    written = tmp_path / "calibrated.toml"
    result = runner.invoke(app, ["calibrate", *common, "--out", str(written)])
    assert result.exit_code == 0, result.output
    thresholds = ModelConfig.load(str(written)).thresholds[19]
    out = tmp_path / "importance"
    assert runner.invoke(app, ["meta-eval", "realsumm-importance", *common, "--split", "dev", "--out", str(out)]).exit_code == 0
    reported = json.loads(next(out.glob("*.json")).read_text())
    assert reported["items"] == 4 and reported["failed"] == 0
    confidence = reported["tables"]["confidence"][0]
    # key facts F1 (P 0.9) and F3 (0.2) against F2 (0.9) and F4 (0.2): P(main) ranks them no better than chance
    assert confidence["auroc"] == pytest.approx(0.5)
    assert thresholds["main"] == round(confidence["threshold_all_documents"], 3)
