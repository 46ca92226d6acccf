"""`show`: a finished run's per-system table, or the evidence behind one summary's scores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from .. import runs
from ..quality import describe_run
from ..report import evidence, systems_table
from .options import DsScaleOpt, check_ds_scale
from .output import console, decision, print_breakdowns

app = typer.Typer()


@app.command()
def show(
    run_dir: Annotated[Path, typer.Argument(help="a run folder (printed by `score`)")],
    summary: Annotated[str | None, typer.Option(
        "--summary", "-s", help="DOC_ID/SYSTEM: item-level evidence for one summary")] = None,
    ds_scale: DsScaleOpt = 10,
) -> None:
    """Print a finished run: the per-system table, or the evidence behind one summary's scores."""
    check_ds_scale(ds_scale)
    run = runs.open(run_dir)
    systems = run.systems
    if summary is not None:
        console.print(evidence(run, summary, ds_scale))
        return
    spec = run.spec
    console.print(systems_table(systems, f"{run_dir.name}: per-system means", ds_scale))
    print_breakdowns(run_dir, ds_scale)
    console.print(f"judge: {spec.judge.get('name')} ({spec.judge.get('backend')}, {spec.judge.get('model')}); "
                  f"method version {spec.method_version}; {decision(spec.decision_threshold)}; "
                  f"scaffolds: {spec.scaffold_source.describe()}; "
                  f"summaries: {len(run.summaries)}; status: {spec.status}; created {spec.created_at}", highlight=False)
    console.print(escape(describe_run(run)), highlight=False)
    notes = run.scaffold_notes()
    if notes:
        console.print("scaffold assembly: " + ", ".join(f"{action}: {n}" for action, n in sorted(notes.items()))
                      + " (details with --summary)", highlight=False)
