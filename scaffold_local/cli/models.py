"""`models`: the model configs in model_configs/."""

from __future__ import annotations

from rich.table import Table

from ..runs import DEFAULT_MODEL, available_configs
from .output import command_app, console

app = command_app()


@app.command(short_help="list the judge configs")
def models() -> None:
    """List the model configs in model_configs/."""
    table = Table(title="Model configs", title_justify="left")
    for column in ("name", "backend", "model", "structured outputs", "description"):
        table.add_column(column, overflow="fold")
    for c in available_configs():
        table.add_row(c.name + (" (default)" if c.name == DEFAULT_MODEL else ""), c.backend, c.model,
                      c.structured_outputs, c.description)
    console.print(table)
