"""The run's systems ranked several ways side by side: by the scaffold metrics' means, by the direct
score, by Bradley-Terry over grounded pairwise preferences and, where the run read them (`score
--pairwise`), over the holistic judge's pairwise preferences; how many system pairs each ranking
separates, and Kendall's tau of each with the grounded pairwise one. A user sees whether pairwise
comparison escapes the saturation of a holistic score on their own data."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scipy.stats import kendalltau

from ..runs.holistic_pairs import HolisticPair, position_bias
from ..runs.run import Run
from .bradley_terry import Preference, rank
from .items import ItemVerdicts, item_verdicts
from .paired import MIN_DOCUMENTS, MetricComparison, compare
from .pairwise import grounded_preferences
from .scores import ScoreTable

RANKED_METRICS = ("fps", "qps", "eps", "ds")
GROUNDED = "grounded pairwise"
HOLISTIC = "holistic pairwise"


@dataclass(frozen=True)
class RankingRow:
    name: str  # a metric, or GROUNDED
    order: list[str]  # best first
    scores: dict[str, float]  # system -> mean, or Bradley-Terry strength
    pairs_separated: int  # at 5%, Holm-adjusted: paired t-tests for a metric, resampled documents for pairwise
    pairs: int
    tau_with_grounded: float | None  # Kendall's tau with the grounded pairwise scores (None: undefined)
    not_assessed: str | None = None  # why no pair is called separated (too few documents), or None
    note: str | None = None  # what else a reader needs (the holistic judge's position bias)

    def ordered(self, shown: Callable[[float], str]) -> str:
        """'a 0.85 > b 0.62 = c 0.62': best first, "=" between values that show alike."""
        text = ""
        for k, system in enumerate(self.order):
            if k:
                text += " = " if shown(self.scores[system]) == shown(self.scores[self.order[k - 1]]) else " > "
            text += f"{system} {shown(self.scores[system])}"
        return text


def side_by_side(comparisons: dict[str, MetricComparison], items: Sequence[ItemVerdicts], systems: Sequence[str],
                 seed: int = 0, holistic: Sequence[HolisticPair] = ()) -> list[RankingRow]:
    evidence = grounded_preferences(items, systems)
    preferences = [Preference(e.doc_id, e.a, e.b, e.preference) for e in evidence]
    grounded = rank(preferences, systems, seed=seed)
    strength = {s.system: s.value for s in grounded.strengths}
    rows = [RankingRow(GROUNDED, grounded.order, strength, grounded.pairs_separated, grounded.pairs,
                       1.0 if len(set(strength.values())) > 1 else None, grounded.not_assessed)]
    read = [p for p in holistic if p.failure is None]
    if read:
        ranked = rank([Preference(p.doc_id, p.a, p.b, p.value) for p in read], systems, seed=seed)
        scores = {s.system: s.value for s in ranked.strengths}
        bias = position_bias(read)
        failed = len(holistic) - len(read)
        note = (bias.describe() if bias else "") + (f"; {failed} pairs without an answer left out" if failed else "")
        rows.append(RankingRow(HOLISTIC, ranked.order, scores, ranked.pairs_separated, ranked.pairs,
                               _tau(scores, strength), ranked.not_assessed, note))
    for metric in RANKED_METRICS:
        comparison = comparisons.get(metric)
        if comparison is None or not comparison.means:
            continue
        means = {m.system: m.mean for m in comparison.means}
        order = sorted(means, key=lambda s: (-means[s], s))
        not_assessed = comparison.pairs[0].not_assessed if comparison.pairs else None
        rows.append(RankingRow(metric, order, means, sum(p.separated for p in comparison.pairs), len(comparison.pairs),
                               _tau(means, strength), not_assessed and f"fewer than {MIN_DOCUMENTS} documents"))
    return rows


def three_digits(value: float) -> str:
    return f"{value:.3f}"


def rankings_of(run: Run, seed: int = 0) -> list[RankingRow]:
    """`side_by_side` for one run, without the rest of its analysis."""
    table = ScoreTable.from_run(run)
    return side_by_side({m: compare(table, m, seed) for m in RANKED_METRICS}, item_verdicts(run), table.systems, seed,
                        run.holistic_pairs)


def _tau(a: dict[str, float], b: dict[str, float]) -> float | None:
    shared = [s for s in a if s in b]
    if len(shared) < 2 or len({a[s] for s in shared}) < 2 or len({b[s] for s in shared}) < 2:
        return None  # a constant ranking has no order to agree with
    tau = kendalltau([a[s] for s in shared], [b[s] for s in shared]).statistic
    return None if math.isnan(tau) else float(tau)
