"""A word budget: which summaries keep to it, and every metric for those that do and those that do
not (the paper's failure mode F4: a summary over its budget scores well by saying more, so a
system's means mix two populations). Words are counted by `text.count_words` (CJK by character)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ..method.metrics import METRICS
from ..runs.run import Run
from .scores import ScoreTable

WITHIN, OVER = "within budget", "over budget"


@dataclass
class SystemCompliance:
    system: str
    summaries: int
    within: int
    mean_words: float | None
    max_words: int | None

    @property
    def rate(self) -> float | None:
        return self.within / self.summaries if self.summaries else None


@dataclass
class BudgetCompliance:
    budget: int
    systems: list[SystemCompliance]
    # metric -> system -> {WITHIN: (mean, n), OVER: (mean, n)}: means over the summaries where the metric is defined
    means: dict[str, dict[str, dict[str, tuple[float | None, int]]]]


def of_run(run: Run, budget: int | None = None) -> BudgetCompliance | None:
    """A run's compliance with `budget`, else with the budget it was scored under; None without one."""
    budget = budget or run.spec.word_budget
    if not budget:
        return None
    table = ScoreTable.from_run(run)
    return budget_compliance(table, budget, [m for m in METRICS if not np.isnan(table.values[m]).all()])


def check_budget(budget: int | None) -> None:
    if budget is not None and budget < 1:
        raise UsageError(f"a word budget is a positive number of words, not {budget}")


def budget_compliance(table: ScoreTable, budget: int, metrics: list[str]) -> BudgetCompliance:
    check_budget(budget)
    words = table.words
    scored = ~np.isnan(words)
    within = scored & (words <= budget)
    systems = []
    for j, system in enumerate(table.systems):
        counted = words[scored[:, j], j]
        systems.append(SystemCompliance(system, int(scored[:, j].sum()), int(within[:, j].sum()),
                                        float(counted.mean()) if counted.size else None,
                                        int(counted.max()) if counted.size else None))
    means: dict[str, dict[str, dict[str, tuple[float | None, int]]]] = {}
    for metric in metrics:
        values = table.values[metric]
        per_system = {}
        for j, system in enumerate(table.systems):
            split = {}
            for label, chosen in ((WITHIN, within[:, j]), (OVER, scored[:, j] & ~within[:, j])):
                defined = values[chosen, j][~np.isnan(values[chosen, j])]
                split[label] = (float(defined.mean()) if defined.size else None, int(defined.size))
            per_system[system] = split
        means[metric] = per_system
    return BudgetCompliance(budget, systems, means)
