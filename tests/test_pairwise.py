"""Pairwise comparison grounded in the scaffold and Bradley-Terry rankings, on verdicts and preference
tables worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scaffold_local.analysis.bradley_terry import Preference, fit, rank, separated_pairs
from scaffold_local.analysis.items import ItemVerdicts
from scaffold_local.analysis.pairwise import grounded_preferences, p_more, pair_evidence
from scaffold_local.analysis.rankings import GROUNDED, side_by_side
from scaffold_local.analysis.run_analysis import analyze
from scaffold_local.data.loading import load_input
from scaffold_local.runs import load as load_run
from scaffold_local.runs.pipeline import Pipeline


def item(view: str, item_id: str, label: str, kept: dict[str, bool], p: dict[str, float | None] | None = None,
         doc_id: str = "d1") -> ItemVerdicts:
    return ItemVerdicts(doc_id, view, item_id, label, f"text of {item_id}", kept=kept, p=p or {s: None for s in kept})


def test_the_probability_that_one_count_exceeds_another_by_hand():
    assert p_more([0.5], []) == pytest.approx(0.5)
    assert p_more([0.9], [0.2]) == pytest.approx(0.9 * 0.8)
    # A's count: 0, 1, 2 with 1/4, 1/2, 1/4; B's: 0, 1 with 1/2 each. P(A > B) = 1/2 x 1/2 + 1/4 x 1 = 1/2
    assert p_more([0.5, 0.5], [0.5]) == pytest.approx(0.5)
    assert p_more([], [0.3]) == 0.0
    assert p_more([1.0, 1.0], [0.0, 1.0]) == 1.0


def test_the_evidence_of_one_pair_and_its_preference():
    items = [
        item("facts", "F1", "main point", {"A": True, "B": False}, {"A": 0.9, "B": 0.3}),
        item("facts", "F2", "main point", {"A": True, "B": True}, {"A": 0.8, "B": 0.7}),
        item("facts", "F3", "supporting detail", {"A": False, "B": True}),
        item("questions", "Q1", "main point", {"A": False, "B": True}),
        item("facts", "F9", "main point", {"A": True, "B": True}, doc_id="d2"),  # another document
    ]
    pair = pair_evidence(items, "d1", "A", "B")
    assert pair.a_only == {"facts main point": ["F1"]}
    assert pair.b_only == {"facts supporting detail": ["F3"], "questions main point": ["Q1"]}
    assert pair.main_kept == {"facts": (2, 1), "questions": (0, 1)}
    assert pair.preference == 1.0 and pair.deciding_view == "facts"  # main facts decide before questions
    # A keeps 0, 1, 2 main facts with .02, .26, .72; B with .21, .58, .21: P(A > B) = .26 x .21 + .72 x .79
    assert pair.p_a_more_main_facts == pytest.approx(0.26 * 0.21 + 0.72 * 0.79)


def test_a_preference_by_probabilities_needs_a_margin_else_it_is_a_tie():
    close = pair_evidence([item("facts", "F1", "main point", {"A": True, "B": True}, {"A": 0.6, "B": 0.5})], "d1", "A", "B")
    # P(A more) = 0.6 x 0.5 = 0.30, P(B more) = 0.5 x 0.4 = 0.20: 0.10 apart, within the margin of 0.2
    assert (close.p_a_more_main_facts, close.p_b_more_main_facts) == (pytest.approx(0.30), pytest.approx(0.20))
    assert close.probable_preference == 0.5
    apart = pair_evidence([item("facts", "F1", "main point", {"A": True, "B": False}, {"A": 0.9, "B": 0.2})], "d1", "A", "B")
    # P(A more) = 0.9 x 0.8 = 0.72, P(B more) = 0.2 x 0.1 = 0.02: 0.70 apart
    assert apart.probable_preference == 1.0


def test_a_tie_on_main_facts_goes_to_questions_and_else_stays_a_tie():
    questions_decide = [item("facts", "F1", "main point", {"A": True, "B": True}),
                        item("questions", "Q1", "main point", {"A": False, "B": True})]
    pair = pair_evidence(questions_decide, "d1", "A", "B")
    assert (pair.preference, pair.deciding_view) == (0.0, "questions")
    assert pair.p_a_more_main_facts == 0.0  # verdicts without P count as 0 or 1: equal counts, never more
    only_supporting = [item("facts", "F1", "main point", {"A": True, "B": True}),
                       item("facts", "F2", "supporting detail", {"A": True, "B": False})]
    pair = pair_evidence(only_supporting, "d1", "A", "B")
    assert (pair.preference, pair.deciding_view) == (0.5, None)
    assert pair.a_only == {"facts supporting detail": ["F2"]}  # evidence, never the decider


def test_every_pair_on_every_document_where_both_have_verdicts():
    items = [item("facts", "F1", "main point", {"A": True, "B": False, "C": True}),
             item("facts", "F1", "main point", {"A": True, "C": False}, doc_id="d2")]
    pairs = grounded_preferences(items, ["A", "B", "C"])
    assert [(p.doc_id, p.a, p.b, p.preference) for p in pairs] == [
        ("d1", "A", "B", 1.0), ("d1", "A", "C", 0.5), ("d1", "B", "C", 0.0), ("d2", "A", "C", 1.0)]


def test_bradley_terry_of_two_systems_is_the_log_odds_of_their_wins():
    # A preferred on 3 documents of 4: P(A > B) = 3/4 = sigmoid(sA - sB), so sA - sB = ln 3, centred
    table = [Preference(f"d{i}", "A", "B", 1.0) for i in range(3)] + [Preference("d3", "A", "B", 0.0)]
    strengths = fit(table, ["A", "B"], alpha=0)
    assert strengths == pytest.approx([math.log(3) / 2, -math.log(3) / 2], abs=1e-4)
    tie = fit([Preference("d1", "A", "B", 0.5)], ["A", "B"], alpha=0)  # a tie is half a win each way
    assert tie == pytest.approx([0.0, 0.0], abs=1e-6)


def test_bradley_terry_meets_its_likelihood_equations_on_a_table_of_three():
    # At the maximum, each system's wins equal its expected wins: sum over its comparisons of sigmoid(si - sj)
    table = [("A", "B", 2, 1), ("B", "C", 2, 1), ("A", "C", 1, 2)]  # (a, b, wins of a, wins of b)
    preferences = [Preference(f"{a}{b}{k}", a, b, 1.0) for a, b, wins, _ in table for k in range(wins)] + \
        [Preference(f"{b}{a}{k}", a, b, 0.0) for a, b, _, losses in table for k in range(losses)]
    s = dict(zip("ABC", fit(preferences, list("ABC"), alpha=0)))
    for system in "ABC":
        wins = sum(w for a, b, w, _ in table if a == system) + sum(w for a, b, _, w in table if b == system)
        expected = sum((w + v) / (1 + math.exp(s[b if a == system else a] - s[system]))
                       for a, b, w, v in table if system in (a, b))
        assert expected == pytest.approx(wins, abs=1e-4)
    assert sum(s.values()) == pytest.approx(0.0, abs=1e-9)


def test_a_ranking_has_intervals_from_resampled_documents_and_counts_separated_pairs():
    always = [Preference(f"d{i}", "A", "B", 1.0) for i in range(8)] + \
        [Preference(f"d{i}", "B", "C", 0.5) for i in range(8)]
    ranking = rank(always, ["A", "B", "C"], resamples=200)
    assert ranking.order[0] == "A" and ranking.pairs == 3
    for s in ranking.strengths:
        assert s.low is not None and s.high is not None and s.low <= s.value + 1e-9 <= s.high + 2e-9
    assert ranking.pairs_separated >= 1  # A beat B on every document; B and C always tied
    five_documents = rank(always[:5] + always[8:13], ["A", "B", "C"])  # too few to call any pair separated
    assert five_documents.not_assessed and five_documents.strengths[0].low is None
    assert five_documents.pairs_separated == 0


def test_separated_pairs_are_holm_adjusted_over_the_pairs():
    # 100 resamples of three pairs' differences: always above 0 (p = 0), 2 of 100 at or below 0 (p = 0.04),
    # 3 of 100 (p = 0.06). Holm: 0 x 3, 0.04 x 2 = 0.08, 0.06 x 1 -> 0.08 kept monotone: one pair separated,
    # where unadjusted 95% percentile intervals would separate two.
    differences = np.ones((100, 3))
    differences[:2, 1] = -1.0
    differences[:3, 2] = -1.0
    assert separated_pairs(differences) == 1
    assert separated_pairs(differences[:, :2]) == 2  # two pairs: 0.04 x 1 after 0 x 2


def test_a_ranking_shows_ties_as_ties():
    from scaffold_local.analysis.rankings import RankingRow, three_digits

    row = RankingRow("fps", ["a", "b", "c"], {"a": 0.85, "b": 0.0, "c": 0.0}, 0, 3, None)
    assert row.ordered(three_digits) == "a 0.850 > b 0.000 = c 0.000"


def test_the_rankings_of_a_run_side_by_side(responder_config, small_input, tmp_path):
    pipeline = Pipeline(responder_config, tmp_path / "store")
    run = load_run(pipeline.score(load_input(small_input)).run_dir)
    analysis = analyze(run)
    rows = {row.name: row for row in analysis.rankings}
    assert {GROUNDED, "fps", "ds"} <= set(rows)
    systems = set(analysis.table.systems)
    for row in rows.values():
        assert set(row.order) == systems and row.pairs == len(systems) * (len(systems) - 1) // 2
        assert row.tau_with_grounded is None or -1 <= row.tau_with_grounded <= 1
    grounded = rows[GROUNDED]
    assert np.isclose(sum(grounded.scores.values()), 0.0)
    assert side_by_side(analysis.comparisons, [], analysis.table.systems)[0].tau_with_grounded is None


def test_show_prints_the_rankings_side_by_side(responder_config, small_input, tmp_path):
    from typer.testing import CliRunner

    from scaffold_local.cli import app

    store = tmp_path / "store"
    run_dir = Pipeline(responder_config, store).score(load_input(small_input)).run_dir
    result = CliRunner().invoke(app, ["show", str(run_dir), "--rankings"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Rankings side by side" in result.output and "grounded pairwise" in result.output
    assert "FPS (mean)" in result.output and "Kendall tau" in result.output
