"""`report`: the analysis of one or more runs as an offline HTML page and tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import runs
from ..analysis.run_analysis import analyze_runs
from ..report.html import write_report
from .output import console

app = typer.Typer()


@app.command()
def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="one or more run folders; several: a judge comparison")],
    out: Annotated[Path | None, typer.Option(
        help="folder for report.html and the tables [default: next to the run]")] = None,
    seed: Annotated[int, typer.Option(help="seed of the bootstrap resamples")] = 0,
) -> None:
    """Write the analysis of runs: an offline HTML page with plots, and every table as JSON, CSV and Parquet."""
    opened = [runs.open(path) for path in run_dirs]
    for run in opened:
        _ = run.systems  # a run that has not finished scoring says so here
    target = out or (run_dirs[0] / "report" if len(run_dirs) == 1 else run_dirs[0].parent / "report")
    page = write_report(analyze_runs(opened, seed), target)
    console.print(f"report: {page}  (tables: {target}/*.csv, *.parquet, analysis.json)", highlight=False)
