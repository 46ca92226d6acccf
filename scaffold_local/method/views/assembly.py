"""What every view's assembly shares: extraction output -> scaffold items with ids.

Ids are assigned in output order (F1.., Q1.., E1 with E1.A1..) so a model never has to count.
Exact duplicates (case and whitespace aside) are dropped, as the extraction prompts forbid them;
every change is recorded as a note on the scaffold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..schemas import ScaffoldNote


def normalized(text: str) -> str:
    return " ".join(text.lower().split())


def unique(items: Sequence[dict[str, Any]], key: str, view: str, id_of: Callable[[int], str], noun: str
           ) -> tuple[list[dict[str, Any]], list[ScaffoldNote]]:
    """Items in order without exact repeats of `key`; a note for each repeat names the item kept."""
    first: dict[str, int] = {}
    kept: list[dict[str, Any]] = []
    notes = []
    for item in items:
        norm = normalized(item[key])
        if norm in first:
            notes.append(ScaffoldNote(view=view, action="dropped duplicate",
                                      detail=f"{noun} {item[key]!r} repeats {id_of(first[norm])}"))
            continue
        first[norm] = len(kept) + 1
        kept.append(item)
    return kept, notes


def rewritten(item: Any, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """The item (a pydantic model) with `change` applied to it and to every object nested in it (an
    entity's attributes), validated again: how a merge renames ids or sets labels in any view."""
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return change({k: walk(v) for k, v in value.items()})
        if isinstance(value, list | tuple):
            return [walk(v) for v in value]
        return value

    return type(item).model_validate(walk(item.model_dump()))
