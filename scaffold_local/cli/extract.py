"""`extract`: extract and store scaffolds only (no judgments), optionally checking each one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ..data.user_scaffolds import scaffold_line
from ..method.scaffold import Scaffold
from ..method.schemas import LABELS
from ..method.views import ViewSpec, views_of
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
    make_pipeline,
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
    pipeline = make_pipeline(model, store, batch_requests, method_version)
    prepared = pipeline.prepare(loaded, extraction=True)
    loaded = kept_in_context(prepared, [pipeline.config])
    print_notes(prepared.notes)
    try:
        outcome = pipeline.document_scaffolds(loaded, loaded.documents)
        qualities = pipeline.check(outcome.scaffolds, loaded.documents) if check else []
    finally:
        pipeline.close()

    table = Table(title=f"Scaffolds ({outcome.computed} extracted, {outcome.reused} reused)", title_justify="left")
    table.add_column("doc_id")
    views = views_of(pipeline.method).values()
    for spec in views:  # judged items by label: facts, questions, entity attributes
        table.add_column(f"{spec.title.lower()} main/supp/other")
    table.add_column("scaffold")
    for doc_id, scaffold in outcome.scaffolds.items():
        table.add_row(doc_id, *(_label_counts(spec, scaffold) for spec in views),
                      str(pipeline.scaffold_path(scaffold.key)))
    for doc_id, reason in outcome.unavailable.items():
        table.add_row(doc_id, *["-"] * len(views), f"[red]{escape(reason)}[/red]")
    console.print(table)
    if out is not None:
        who = f"{pipeline.config.name}, method version {pipeline.method.number}"
        out.write_text("".join(json.dumps(scaffold_line(s, who), ensure_ascii=False) + "\n"
                               for s in outcome.scaffolds.values()), encoding="utf-8")
        console.print(f"scaffolds written to {out} (score against them: --scaffold-file {out})", highlight=False)
    for quality in qualities:
        console.print(escape(quality.describe()), highlight=False)
    for doc_id, s in outcome.scaffolds.items():
        for view, reason in s.failures.items():
            err.print(f"[yellow]{escape(doc_id)}: {view} extraction failed: {escape(reason)}[/yellow]")


def _label_counts(spec: ViewSpec, scaffold: Scaffold) -> str:
    items = scaffold.view(spec.name)
    if items is None:
        return "failed"
    labels = [i.label for i in spec.judged(items)]
    return "/".join(str(labels.count(label)) for label in LABELS)
