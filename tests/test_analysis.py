"""The statistics behind the report, on small fixed inputs worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from scaffold_local.analysis.items import ItemVerdicts, drill_down
from scaffold_local.analysis.judges import _alpha, _kappa, ranking_agreement
from scaffold_local.analysis.length import length_effect
from scaffold_local.analysis.metric_agreement import metric_agreement
from scaffold_local.analysis.paired import MIN_DOCUMENTS, N_RESAMPLES, compare, paired_t_test
from scaffold_local.analysis.resolving import resolving_power
from scaffold_local.analysis.scores import ScoreTable
from scaffold_local.analysis.standings import standings
from scaffold_local.method.metrics import MetricMean, SystemScores
from scaffold_local.method.views import METRICS

NAN = math.nan


def table(systems: list[str], **metrics: list[list[float]]) -> ScoreTable:
    """A score table from rows of documents (d1, d2, ...), one column per system."""
    documents = [f"d{i}" for i in range(1, len(next(iter(metrics.values()))) + 1)]
    return ScoreTable(documents, systems, {m: np.array(rows, dtype=float) for m, rows in metrics.items()},
                      reasons={m: {} for m in metrics}, words=np.full((len(documents), len(systems)), NAN))


def test_a_known_paired_difference():
    # A beats B by exactly 0.1 on each of 6 documents: every resample agrees, and an exact sign test
    # (the t-test has no variance to work with) gives p = 2 / 2^6.
    t = table(["A", "B"], fps=[[0.5, 0.4], [0.7, 0.6], [0.2, 0.1], [0.9, 0.8], [0.4, 0.3], [0.6, 0.5]])
    c = compare(t, "fps")
    means = {m.system: m for m in c.means}
    assert means["A"].mean == pytest.approx(0.55) and means["B"].mean == pytest.approx(0.45)
    (pair,) = c.pairs
    assert (pair.a, pair.b) == ("A", "B") and pair.difference == pytest.approx(0.1)
    assert pair.low == pytest.approx(0.1) and pair.high == pytest.approx(0.1)
    assert pair.p_value == pytest.approx(2 / 2**6) and pair.p_holm == pair.p_value
    assert pair.p_a_better == 1.0 and pair.separated and pair.not_assessed is None
    assert c.rank_stability == {"A": 1.0, "B": 1.0}
    assert c.leaders == ["A"]


def test_fewer_documents_than_the_minimum_are_never_separated():
    # Two documents, a 0.01 difference on both: the old percentile interval was [0.01, 0.01], "separated".
    two = compare(table(["A", "B"], fc=[[0.51, 0.50], [0.71, 0.70]]), "fc").pairs[0]
    assert not two.separated and two.not_assessed.startswith(f"fewer than {MIN_DOCUMENTS} documents")
    assert two.p_value == pytest.approx(0.5)  # the sign test's p for 2 documents in one direction
    # Five documents with a clear, varying difference: significant by the t-test, yet below the minimum.
    five = compare(table(["A", "B"], fc=[[0.9, 0.1], [0.8, 0.2], [0.9, 0.2], [0.7, 0.1], [0.8, 0.1]]), "fc").pairs[0]
    assert five.p_value < 0.01 and not five.separated and five.not_assessed
    # Three documents, differences 1, -1, 1: mean 1/3 +- 4.30 x 0.67, cut at the widest possible difference.
    three = compare(table(["A", "B"], fps=[[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), "fps").pairs[0]
    assert (three.low, three.high) == (-1.0, 1.0)
    # The minimum is the smallest n at which all n documents in one direction pass an exact sign test.
    assert 2 / 2 ** (MIN_DOCUMENTS - 1) > 0.05 > 2 / 2**MIN_DOCUMENTS


def test_separation_is_holm_adjusted_over_the_pairs_of_a_metric():
    # Three systems, 8 documents. Paired t-test p: A - B 0.0003, A - C 0.033, B - C 0.045. Holm over
    # the 3 pairs: 0.0008, then 0.033 x 2 = 0.066, then max(0.045 x 1, 0.066) = 0.066.
    a, b, c = [0.9, 0.8, 0.7, 0.9, 0.6, 0.8, 0.7, 0.9], [0.5, 0.4, 0.4, 0.6, 0.5, 0.3, 0.5, 0.4], \
        [0.6, 0.9, 0.4, 0.7, 0.6, 0.3, 0.7, 0.5]
    pairs = compare(table(["A", "B", "C"], fps=[list(row) for row in zip(a, b, c)]), "fps").pairs
    for pair, (x, y) in zip(pairs, [(a, b), (a, c), (b, c)]):
        scipy_test = stats.ttest_1samp(np.subtract(x, y), 0.0)
        assert pair.p_value == pytest.approx(scipy_test.pvalue)
        assert (pair.low, pair.high) == pytest.approx(tuple(scipy_test.confidence_interval(0.95)))
    raw = np.array([p.p_value for p in pairs])
    assert [p.p_holm for p in pairs] == pytest.approx([3 * raw[0], 2 * raw[1], 2 * raw[1]])
    assert all(p.p_value < 0.05 for p in pairs) and [p.separated for p in pairs] == [True, False, False]


def test_p_a_better_counts_ties_as_half():
    # The systems agree exactly on most documents, so many resamples have a mean difference of exactly 0.
    rows = [[0.5, 0.5]] * 5 + [[1.0, 0.0], [0.0, 1.0], [1.0, 0.5]]
    forward = compare(table(["A", "B"], fc=rows), "fc", seed=1).pairs[0]
    backward = compare(table(["B", "A"], fc=[row[::-1] for row in rows]), "fc", seed=1).pairs[0]
    assert (forward.a, backward.a) == ("A", "B")
    assert forward.p_a_better + backward.p_a_better == pytest.approx(1.0, abs=1e-12)
    assert 0.5 < forward.p_a_better < 1.0


def null_differences(rng: np.random.Generator, case: str, n: int, simulations: int) -> np.ndarray:
    """Paired differences of two exchangeable systems (no true difference), `simulations` x `n` documents.
    "shares": a share of 4 items kept, each document with its own difficulty (bounded, skewed, many
    exact ties, like FC); "normal": a document effect plus normal noise per system."""
    if case == "shares":
        difficulty = rng.beta(0.8, 2.0, size=(simulations, n, 1))
        kept = rng.binomial(4, np.broadcast_to(difficulty, (simulations, n, 2))) / 4
        return kept[..., 0] - kept[..., 1]
    document = rng.normal(size=(simulations, n))
    return (document + rng.normal(size=(simulations, n))) - (document + rng.normal(size=(simulations, n)))


def null_separation_shares(seed: int = 0, simulations: int = 4000) -> list[tuple[str, int, float, float, float]]:
    """Under no true difference, the share of pairs each rule calls separated at 95%: the percentile
    bootstrap interval (what the report used), the paired t-test, and the t-test with the minimum
    number of documents. Rows: (case, n, percentile, t, t with the minimum)."""
    rng = np.random.default_rng(seed)
    rows = []
    for case in ("shares", "normal"):
        for n in (5, 10, 30):
            differences = null_differences(rng, case, n, simulations)
            counts = rng.multinomial(n, np.full(n, 1 / n), size=N_RESAMPLES)  # one set of resamples for all
            low, high = np.quantile(differences @ counts.T / n, [0.025, 0.975], axis=1)
            percentile = float(((low > 0) | (high < 0)).mean())
            t_separated = paired_t_test(differences)[2] < 0.05
            rows.append((case, n, percentile, float(t_separated.mean()), float(t_separated.mean()) * (n >= MIN_DOCUMENTS)))
    return rows


def test_under_no_difference_the_chosen_test_separates_about_5_percent_and_the_percentile_interval_more():
    rows = {(case, n): shares for case, n, *shares in null_separation_shares()}
    for (case, n), (_, t, with_minimum) in rows.items():
        assert t <= 0.065, (case, n, t)  # 4000 simulations: a true 5% lands above 6.5% about once in 10^5
        assert with_minimum <= t and (with_minimum == 0) == (n < MIN_DOCUMENTS)
    assert rows["normal", 5][0] > 0.12 and rows["normal", 10][0] > 0.08  # why the percentile interval went


def test_percentile_interval_of_two_values_by_hand():
    # Resampling [0, 1]: means 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4, so the 95% interval is [0, 1].
    c = compare(table(["A"], fc=[[0.0], [1.0]]), "fc")
    assert (c.means[0].mean, c.means[0].low, c.means[0].high) == (0.5, 0.0, 1.0)


def test_no_difference_is_not_separated_and_reruns_agree():
    t = table(["A", "B"], fc=[[0.2, 0.4], [0.4, 0.2], [0.6, 0.8], [0.8, 0.6]])
    first, again = compare(t, "fc", seed=3), compare(t, "fc", seed=3)
    (pair,) = first.pairs
    assert pair.difference == pytest.approx(0.0) and not pair.separated
    assert pair.low < 0 < pair.high and 0.2 < pair.p_a_better < 0.8 and pair.p_value == pytest.approx(1.0)
    assert (pair.low, pair.high, pair.p_a_better) == (again.pairs[0].low, again.pairs[0].high, again.pairs[0].p_a_better)


def test_only_documents_every_system_has_a_value_for_are_compared():
    t = table(["A", "B", "C"], fps=[[1.0, 0.0, 0.5], [NAN, 0.2, 0.5], [0.6, 0.4, 0.5]])
    t.reasons["fps"][("d2", "A")] = "scaffold has no main facts"
    c = compare(t, "fps")
    assert c.documents == ["d1", "d3"]
    assert c.left_out == {"d2": "no value for A (scaffold has no main facts)"}
    assert {m.system: m.mean for m in c.means} == pytest.approx({"A": 0.8, "B": 0.2, "C": 0.5})  # d2's 0.2 is out
    empty = compare(table(["A", "B"], fps=[[NAN, 1.0]]), "fps")
    assert empty.means == [] and empty.left_out == {"d1": "no value for A (no summary)"}


def test_resolving_power_flags_a_metric_at_its_ceiling():
    t = table(["A", "B"], ds=[[10, 10], [10, 9], [10, 10], [9, 10], [10, 10], [10, 10]],
              fps=[[0.9, 0.3], [0.8, 0.2], [0.7, 0.3], [0.9, 0.1], [0.8, 0.2], [0.9, 0.3]])
    ds, fps = (resolving_power(t, compare(t, m)) for m in ("ds", "fps"))
    assert ds.at_ceiling == pytest.approx(10 / 12) and ds.saturating
    assert ds.spread == pytest.approx(0.0) and ds.relative_spread == pytest.approx(1.0) and ds.flat
    assert fps.spread == pytest.approx(0.6) and fps.relative_spread == pytest.approx(5.0 / 1.4)
    assert fps.at_ceiling == 0.0 and fps.resolves and (fps.pairs_separated, fps.pairs) == (1, 1)
    assert fps.separation_not_assessed is None
    few = resolving_power(t4 := table(["A", "B"], fps=[[0.9, 0.3], [0.8, 0.2], [0.7, 0.3], [0.9, 0.1]]),
                          compare(t4, "fps"))
    assert (few.pairs_separated, few.pairs) == (0, 1) and few.separation_not_assessed.startswith("fewer than")
    floor = resolving_power(t2 := table(["A", "B"], fc=[[0.0, 0.0], [0.0, 0.0]]), compare(t2, "fc"))
    assert floor.flat and not floor.saturating  # stuck at 0 tells nothing apart either


def test_metric_agreement_and_split_leadership():
    # fc rises with fps (rho 1); qc falls with it (rho -1) and crowns the other system.
    t = table(["A", "B"], fps=[[0.9, 0.1], [0.8, 0.2], [0.7, 0.3]], fc=[[0.95, 0.15], [0.85, 0.25], [0.75, 0.35]],
              qc=[[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]])
    comparisons = {m: compare(t, m) for m in ("fps", "fc", "qc")}
    agreement = metric_agreement(t, comparisons)
    index = {m: i for i, m in enumerate(agreement.metrics)}
    assert agreement.spearman[index["fps"]][index["fc"]] == pytest.approx(1.0)
    assert agreement.spearman[index["fps"]][index["qc"]] == pytest.approx(-1.0)
    assert agreement.pearson[index["fps"]][index["fc"]] == pytest.approx(1.0)
    assert agreement.leaders == {"fps": ["A"], "fc": ["A"], "qc": ["B"]} and agreement.split_leadership
    # A three-way tie is a tie, not a win for the first name: A leads on one metric and ties on the other.
    tied = table(["A", "B", "C"], eps=[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], fps=[[0.9, 0.5, 0.4], [0.8, 0.6, 0.3]])
    together = metric_agreement(tied, {m: compare(tied, m) for m in ("eps", "fps")})
    assert together.leaders == {"eps": ["A", "B", "C"], "fps": ["A"]} and not together.split_leadership


def test_cohen_kappa_and_krippendorff_alpha_by_hand():
    perfect = [1, 0, 1, 1, 0]
    assert _kappa(perfect, perfect) == 1.0 and _alpha(np.array([perfect, perfect])) == 1.0
    # Chance agreement: observed 0.5 = expected 0.5 * 0.5 + 0.5 * 0.5, so kappa is 0. Alpha with
    # 8 pairable values, 4 of each: Do = 4/8, De = 2 * 4 * 4 / (8 * 7), alpha = 1 - Do/De = 0.125.
    a, b = [1, 1, 0, 0], [1, 0, 1, 0]
    assert _kappa(a, b) == pytest.approx(0.0)
    assert _alpha(np.array([a, b])) == pytest.approx(1 - 0.5 / (32 / 56))
    assert _kappa([1, 1, 1], [1, 1, 1]) is None  # one verdict only: kappa is 0/0, reported as undefined


def test_ranking_agreement_is_kendalls_tau():
    def ranks(*values: float) -> dict:
        t = table(["A", "B", "C"], fps=[list(values), list(values)])
        return {"fps": compare(t, "fps")}

    assert ranking_agreement([ranks(0.9, 0.5, 0.1), ranks(0.8, 0.6, 0.2)]) == {"fps": pytest.approx(1.0)}
    assert ranking_agreement([ranks(0.9, 0.5, 0.1), ranks(0.1, 0.5, 0.9)]) == {"fps": pytest.approx(-1.0)}


def test_length_correlation():
    t = table(["A", "B"], fc=[[0.2, 0.4], [0.6, 0.8]])
    t.words = np.array([[10, 20], [30, 40]], dtype=float)
    effect = length_effect(t, ["fc"])
    assert effect.spearman_with_length == {"fc": pytest.approx(1.0)}
    assert effect.mean_words == {"A": 20.0, "B": 30.0}


def test_drill_down_lists_what_others_keep_first_and_what_everyone_misses():
    items = [
        ItemVerdicts("d1", "facts", "F1", "main point", "key", kept={"A": False, "B": True, "C": True}),
        ItemVerdicts("d1", "facts", "F2", "main point", "hard", kept={"A": False, "B": False, "C": True}),
        ItemVerdicts("d1", "facts", "F3", "main point", "scaffold noise", kept={"A": False, "B": False, "C": False}),
        ItemVerdicts("d1", "facts", "F4", "supporting detail", "detail", kept={"A": False, "B": True, "C": True}),
    ]
    drill = drill_down(items, ["A", "B", "C"])
    assert [(m.item.item_id, m.kept_by_others) for m in drill.missed_by_system["A"]] == [("F1", 2), ("F2", 1), ("F3", 0)]
    assert [i.item_id for i in drill.missed_by_all] == ["F3"]  # supporting F4 is not listed


def test_no_leader_is_named_while_a_system_has_nothing_scored():
    def scores(system: str, fps: float | None) -> SystemScores:
        mean = MetricMean(mean=fps, n=0 if fps is None else 2, excluded=2 if fps is None else 0,
                          excluded_reasons={"engine_crash": 2} if fps is None else {})
        return SystemScores(system=system, n_summaries=2, metrics={key: mean for key in METRICS})

    ranked = standings([scores("A", 0.8), scores("B", 0.4), scores("C", None)], documents=2)
    assert ranked.verdict.startswith("No leader on FPS: C has no FPS value") and "leads" not in ranked.verdict
    assert ranked.order == ["A", "B", "C"]  # the table still lists every system, the unscored last
    complete = standings([scores("A", 0.8), scores("B", 0.4)], documents=2)
    assert complete.verdict.startswith("A leads on FPS (0.800, B next at 0.400)")
