"""The table `extract` prints: each document's scaffold, its judged items by label in every view, and where the store
keeps it (or why the document has none)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from ..method.scaffold import Scaffold
from ..method.schemas import LABELS
from ..method.versions import MethodVersion
from ..method.views import ViewSpec, views_of


def scaffold_counts_table(scaffolds: Mapping[str, Scaffold], unavailable: Mapping[str, str], method: MethodVersion,
                          path_of: Callable[[str], Path], title: str) -> Table:
    """One row a document: main/supporting/other items of each view, and the scaffold's file (or why it has none)."""
    table = Table(title=title, title_justify="left")
    table.add_column("doc_id")
    views = list(views_of(method).values())
    for spec in views:  # judged items by label: facts, questions, entity attributes
        table.add_column(f"{spec.title.lower()} main/supp/other")
    table.add_column("scaffold")
    for doc_id, scaffold in scaffolds.items():
        table.add_row(doc_id, *_label_counts(views, scaffold), str(path_of(scaffold.key)))
    for doc_id, reason in unavailable.items():
        table.add_row(doc_id, *["-"] * len(views), f"[red]{escape(reason)}[/red]")
    return table


def _label_counts(views: Iterable[ViewSpec], scaffold: Scaffold) -> list[str]:
    counts = []
    for spec in views:
        items = scaffold.view(spec.name)
        labels = [] if items is None else [i.label for i in spec.judged(items)]
        counts.append("failed" if items is None else "/".join(str(labels.count(label)) for label in LABELS))
    return counts
