"""`compare`: one input scored by several judges (or one judge with several seeds), and how they agree."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import runs
from ..analysis.run_analysis import analyze_runs
from ..report.html import write_report
from .options import (
    DEFAULT_STORE,
    DocIdField,
    DocumentField,
    InputArg,
    MethodOpt,
    ReferenceField,
    StoreOpt,
    SummaryField,
    SystemField,
    kept_in_context,
    read_input,
)
from .output import announce, command_app, console, err, print_notes, rich_progress

app = command_app()


@app.command(short_help="score one input with several judges, side by side")
def compare(
    input_path: InputArg,
    model: Annotated[list[str], typer.Option("--model", "-m", help="a judge config; give two or more, or one with --seeds")],
    store: StoreOpt = DEFAULT_STORE,
    shared_scaffold: Annotated[bool, typer.Option(
        "--shared-scaffold/--own-scaffolds",
        help="align every judge against the first judge's scaffolds (isolates judging), "
             "or let each extract its own")] = True,
    seeds: Annotated[int, typer.Option(min=0, help="rerun one judge with this many seeds (self-consistency)")] = 0,
    temperature: Annotated[float | None, typer.Option(help="sampling temperature of the --seeds reruns")] = None,
    method_version: MethodOpt = None,
    out: Annotated[Path | None, typer.Option(help="folder for the report [default: <store>/comparisons/<name>]")] = None,
    document_field: DocumentField = "document",
    summary_field: SummaryField = "summary",
    system_field: SystemField = "system",
    reference_field: ReferenceField = "reference",
    doc_id_field: DocIdField = "doc_id",
    pairwise: Annotated[str | None, typer.Option(help=(
        "also ask each judge which of two summaries is better (score --pairwise): `all` pairs, or one system "
        "against every other"))] = None,
) -> None:
    """Score one input with several judges (or one judge with several seeds) and report how they agree."""
    loaded = read_input(input_path, document_field, summary_field, system_field, reference_field, doc_id_field, None)
    plan = runs.plan_comparison(model, loaded, seeds=seeds, temperature=temperature, shared_scaffold=shared_scaffold,
                                method=method_version, pairwise=pairwise)
    configs = plan.configs
    kept_in_context(plan.prepared, configs)
    print_notes(plan.notes)
    err.print(f"judges: {', '.join(c.name for c in configs)}; "
              f"{'one shared scaffold' if shared_scaffold else 'each judge its own scaffolds'}", highlight=False)
    run_dirs = plan.execute(store, rich_progress, announce)
    target = out or store / "comparisons" / "-vs-".join(dict.fromkeys(c.name for c in configs))[:120]
    page = write_report(analyze_runs([runs.load(d) for d in run_dirs]), target)
    for run_dir in run_dirs:
        console.print(f"run: {run_dir}", highlight=False)
    console.print(f"report: {page}", highlight=False)
