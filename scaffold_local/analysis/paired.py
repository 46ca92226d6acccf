"""Paired system comparison for one metric: means over the documents every system has a value for,
with percentile-bootstrap 95% intervals over documents (scipy); every pair's paired difference with
a paired-t 95% interval, its p-value Holm-adjusted over the metric's pairs, and P(A > B); and how
often each system keeps its rank when the documents are resampled. Seeded: reruns agree.

Differences use the paired t-test, not the percentile bootstrap: under no true difference the
percentile interval excludes 0 far more often than 5% with few documents (11-17% at 5, 8-10% at
10), while the t-test stays at or below 5%; the simulation in tests/test_analysis.py shows both."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from .scores import CEILING, FLOOR, ScoreTable

N_RESAMPLES = 2000
CONFIDENCE = 0.95
SAME = 1e-9  # differences closer than this are one value up to float rounding (0.5 - 0.4 and 0.7 - 0.6)
# With every document in one direction an exact two-sided sign test gives p = 2 / 2^n: 0.0625 at 5
# documents, 0.031 at 6. Below 6 no outcome is significant without assuming a distribution.
MIN_DOCUMENTS = 6
TOO_FEW_DOCUMENTS = (f"fewer than {MIN_DOCUMENTS} documents: even a difference in the same direction on every "
                     "document is not significant at 5% by an exact sign test")


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
    documents: int  # how many: the common documents
    low: float | None  # paired-t 95% interval of the difference; None with fewer than two documents
    high: float | None
    p_value: float | None  # two-sided, of the same paired t-test
    p_holm: float | None  # p_value Holm-adjusted over all pairs of this metric
    p_a_better: float | None  # share of resamples in which a's mean exceeds b's, a tie counting half

    @property
    def not_assessed(self) -> str | None:
        """Why the pair is not called separated whatever its p-value, or None."""
        return TOO_FEW_DOCUMENTS if self.documents < MIN_DOCUMENTS else None

    @property
    def separated(self) -> bool:
        """The metric tells these two systems apart at 5%, counting all pairs of the metric (Holm)."""
        return self.not_assessed is None and self.p_holm is not None and self.p_holm < 1 - CONFIDENCE


@dataclass
class MetricComparison:
    metric: str
    documents: list[str]  # the documents every system has a value for
    left_out: dict[str, str]  # other documents -> which systems lack a value, and why
    means: list[SystemMean] = field(default_factory=list)
    pairs: list[PairDifference] = field(default_factory=list)
    rank_stability: dict[str, float] = field(default_factory=dict)  # system -> share of resamples keeping its rank

    @property
    def leaders(self) -> list[str]:
        """The systems at the highest paired mean: several where they tie (in name order)."""
        if not self.means:
            return []
        top = max(m.mean for m in self.means)
        return sorted(m.system for m in self.means if top - m.mean <= SAME)


def _interval(sample: np.ndarray, seed: int) -> tuple[float | None, float | None]:
    if len(sample) < 2:
        return None, None
    result = stats.bootstrap((sample,), np.mean, n_resamples=N_RESAMPLES, confidence_level=CONFIDENCE,
                             method="percentile", random_state=seed)
    low, high = result.confidence_interval
    return float(low), float(high)


def paired_t_test(differences: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paired t-test of no difference along the last axis (two or more documents): the 95% interval
    of the mean difference and the two-sided p. When every difference is equal t is 0/0 or infinite:
    the interval is that value and p is the exact sign test's (2 / 2^n, or 1 for no difference)."""
    n = differences.shape[-1]
    mean = differences.mean(axis=-1)
    standard_error = differences.std(axis=-1, ddof=1) / np.sqrt(n)
    constant = np.ptp(differences, axis=-1) <= SAME
    t = np.abs(mean) / np.where(constant, 1.0, standard_error)  # constant rows take the sign test's p below
    p = np.where(constant, np.where(np.abs(mean) > SAME, min(1.0, 2.0 ** (1 - n)), 1.0), 2 * stats.t.sf(t, n - 1))
    half_width = stats.t.ppf((1 + CONFIDENCE) / 2, n - 1) * standard_error
    return mean - half_width, mean + half_width, p


def holm_adjusted(p: np.ndarray) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest of k p-values times (k - i + 1), kept monotone."""
    order = np.argsort(p)
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order]), 1.0)
    return adjusted.tolist()


def compare(table: ScoreTable, metric: str, seed: int = 0) -> MetricComparison:
    values = table.values[metric]
    complete = ~np.isnan(values).any(axis=1)
    left_out = {}
    for row in np.flatnonzero(~complete).tolist():
        doc = table.documents[row]
        lacking = [f"{s} ({table.why_missing(metric, doc, s)})"
                   for j, s in enumerate(table.systems) if np.isnan(values[row, j])]
        left_out[doc] = "no value for " + "; ".join(lacking)
    paired = values[complete]
    out = MetricComparison(metric, [d for d, keep in zip(table.documents, complete) if keep], left_out)
    if paired.shape[0] == 0:
        return out
    for j, system in enumerate(table.systems):
        low, high = _interval(paired[:, j], seed)
        out.means.append(SystemMean(system, float(paired[:, j].mean()), low, high))
    n = paired.shape[0]
    pairs = list(itertools.combinations(range(len(table.systems)), 2))
    differences = np.array([paired[:, ja] - paired[:, jb] for ja, jb in pairs]).reshape(len(pairs), n)
    if n < 2:  # one document: a difference, nothing to test it against
        out.pairs = [PairDifference(table.systems[ja], table.systems[jb], float(d.mean()), n, None, None, None, None, None)
                     for (ja, jb), d in zip(pairs, differences)]
        return out
    lows, highs, p_values = paired_t_test(differences)
    widest = CEILING[metric] - FLOOR[metric]  # no difference of two means lies beyond the metric's range
    lows, highs = np.maximum(lows, -widest), np.minimum(highs, widest)
    p_holm = holm_adjusted(p_values)
    resampled = _resampled_means(paired, seed)
    for i, (ja, jb) in enumerate(pairs):
        out.pairs.append(PairDifference(table.systems[ja], table.systems[jb], float(differences[i].mean()), n,
                                        float(lows[i]), float(highs[i]), float(p_values[i]), p_holm[i],
                                        _share_greater(resampled[:, ja] - resampled[:, jb])))
    kept = (_ranks(resampled) == _ranks(paired.mean(axis=0))).mean(axis=0)
    out.rank_stability = {system: float(share) for system, share in zip(table.systems, kept)}
    return out


def _share_greater(differences: np.ndarray) -> float:
    """Share of differences above 0, one at 0 counting half: P(A > B) + P(B > A) = 1."""
    return float((differences > SAME).mean() + 0.5 * (np.abs(differences) <= SAME).mean())


def _ranks(means: np.ndarray) -> np.ndarray:
    """Rank 1 = highest mean; ties share the best rank (scipy's "min" method on the negated means)."""
    return stats.rankdata(-means, method="min", axis=-1)


def _resampled_means(paired: np.ndarray, seed: int) -> np.ndarray:
    """Each system's mean in N_RESAMPLES resamples of the documents, one set for P(A > B) and the ranks."""
    rng = np.random.default_rng(seed)
    return paired[rng.integers(0, paired.shape[0], size=(N_RESAMPLES, paired.shape[0]))].mean(axis=1)
