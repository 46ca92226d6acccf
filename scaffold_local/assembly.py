"""Scaffold assembly: the judge's extraction output for one view -> scaffold items with ids.

Ids are assigned in output order (F1.., Q1.., E1 with E1.A1..) so a model never has to count.
Exact duplicates (case and whitespace aside) are dropped, as the extraction prompts forbid them;
entities listed more than once under one name are merged, keeping every distinct attribute (they
all count in the EPS denominator). Every change is recorded as a note on the scaffold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .schemas import Attribute, Entity, Fact, KeyQuestion, ScaffoldNote, View

# (items with ids, notes on what was dropped or merged)

AssembledView = tuple[tuple[Any, ...], list[ScaffoldNote]]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _unique(items: Sequence[dict[str, Any]], key: str, view: View, id_of: Any, noun: str
            ) -> tuple[list[dict[str, Any]], list[ScaffoldNote]]:
    """Items in order without exact repeats of `key`; a note for each repeat names the item kept."""
    first: dict[str, int] = {}
    kept: list[dict[str, Any]] = []
    notes = []
    for item in items:
        norm = _norm(item[key])
        if norm in first:
            notes.append(ScaffoldNote(view=view, action="dropped duplicate",
                                      detail=f"{noun} {item[key]!r} repeats {id_of(first[norm])}"))
            continue
        first[norm] = len(kept) + 1
        kept.append(item)
    return kept, notes


def assemble_facts(parsed: Mapping[str, Any]) -> AssembledView:
    items, notes = _unique(parsed["facts"], "fact", "facts", lambda i: f"F{i}", "fact")
    return tuple(Fact(id=f"F{i}", text=f["fact"], label=f["label"]) for i, f in enumerate(items, 1)), notes


def assemble_questions(parsed: Mapping[str, Any]) -> AssembledView:
    items, notes = _unique(parsed["questions"], "question", "questions", lambda i: f"Q{i}", "question")
    return tuple(
        KeyQuestion(id=f"Q{i}", question=q["question"], expected_answer=q["expected_answer"],
                    provenance=q["provenance"], label=q["label"])
        for i, q in enumerate(items, 1)
    ), notes


def assemble_entities(parsed: Mapping[str, Any]) -> AssembledView:
    groups: dict[str, list[dict[str, Any]]] = {}
    for entity in parsed["entities"]:
        groups.setdefault(_norm(entity["name"]), []).append(entity)
    entities, notes = [], []
    for i, group in enumerate(groups.values(), 1):
        head = group[0]
        if len(group) > 1:
            kinds = sorted({e["kind"] for e in group})
            notes.append(ScaffoldNote(
                view="entities", action="merged entities",
                detail=f"{head['name']!r} was listed {len(group)} times; their attributes are merged into E{i}"
                       + (f" (kinds {', '.join(kinds)}; kept {head['kind']})" if len(kinds) > 1 else "")))
        attributes, repeats = _unique([a for e in group for a in e["attributes"]], "attribute", "entities",
                                      lambda j, i=i: f"E{i}.A{j}", f"attribute of E{i}")
        notes.extend(repeats)
        entities.append(Entity(
            id=f"E{i}", name=head["name"], kind=head["kind"],
            attributes=tuple(Attribute(id=f"E{i}.A{j}", text=a["attribute"], label=a["label"])
                             for j, a in enumerate(attributes, 1)),
        ))
    return tuple(entities), notes
