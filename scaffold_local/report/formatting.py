"""How a metric's value and name are printed: direct scores on their 1-10 scale (or DS/10), every other metric a
share with 3 decimals."""

from __future__ import annotations

from ..method.metrics import METRICS


def is_direct_score(key: str) -> bool:
    return key == "ds" or key.startswith("ds_")


def formatted(value: float | None, key: str, ds_scale: int = 10) -> str:
    """Direct scores on their 1-10 scale (2 decimals), or on the paper's 0-1 scale (DS/10) when
    `ds_scale` is 1; every other metric is a share (3 decimals)."""
    if value is None:
        return "–"
    if is_direct_score(key):
        return f"{value:.2f}" if ds_scale == 10 else f"{value / 10:.3f}"
    return f"{value:.3f}"


def metric_label(key: str, ds_scale: int) -> str:
    return METRICS[key] + (" /10" if ds_scale == 1 and is_direct_score(key) else "")
