"""`report`: the analysis of one or more runs as an offline HTML page and tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import runs
from ..analysis.groups import grouped_vs_individual
from ..analysis.run_analysis import analyze_runs
from ..errors import UsageError
from ..report.console import budget_table, grouped_vs_individual_table, member_table
from ..report.html import write_report
from ..report.tables import grouped_vs_individual_tables, write_tables
from .options import WordBudgetOpt
from .output import command_app, console

app = command_app()


@app.command(short_help="write an offline HTML report of runs")
def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="one or more run folders; several: a judge comparison")],
    out: Annotated[Path | None, typer.Option(
        help="folder for report.html and the tables [default: next to the run]")] = None,
    seed: Annotated[int, typer.Option(help="seed of the bootstrap resamples")] = 0,
    mlflow: Annotated[str | None, typer.Option(
        help="also log each run's metrics, intervals and this report to MLflow: a tracking folder or URI "
             "(needs scaffold-local[mlflow])")] = None,
    mlflow_experiment: Annotated[str, typer.Option(help="the MLflow experiment")] = "scaffold_local",
    word_budget: WordBudgetOpt = None,
    individual: Annotated[Path | None, typer.Option(
        help="a run of the same documents summarised one by one, set beside the grouped run given (the "
             "first): each system's means in both, and each member document's FC in both")] = None,
) -> None:
    """Write the analysis of runs: an offline HTML page with plots, and every table as JSON, CSV and Parquet."""
    # Every argument is checked before anything is written.
    resolved = [path.resolve() for path in run_dirs]
    if len(set(resolved)) < len(resolved):
        twice = next(path for path in run_dirs if resolved.count(path.resolve()) > 1)
        raise UsageError(f"{twice} is given twice: a judge comparison needs runs of different judges or settings",
                         hint="give each run folder once; one folder alone gives that run's report")
    opened = [runs.load(path) for path in run_dirs]
    for run in opened:
        _ = run.systems  # a run that has not finished scoring says so here
    side = None
    if individual is not None:
        try:
            side = grouped_vs_individual(opened[0], runs.load(individual))
        except ValueError as exc:
            raise UsageError(f"--individual: {exc}") from None
    target = out or (run_dirs[0] / "report" if len(run_dirs) == 1 else run_dirs[0].parent / "report")
    analysis = analyze_runs(opened, seed, word_budget)  # a budget given here, else each run's own
    page = write_report(analysis, target)
    for run_analysis in analysis.runs:
        if run_analysis.budget is not None:
            if len(opened) > 1:
                console.print(f"{run_analysis.run.dir.name}:", highlight=False)
            console.print(budget_table(run_analysis.budget))
        if run_analysis.members is not None:
            console.print(member_table(run_analysis.members))
    if side is not None:
        console.print(grouped_vs_individual_table(side))
        write_tables(grouped_vs_individual_tables(side), target, "grouped_vs_individual.json")
    console.print(f"report: {page}  (tables: {target}/*.csv, *.parquet, analysis.json)", highlight=False)
    if mlflow is not None:
        from ..integrations.mlflow_tracking import log_analysis  # only when asked: MLflow is an optional extra

        ids = log_analysis(analysis, target, mlflow, mlflow_experiment)
        console.print(f"MLflow: {len(ids)} run(s) in experiment {mlflow_experiment!r} at {mlflow}: {', '.join(ids)}",
                      highlight=False)
