"""One self-contained HTML page for one or more runs: every plot an inline SVG data URI, the style
inline, no script and no network; every text from inputs and model outputs escaped (Jinja's
autoescape)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import jinja2

from ..analysis.paired import MIN_DOCUMENTS
from ..analysis.roles import DIAGNOSTICS, DIRECTIONS
from ..analysis.run_analysis import MultiRunAnalysis, RunAnalysis
from ..analysis.standings import HEADLINE, MEANINGS
from . import plots
from .console import run_standings
from .tables import all_tables, metric_name, write_tables

TEMPLATE = Path(__file__).with_name("page.html.jinja")


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _run_view(analysis: RunAnalysis) -> dict[str, Any]:
    run = analysis.run
    summaries = {(c["doc_id"], c["system"]): c["summary"] for c in run.candidates}
    ranked = run_standings(run, analysis.comparisons[HEADLINE])
    comparisons = [c for c in analysis.comparisons.values() if c.means]
    pairs = [p for c in comparisons for p in c.pairs]
    return {
        "analysis": analysis,
        "spec": run.spec,
        "summaries": summaries,
        "standings": ranked,
        "systems": [s for s in ranked.order if s in analysis.table.systems],
        "meanings": MEANINGS,
        # one count of documents for every metric, said once; the column of left-out documents only where some are
        "documents": sorted({len(c.documents) for c in comparisons}),
        "any_left_out": any(c.left_out for c in comparisons),
        "assessed": [p for p in pairs if not p.not_assessed],
        "not_assessed": sorted({p.not_assessed for p in pairs if p.not_assessed}),
        "plots": {"means": plots.system_means(analysis, ranked.order), "spread": plots.spread(analysis),
                  "heatmap": plots.correlation_heatmap(analysis), "length": plots.length_scatter(analysis)},
    }


def render_page(multi: MultiRunAnalysis) -> str:
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                                     lstrip_blocks=True)
    environment.filters["fmt"] = _fmt
    environment.filters["metric"] = metric_name
    template = environment.from_string(TEMPLATE.read_text(encoding="utf-8"))
    return template.render(
        runs=[_run_view(a) for a in multi.runs],
        judges=multi.judges,
        judge_plot=plots.judge_agreement(multi.judges) if multi.judges else None,
        consistency=multi.consistency,
        notes=multi.notes,
        min_documents=MIN_DOCUMENTS,
        directions=DIRECTIONS,
        diagnostics=DIAGNOSTICS,
        two_digits=lambda value: _fmt(value, 2),
        seed=multi.seed,
        generated=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )


def write_report(multi: MultiRunAnalysis, out_dir: Path) -> Path:
    """report.html, analysis.json and a CSV and a Parquet file per table, in `out_dir`."""
    write_tables(all_tables(multi), out_dir)
    page = out_dir / "report.html"
    page.write_text(render_page(multi), encoding="utf-8")
    return page
