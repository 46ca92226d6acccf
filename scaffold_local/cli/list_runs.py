"""`runs`: the runs of a store, newest first: name, judge, method version, status, documents, summaries, date."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from .. import runs
from ..errors import RunNotReadable, UsageError
from .options import DEFAULT_STORE
from .output import command_app, console, err

app = command_app()


def listed(store: Path) -> list[dict[str, Any]]:
    """Every run folder of a store as one row (newest first); a folder that is not a readable run is said, not listed."""
    rows = []
    for run in runs.in_store(store):
        if isinstance(run, RunNotReadable):
            err.print(f"[yellow]skipped: {escape(str(run))}[/yellow]", highlight=False)
            continue
        spec = run.spec
        rows.append({"run": run.dir.name, "judge": spec.judge.get("name"), "method_version": spec.method_version,
                     "status": spec.status, "documents": spec.counts.get("documents"),
                     "summaries": spec.counts.get("candidates"), "created": spec.created_at, "path": str(run.dir)})
    return sorted(rows, key=lambda r: r["created"] or "", reverse=True)


@app.command("runs", short_help="list the runs of a store, newest first")
def list_runs(
    store: Annotated[Path, typer.Argument(
        help="the store whose runs to list", envvar="SCAFFOLD_LOCAL_STORE")] = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON list on stdout, for scripts")] = False,
) -> None:
    """List the runs of a store, newest first: name, judge, method version, status, documents, summaries, date."""
    if not store.is_dir():
        raise UsageError(f"no store at {store}", hint="give the folder `score --store` wrote to (default: scaffold_store)")
    rows = listed(store)
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    table = Table(title=f"runs in {store} ({len(rows)})", title_justify="left")
    for column in ("run", "judge", "method version", "status", "documents", "summaries", "created"):
        table.add_column(column)
    for row in rows:
        table.add_row(escape(row["run"]), escape(str(row["judge"])), str(row["method_version"]), row["status"],
                      str(row["documents"] or "-"), str(row["summaries"] or "-"), str(row["created"] or "-"))
    console.print(table)
    if rows:
        console.print(f"a run's table: scaffold-local show {rows[0]['path']}", highlight=False)
