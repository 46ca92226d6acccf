"""`extract`: extract and store scaffolds only (no judgments), optionally checking each one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from .. import runs
from ..report.scaffold_counts import scaffold_counts_table
from .options import (
    DEFAULT_STORE,
    BatchOpt,
    DocIdField,
    DocumentField,
    InputArg,
    MethodOpt,
    ModelOpt,
    SplitOpt,
    StoreOpt,
    SummaryField,
    SystemField,
    kept_in_context,
    open_judge,
    read_input,
)
from .output import command_app, console, err, print_notes

app = command_app()


@app.command(short_help="extract and store scaffolds only (no judgments)")
def extract(
    input_path: InputArg,
    model: ModelOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    document_field: DocumentField = "document",
    summary_field: SummaryField = "summary",
    system_field: SystemField = "system",
    doc_id_field: DocIdField = "doc_id",
    split: SplitOpt = None,
    batch_requests: BatchOpt = None,
    method_version: MethodOpt = None,
    check: Annotated[bool, typer.Option(
        "--check", help="also check each scaffold: near-duplicates, label balance, cut items, facts the judge "
                        "finds unsupported by the source")] = False,
    out: Annotated[Path | None, typer.Option(
        help="also write the scaffolds to this file (JSONL, one document per line), to score against with "
             "`score --scaffold-file` anywhere, without extracting")] = None,
) -> None:
    """Extract and store scaffolds only (no judgments)."""
    loaded = read_input(input_path, document_field, summary_field, system_field, None, doc_id_field, split)
    pipeline = open_judge(runs.JudgeOptions(model=model, store=store, method_version=method_version,
                                            batch_requests=batch_requests))
    try:
        plan = runs.plan_extraction(pipeline, loaded)
        kept_in_context(plan.prepared, [pipeline.config])
        print_notes(plan.notes)
        outcome, qualities = plan.execute(check)
    finally:
        pipeline.close()

    console.print(scaffold_counts_table(outcome.scaffolds, outcome.unavailable, pipeline.method, pipeline.scaffold_path,
                                        f"Scaffolds ({outcome.computed} extracted, {outcome.reused} reused)"))
    if out is not None:
        who = f"{pipeline.config.name}, method version {pipeline.method.number}"
        runs.write_scaffold_file(out, outcome.scaffolds.values(), who)
        console.print(f"scaffolds written to {out} (score against them: --scaffold-file {out})", highlight=False)
    for quality in qualities:
        console.print(escape(quality.describe()), highlight=False)
    for doc_id, s in outcome.scaffolds.items():
        for view, reason in s.failures.items():
            err.print(f"[yellow]{escape(doc_id)}: {view} extraction failed: {escape(reason)}[/yellow]")
