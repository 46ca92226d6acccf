"""One description per scaffold view (facts, questions, entities), found through one table.

Each `ViewSpec` says what the view extracts (schema, item counts, assembly), what the judge is
asked about it (the items its alignment prompt lists, the alignment schema), how verdicts are read
back, and which items the metrics and the evidence view count. The request planner, the metrics,
the report, the user-scaffold reader and the command line go through `VIEW_SPECS`, so adding a
view touches this module and its prompts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from . import assembly
from .method import MethodVersion
from .schemas import (
    CITED_KEYS,
    JUSTIFICATION_KEYS,
    KEPT_ATTRIBUTE_KEYS,
    Scaffold,
    SchemaLimits,
    View,
    entity_attribute_ids,
    entity_extraction_model,
    entity_preservation_model,
    fact_alignment_model,
    fact_extraction_model,
    question_alignment_model,
    question_extraction_model,
)

if TYPE_CHECKING:
    from .records import Record


@dataclass(frozen=True)
class JudgedItem:
    """One thing a verdict is about: a fact, a question, or an entity attribute."""

    id: str
    label: str
    text: str
    owner: str | None = None  # the entity an attribute belongs to


@dataclass(frozen=True)
class ViewVerdicts:
    """One summary's verdicts for one view, by judged item id."""

    kept: Mapping[str, float]  # inferred / answered / preserved: 1 or 0, or P(kept) with weighted verdicts
    cited: Mapping[str, Sequence[int]] = field(default_factory=dict)  # summary sentence ids
    justification: Mapping[str, str] = field(default_factory=dict)
    # Output ids (a fact, a question, an entity) whose verdict failed, with why: neither kept nor missed.
    failed: Mapping[str, str] = field(default_factory=dict)

    def failure(self, item_id: str) -> str | None:
        """Why this item has no valid verdict (an attribute: its entity's verdict), or None."""
        return self.failed.get(item_id) or self.failed.get(item_id.split(".")[0])


@dataclass(frozen=True)
class ViewSpec:
    name: View
    noun: str  # "fact": in messages such as "fact alignment failed"
    title: str  # for tables
    extraction_model: Callable[[SchemaLimits, MethodVersion], type[BaseModel]]
    item_counts: Callable[[SchemaLimits], tuple[int, int]]  # (min, max) the extraction prompt asks for
    assemble: Callable[[Mapping[str, Any]], assembly.AssembledView]
    judged: Callable[[Scaffold], list[JudgedItem]]  # every item that gets a verdict, in scaffold order
    prompt_items: Callable[[Scaffold], list[dict[str, Any]]]  # what the alignment prompt lists
    alignment_model: Callable[[Scaffold, int, SchemaLimits, MethodVersion], type[BaseModel]]
    read: Callable[[Mapping[str, Any]], ViewVerdicts]

    @property
    def extract_task(self) -> str:
        return f"extract_{self.name}"

    @property
    def align_task(self) -> str:
        return f"align_{self.name}"

    def items(self, scaffold: Scaffold) -> tuple[Any, ...] | None:
        """The view's items, or None when its extraction failed."""
        return getattr(scaffold, self.name)

    def read_record(self, record: Record) -> ViewVerdicts | None:
        """The verdicts of one judgment record of this view, with the items whose verdict failed; None
        when its output failed as a whole."""
        if record.parsed is None:
            return None
        return dataclasses.replace(self.read(record.parsed), failed=dict(record.failed_items or {}))


def _first(verdict: Mapping[str, Any], keys: tuple[str, ...], default: Any = None) -> Any:
    """The value under whichever of a method version's names for one field the verdict uses."""
    return next((verdict[k] for k in keys if k in verdict), default)


def _justifications(parsed: Mapping[str, Any]) -> dict[str, str]:
    return {i: _first(v, JUSTIFICATION_KEYS, "") for i, v in parsed.items()}


def _read_cited(verdict_field: str) -> Callable[[Mapping[str, Any]], ViewVerdicts]:
    def read(parsed: Mapping[str, Any]) -> ViewVerdicts:
        cited = {i: _first(v, CITED_KEYS) for i, v in parsed.items()}
        # Compact verdicts have no verdict word: citing a sentence is the verdict.
        return ViewVerdicts(kept={i: v.get(verdict_field, bool(cited[i])) for i, v in parsed.items()},
                            cited=cited, justification=_justifications(parsed))
    return read


def _read_entities(parsed: Mapping[str, Any]) -> ViewVerdicts:
    # Verdicts name kept attribute ids per entity; every other attribute of the scaffold was not kept
    # (the metrics look up each attribute and read a missing one as not kept).
    kept = {a: True for v in parsed.values() for a in _first(v, KEPT_ATTRIBUTE_KEYS)}
    return ViewVerdicts(kept=kept, justification=_justifications(parsed))


VIEW_SPECS: dict[str, ViewSpec] = {
    "facts": ViewSpec(
        name="facts", noun="fact", title="Facts",
        extraction_model=fact_extraction_model,
        item_counts=lambda limits: (limits.min_facts, limits.max_facts),
        assemble=assembly.assemble_facts,
        judged=lambda s: [JudgedItem(f.id, f.label, f.text) for f in s.facts or ()],
        prompt_items=lambda s: [{"id": f.id, "text": f.text, "label": f.label} for f in s.facts or ()],
        alignment_model=lambda s, n, limits, method: fact_alignment_model(
            tuple(f.id for f in s.facts or ()), n, limits, method),
        read=_read_cited("inferred"),
    ),
    "questions": ViewSpec(
        name="questions", noun="question", title="Key questions",
        extraction_model=question_extraction_model,
        item_counts=lambda limits: (limits.min_questions, limits.max_questions),
        assemble=assembly.assemble_questions,
        judged=lambda s: [JudgedItem(q.id, q.label, q.question) for q in s.questions or ()],
        prompt_items=lambda s: [{"id": q.id, "question": q.question, "expected_answer": q.expected_answer,
                                 "label": q.label} for q in s.questions or ()],
        alignment_model=lambda s, n, limits, method: question_alignment_model(
            tuple(q.id for q in s.questions or ()), n, limits, method),
        read=_read_cited("answered"),
    ),
    "entities": ViewSpec(
        name="entities", noun="entity", title="Entity attributes",
        extraction_model=entity_extraction_model,
        item_counts=lambda limits: (1, limits.max_entities),
        assemble=assembly.assemble_entities,
        judged=lambda s: [JudgedItem(a.id, a.label, a.text, owner=e.name) for e in s.entities or () for a in e.attributes],
        prompt_items=lambda s: [{"id": e.id, "name": e.name, "kind": e.kind,
                                 "attributes": [{"id": a.id, "text": a.text} for a in e.attributes]}
                                for e in s.entities or () if e.attributes],
        alignment_model=lambda s, n, limits, method: entity_preservation_model(entity_attribute_ids(s), limits, method),
        read=_read_entities,
    ),
}
