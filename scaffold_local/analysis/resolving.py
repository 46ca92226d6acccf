"""Resolving power per metric (the paper's Figure 2 and Table 11 as one table): can the metric tell
the systems apart, or has it saturated?"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .paired import MetricComparison
from .scores import CEILING, FLOOR, ScoreTable

# Flags: saturating when at least half the summaries sit at the metric's ceiling; flat when the best
# and worst systems are less than 5% of its range apart (at the ceiling, at the floor or anywhere).
SATURATED_AT_CEILING = 0.5
FLAT_SPREAD = 0.05


@dataclass
class ResolvingPower:
    metric: str
    spread: float | None  # best minus worst system mean, over the paired documents
    relative_spread: float | None  # best / worst (None when the worst is 0)
    at_ceiling: float | None  # share of summaries at the metric's best possible value
    pairs_separated: int  # system pairs separated at 5%: Holm-adjusted paired t-test, enough documents
    pairs: int
    separation_not_assessed: str | None  # why no pair can be separated (too few documents), or None
    saturating: bool  # most summaries at the ceiling
    flat: bool  # systems barely apart

    @property
    def resolves(self) -> bool:
        return not (self.saturating or self.flat)


def resolving_power(table: ScoreTable, comparison: MetricComparison) -> ResolvingPower:
    metric = comparison.metric
    values = table.values[metric]
    defined = values[~np.isnan(values)]
    at_ceiling = float(np.isclose(defined, CEILING[metric]).mean()) if defined.size else None
    means = [m.mean for m in comparison.means]
    spread = max(means) - min(means) if means else None
    relative = max(means) / min(means) if means and min(means) > 0 else None
    scale = CEILING[metric] - FLOOR[metric]
    saturating = at_ceiling is not None and at_ceiling >= SATURATED_AT_CEILING
    flat = spread is not None and len(means) > 1 and spread < FLAT_SPREAD * scale
    not_assessed = comparison.pairs[0].not_assessed if comparison.pairs else None
    return ResolvingPower(metric, spread, relative, at_ceiling, sum(p.separated for p in comparison.pairs),
                          len(comparison.pairs), not_assessed, saturating, flat)
