"""A ranking from pairwise preferences: the Bradley-Terry model, P(A preferred to B) = sigmoid(s_A - s_B),
fitted by maximum likelihood with scipy's optimiser (a tie counts half a win each way), with intervals
from resampling documents.

A small L2 penalty (`alpha`, as choix's `opt_pairwise` has) keeps strengths finite where one system
wins every comparison, which a handful of documents often gives; `alpha=0` is the plain likelihood."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

# As for the metrics' paired tests: with fewer documents no separation is claimed, however one-sided the
# preferences (a handful of documents resamples into a handful of tables).
from .paired import MIN_DOCUMENTS, holm_adjusted

ALPHA = 0.01
RESAMPLES = 1000


@dataclass(frozen=True)
class Preference:
    doc_id: str
    a: str
    b: str
    value: float  # 1: A preferred, 0: B preferred, 0.5: a tie


@dataclass(frozen=True)
class Strength:
    system: str
    value: float  # centred: the strengths sum to zero
    low: float | None  # 95% percentile interval over resampled documents (None: fewer than MIN_DOCUMENTS)
    high: float | None


def fit(preferences: Sequence[Preference], systems: Sequence[str], alpha: float = ALPHA) -> np.ndarray:
    """Each system's strength (centred), maximising the penalised log-likelihood."""
    index = {s: k for k, s in enumerate(systems)}
    a = np.array([index[p.a] for p in preferences], dtype=int)
    b = np.array([index[p.b] for p in preferences], dtype=int)
    w = np.array([p.value for p in preferences], dtype=float)
    n = len(systems)

    def negative_log_likelihood(s: np.ndarray) -> tuple[float, np.ndarray]:
        d = s[a] - s[b]
        value = -(w * log_expit(d) + (1 - w) * log_expit(-d)).sum() + alpha * (s @ s)
        residual = w - expit(d)  # d(log-likelihood)/d(d)
        gradient = -np.bincount(a, residual, n) + np.bincount(b, residual, n) + 2 * alpha * s
        return float(value), gradient

    found = minimize(negative_log_likelihood, np.zeros(n), jac=True, method="L-BFGS-B")
    return found.x - found.x.mean()


@dataclass(frozen=True)
class Ranking:
    strengths: list[Strength]  # strongest first
    pairs_separated: int  # system pairs whose strength difference is signed at 5%, Holm-adjusted over the pairs
    pairs: int
    documents: int

    @property
    def not_assessed(self) -> str | None:
        return f"fewer than {MIN_DOCUMENTS} documents" if self.documents < MIN_DOCUMENTS else None

    @property
    def order(self) -> list[str]:
        return [s.system for s in self.strengths]


def rank(preferences: Sequence[Preference], systems: Sequence[str], alpha: float = ALPHA,
         resamples: int = RESAMPLES, seed: int = 0) -> Ranking:
    """Strengths with their intervals, and the pairs they separate, over documents resampled with replacement."""
    values = fit(preferences, systems, alpha)
    documents = len({p.doc_id for p in preferences})
    samples = _resampled(preferences, systems, alpha, resamples, seed) if documents >= MIN_DOCUMENTS else None
    pairs = [(i, j) for i in range(len(systems)) for j in range(i + 1, len(systems))]
    if samples is None:
        found = [Strength(s, float(values[k]), None, None) for k, s in enumerate(systems)]
        return Ranking(sorted(found, key=lambda x: (-x.value, x.system)), 0, len(pairs), documents)
    low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    found = [Strength(s, float(values[k]), float(low[k]), float(high[k])) for k, s in enumerate(systems)]
    separated = separated_pairs(np.stack([samples[:, i] - samples[:, j] for i, j in pairs], axis=1))
    return Ranking(sorted(found, key=lambda x: (-x.value, x.system)), separated, len(pairs), documents)


def separated_pairs(differences: np.ndarray, level: float = 0.05) -> int:
    """Pairs (columns of resampled strength differences) whose sign the resamples settle: the bootstrap p-value,
    twice the share of resamples on the rarer side of 0, Holm-adjusted over the pairs as the metrics' tests are."""
    rarer_side = np.minimum((differences <= 0).mean(axis=0), (differences >= 0).mean(axis=0))
    return sum(p < level for p in holm_adjusted(np.minimum(2 * rarer_side, 1.0)))


def _resampled(preferences: Sequence[Preference], systems: Sequence[str], alpha: float, resamples: int,
               seed: int) -> np.ndarray:
    """Strengths refitted on documents drawn with replacement."""
    documents = list(dict.fromkeys(p.doc_id for p in preferences))
    by_document = [[p for p in preferences if p.doc_id == d] for d in documents]
    rng = np.random.default_rng(seed)
    return np.array([fit([p for d in rng.choice(len(documents), len(documents)) for p in by_document[d]], systems, alpha)
                     for _ in range(resamples)])
