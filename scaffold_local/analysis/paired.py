"""Paired system comparison for one metric: means over the documents every system has a value for,
percentile-bootstrap 95% intervals over documents (scipy), paired differences with P(A > B), and
how often each system keeps its rank when the documents are resampled. Seeded: reruns agree."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from .scores import ScoreTable

N_RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclass
class SystemMean:
    system: str
    mean: float
    low: float | None  # None with fewer than two documents
    high: float | None


@dataclass
class PairDifference:
    a: str
    b: str
    difference: float  # mean of a - b over the common documents
    low: float | None
    high: float | None
    p_a_better: float | None  # share of resamples in which a's mean exceeds b's

    @property
    def separated(self) -> bool:
        """The interval excludes zero: the metric tells these two systems apart at 95%."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


@dataclass
class MetricComparison:
    metric: str
    documents: list[str]  # the documents every system has a value for
    left_out: dict[str, str]  # other documents -> which systems lack a value, and why
    means: list[SystemMean] = field(default_factory=list)
    pairs: list[PairDifference] = field(default_factory=list)
    rank_stability: dict[str, float] = field(default_factory=dict)  # system -> share of resamples keeping its rank

    @property
    def leader(self) -> str | None:
        return max(self.means, key=lambda m: m.mean).system if self.means else None


def _interval(sample: np.ndarray, seed: int) -> tuple[float | None, float | None, np.ndarray | None]:
    if len(sample) < 2:
        return None, None, None
    result = stats.bootstrap((sample,), np.mean, n_resamples=N_RESAMPLES, confidence_level=CONFIDENCE,
                             method="percentile", random_state=seed)
    low, high = result.confidence_interval
    return float(low), float(high), result.bootstrap_distribution


def compare(table: ScoreTable, metric: str, seed: int = 0) -> MetricComparison:
    values = table.values[metric]
    complete = ~np.isnan(values).any(axis=1)
    left_out = {}
    for i in np.flatnonzero(~complete):
        doc = table.documents[i]
        lacking = [f"{s} ({table.why_missing(metric, doc, s)})"
                   for j, s in enumerate(table.systems) if np.isnan(values[i, j])]
        left_out[doc] = "no value for " + "; ".join(lacking)
    paired = values[complete]
    out = MetricComparison(metric, [d for d, keep in zip(table.documents, complete) if keep], left_out)
    if paired.shape[0] == 0:
        return out
    for j, system in enumerate(table.systems):
        low, high, _ = _interval(paired[:, j], seed)
        out.means.append(SystemMean(system, float(paired[:, j].mean()), low, high))
    for (ja, a), (jb, b) in itertools.combinations(enumerate(table.systems), 2):
        difference = paired[:, ja] - paired[:, jb]
        low, high, distribution = _interval(difference, seed)
        p_better = None if distribution is None else float((distribution > 0).mean())
        out.pairs.append(PairDifference(a, b, float(difference.mean()), low, high, p_better))
    out.rank_stability = _rank_stability(paired, table.systems, seed)
    return out


def _ranks(means: np.ndarray) -> np.ndarray:
    """Rank 1 = highest mean; ties share the best rank (scipy's "min" method on the negated means)."""
    return stats.rankdata(-means, method="min", axis=-1)


def _rank_stability(paired: np.ndarray, systems: list[str], seed: int) -> dict[str, float]:
    if paired.shape[0] < 2:
        return {}
    rng = np.random.default_rng(seed)
    resampled = paired[rng.integers(0, paired.shape[0], size=(N_RESAMPLES, paired.shape[0]))].mean(axis=1)
    kept = (_ranks(resampled) == _ranks(paired.mean(axis=0))).mean(axis=0)
    return {system: float(share) for system, share in zip(systems, kept)}
