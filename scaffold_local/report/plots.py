"""The report's plots, drawn with matplotlib as SVG and inlined as data URIs: the page needs no
network, and no text inside a plot can reach the page's markup."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..analysis.judges import JudgeComparison
from ..analysis.paired import MIN_DOCUMENTS
from ..analysis.run_analysis import RunAnalysis
from ..analysis.scores import CEILING, FLOOR
from .tables import metric_name

PLOTTED = ("fps", "qps", "eps", "f", "fc", "main_fc", "supp_fc", "fact_focus", "qc", "ds", "rouge_l")


def _figure(width: float, height: float) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "scaffold_local", "font.size": 9})
    from matplotlib import pyplot as plt

    return plt.figure(figsize=(width, height))


def _data_uri(figure: Any) -> str:
    from matplotlib import pyplot as plt

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue().encode()).decode()


def system_means(analysis: RunAnalysis, order: Sequence[str]) -> str | None:
    """Per-system paired means, one panel per metric, systems in `order` (the table's) top to bottom; bootstrap 95%
    intervals where a metric has enough documents to tell systems apart."""
    metrics = [m for m in PLOTTED if analysis.comparisons[m].means]
    if not metrics:
        return None
    columns = 4
    rows = -(-len(metrics) // columns)
    figure = _figure(11, 1.0 + 0.35 * len(analysis.table.systems) * rows + 0.6 * rows)
    axes = figure.subplots(rows, columns, sharey=True, squeeze=False).ravel()
    for axis, metric in zip(axes, metrics):
        comparison = analysis.comparisons[metric]
        means = sorted(comparison.means, key=lambda m: order.index(m.system) if m.system in order else len(order))
        y = np.arange(len(means))
        centre = [m.mean for m in means]
        low = [m.mean - (m.low if m.low is not None else m.mean) for m in means]
        high = [(m.high if m.high is not None else m.mean) - m.mean for m in means]
        intervals = [low, high] if len(comparison.documents) >= MIN_DOCUMENTS else None
        axis.errorbar(centre, y, xerr=intervals, fmt="o", color="#1f5f99", ecolor="#7fa7cc", capsize=3)
        axis.set_yticks(y, [m.system for m in means])
        axis.set_xlim(FLOOR[metric] - 0.02 * CEILING[metric], CEILING[metric] * 1.02)
        axis.set_title(f"{metric_name(metric)} (paired mean, {len(analysis.comparisons[metric].documents)} docs)")
        axis.grid(axis="x", alpha=0.3)
    axes[0].invert_yaxis()  # shared: the first system on top in every panel
    for axis in axes[len(metrics):]:
        axis.set_visible(False)
    figure.tight_layout()
    return _data_uri(figure)


def spread(analysis: RunAnalysis) -> str | None:
    """Best-to-worst spread of system means as a share of each metric's range: red where the systems are
    barely apart (flat), amber where they are apart but most summaries sit at the ceiling (saturating)."""
    rows = [r for r in analysis.resolving if r.spread is not None]
    if not rows:
        return None
    figure = _figure(8, 0.35 * len(rows) + 1)
    axis = figure.add_subplot(1, 1, 1)
    shares = [r.spread / (CEILING[r.metric] - FLOOR[r.metric]) for r in rows]  # type: ignore[operator]
    colours = ["#c0392b" if r.flat else "#d68910" if r.saturating else "#1f5f99" for r in rows]
    axis.barh([metric_name(r.metric) for r in rows], shares, color=colours)
    axis.invert_yaxis()
    axis.set_xlabel("best minus worst system mean, share of the metric's range\n"
                    "(red: flat, systems barely apart; amber: saturating, most summaries at the ceiling)")
    axis.grid(axis="x", alpha=0.3)
    return _data_uri(figure)


def correlation_heatmap(analysis: RunAnalysis) -> str | None:
    agreement = analysis.agreement
    if len(agreement.metrics) < 2:
        return None
    matrix = np.array([[np.nan if v is None else v for v in row] for row in agreement.spearman], dtype=float)
    names = [metric_name(m) for m in agreement.metrics]
    figure = _figure(7.5, 6.5)
    axis = figure.add_subplot(1, 1, 1)
    image = axis.imshow(matrix, cmap="RdBu", vmin=-1, vmax=1)
    axis.set_xticks(range(len(names)), names, rotation=60, ha="right")
    axis.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for j in range(len(names)):
            if not np.isnan(matrix[i, j]):
                axis.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7)
    figure.colorbar(image, ax=axis, label="Spearman's rho over summaries")
    return _data_uri(figure)


def length_scatter(analysis: RunAnalysis) -> str | None:
    table = analysis.table
    metrics = [m for m in ("fps", "fc", "ds") if m in analysis.length.spearman_with_length]
    if not metrics or np.isnan(table.words).all():
        return None
    figure = _figure(11, 3.2)
    for k, metric in enumerate(metrics, 1):
        axis = figure.add_subplot(1, len(metrics), k)
        for j, system in enumerate(table.systems):
            axis.scatter(table.words[:, j], table.values[metric][:, j], label=system, s=18, alpha=0.8)
        rho = analysis.length.spearman_with_length[metric]
        axis.set_title(f"{metric_name(metric)} vs words" + (f" (rho {rho:.2f})" if rho is not None else ""))
        axis.set_xlabel("summary length (words)")
        axis.grid(alpha=0.3)
    figure.axes[0].legend(fontsize=7)
    figure.tight_layout()
    return _data_uri(figure)


def judge_agreement(judges: JudgeComparison) -> str | None:
    rows = [a for a in judges.agreement if a.items]
    if not rows:
        return None
    figure = _figure(8, 0.4 * len(rows) + 1.2)
    axis = figure.add_subplot(1, 1, 1)
    labels = [f"{a.view} / {a.label} ({a.items})" for a in rows]
    y = np.arange(len(rows))
    axis.barh(y - 0.2, [a.percent or 0 for a in rows], height=0.4, label="percent agreement", color="#7fa7cc")
    axis.barh(y + 0.2, [a.cohen_kappa if a.cohen_kappa is not None else 0 for a in rows], height=0.4,
              label="Cohen's kappa", color="#1f5f99")
    axis.set_yticks(y, labels)
    axis.invert_yaxis()
    axis.set_xlim(-1, 1)
    axis.axvline(0, color="black", linewidth=0.5)
    axis.legend(fontsize=7)
    axis.set_title("item-level agreement between judges, by view / label (items)")
    return _data_uri(figure)
