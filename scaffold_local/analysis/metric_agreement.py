"""Agreement between metrics over summaries (the paper's Figure 3): Spearman and Pearson
correlation matrices, and the leader under each metric, flagged when metrics crown different
leaders (the paper's failure mode F2); a diagnostic (Supp FC) crowns no one."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .paired import MetricComparison
from .roles import DIAGNOSTICS
from .scores import ScoreTable


@dataclass
class MetricAgreement:
    metrics: list[str]
    spearman: list[list[float | None]]  # None where fewer than 3 summaries share values, or one is constant
    pearson: list[list[float | None]]
    leaders: dict[str, list[str]]  # metric -> the systems at the highest paired mean (several: a tie)
    split_leadership: bool  # no system leads (alone or in a tie) on every metric


def _correlation(x: np.ndarray, y: np.ndarray, test) -> float | None:
    both = ~np.isnan(x) & ~np.isnan(y)
    if both.sum() < 3 or np.ptp(x[both]) == 0 or np.ptp(y[both]) == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(test(x[both], y[both])[0])


def metric_agreement(table: ScoreTable, comparisons: dict[str, MetricComparison]) -> MetricAgreement:
    metrics = [m for m, c in comparisons.items() if c.means]
    flat = {m: table.values[m].ravel() for m in metrics}
    spearman = [[_correlation(flat[a], flat[b], stats.spearmanr) for b in metrics] for a in metrics]
    pearson = [[_correlation(flat[a], flat[b], stats.pearsonr) for b in metrics] for a in metrics]
    leaders = {m: comparisons[m].leaders for m in metrics if len(comparisons[m].means) > 1 and m not in DIAGNOSTICS}
    # Split: the metrics crown different leaders, a tie counting for each system in it.
    common = set.intersection(*(set(systems) for systems in leaders.values())) if leaders else set()
    return MetricAgreement(metrics, spearman, pearson, leaders, bool(leaders) and not common)
