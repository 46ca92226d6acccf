"""The statistics behind the report, on small fixed inputs worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scaffold_local.analysis.items import ItemVerdicts, drill_down
from scaffold_local.analysis.judges import _alpha, _kappa, ranking_agreement
from scaffold_local.analysis.length import length_effect
from scaffold_local.analysis.metric_agreement import metric_agreement
from scaffold_local.analysis.paired import compare
from scaffold_local.analysis.resolving import resolving_power
from scaffold_local.analysis.scores import ScoreTable

NAN = math.nan


def table(systems: list[str], **metrics: list[list[float]]) -> ScoreTable:
    """A score table from rows of documents (d1, d2, ...), one column per system."""
    documents = [f"d{i}" for i in range(1, len(next(iter(metrics.values()))) + 1)]
    return ScoreTable(documents, systems, {m: np.array(rows, dtype=float) for m, rows in metrics.items()},
                      reasons={m: {} for m in metrics}, words=np.full((len(documents), len(systems)), NAN))


def test_a_known_paired_difference():
    # A beats B by exactly 0.1 on every document: every resample agrees.
    t = table(["A", "B"], fps=[[0.5, 0.4], [0.7, 0.6], [0.2, 0.1], [0.9, 0.8]])
    c = compare(t, "fps")
    means = {m.system: m for m in c.means}
    assert means["A"].mean == pytest.approx(0.575) and means["B"].mean == pytest.approx(0.475)
    (pair,) = c.pairs
    assert (pair.a, pair.b) == ("A", "B") and pair.difference == pytest.approx(0.1)
    assert pair.low == pytest.approx(0.1) and pair.high == pytest.approx(0.1)
    assert pair.p_a_better == 1.0 and pair.separated
    assert c.rank_stability == {"A": 1.0, "B": 1.0}
    assert c.leader == "A"


def test_percentile_interval_of_two_values_by_hand():
    # Resampling [0, 1]: means 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4, so the 95% interval is [0, 1].
    c = compare(table(["A"], fc=[[0.0], [1.0]]), "fc")
    assert (c.means[0].mean, c.means[0].low, c.means[0].high) == (0.5, 0.0, 1.0)


def test_no_difference_is_not_separated_and_reruns_agree():
    t = table(["A", "B"], fc=[[0.2, 0.4], [0.4, 0.2], [0.6, 0.8], [0.8, 0.6]])
    first, again = compare(t, "fc", seed=3), compare(t, "fc", seed=3)
    (pair,) = first.pairs
    assert pair.difference == pytest.approx(0.0) and not pair.separated
    assert pair.low < 0 < pair.high and 0.2 < pair.p_a_better < 0.8
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
    t = table(["A", "B"], ds=[[10, 10], [10, 9], [10, 10], [9, 10]],
              fps=[[0.9, 0.3], [0.8, 0.2], [0.7, 0.3], [0.9, 0.1]])
    ds, fps = (resolving_power(t, compare(t, m)) for m in ("ds", "fps"))
    assert ds.at_ceiling == pytest.approx(6 / 8) and ds.saturating
    assert ds.spread == pytest.approx(0.0) and ds.relative_spread == pytest.approx(1.0) and ds.flat
    assert fps.spread == pytest.approx(0.825 - 0.225) and fps.relative_spread == pytest.approx(0.825 / 0.225)
    assert fps.at_ceiling == 0.0 and fps.resolves and (fps.pairs_separated, fps.pairs) == (1, 1)
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
    assert agreement.leaders == {"fps": "A", "fc": "A", "qc": "B"} and agreement.split_leadership


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
