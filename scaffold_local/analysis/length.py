"""Length effects: each metric against summary length in words (judges favour verbose text; FPS
penalises supporting detail)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from .scores import ScoreTable


@dataclass
class LengthEffect:
    mean_words: dict[str, float]  # per system
    spearman_with_length: dict[str, float | None]  # per metric, over summaries


def length_effect(table: ScoreTable, metrics: list[str]) -> LengthEffect:
    words = table.words
    mean_words = {s: float(np.nanmean(words[:, j])) for j, s in enumerate(table.systems) if not np.isnan(words[:, j]).all()}
    correlations: dict[str, float | None] = {}
    for metric in metrics:
        x, y = words.ravel(), table.values[metric].ravel()
        both = ~np.isnan(x) & ~np.isnan(y)
        constant = both.sum() < 3 or np.ptp(x[both]) == 0 or np.ptp(y[both]) == 0
        correlations[metric] = None if constant else float(stats.spearmanr(x[both], y[both])[0])
    return LengthEffect(mean_words, correlations)
