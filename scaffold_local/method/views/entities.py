"""The entities view: the source's entities with their attributes, each attribute preserved or not
in the summary (EPS)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..schemas import (
    KEPT_ATTRIBUTE_KEYS,
    Label,
    ScaffoldNote,
    SchemaLimits,
    evidence_or_nothing,
    in_order,
    justification,
    list_of,
    statement,
    strict_model,
)
from ..versions import MethodVersion
from .assembly import normalized, unique
from .scoring import Scores, verdicts_of
from .spec import (
    AssembledView,
    JudgedItem,
    ReadingRules,
    ViewSpec,
    ViewVerdicts,
    first_of,
    justifications,
)


class Attribute(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    text: str
    label: Label


class Entity(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    name: str
    kind: str
    attributes: tuple[Attribute, ...]


@cache
def entity_extraction_model(limits: SchemaLimits, method: MethodVersion) -> type[BaseModel]:
    attribute = strict_model("ExtractedAttribute", attribute=(statement(limits), ...), label=(Label, ...))
    name = Annotated[str, Field(min_length=1, max_length=limits.name_chars)]
    kind: Any = (Literal[method.entity_kinds] if method.entity_kinds
                 else Annotated[str, Field(min_length=1, max_length=40)])
    item = strict_model(
        "ExtractedEntity",
        name=(name, ...), kind=(kind, ...),
        attributes=(list[attribute], Field(min_length=1, max_length=limits.max_attributes_per_entity)),  # type: ignore[valid-type]
    )
    return list_of("EntityExtraction", "entities", item, limits.max_entities)


@lru_cache(maxsize=512)
def entity_preservation_model(
    entity_attribute_ids: tuple[tuple[str, tuple[str, ...]], ...], limits: SchemaLimits, method: MethodVersion
) -> type[BaseModel]:
    """One property per entity; its preserved ids are an enum of that entity's own attribute ids."""
    fields: dict[str, Any] = {}
    for entity_id, attribute_ids in entity_attribute_ids:
        own_id = Literal[attribute_ids]  # type: ignore[valid-type]
        if method.compact_verdicts:
            verdict = evidence_or_nothing(f"Entity{entity_id}Kept", "kept", own_id, len(attribute_ids),
                                          limits, method)
        else:
            verdict = strict_model(f"Entity{entity_id}Verdict", **in_order({
                "justification": (justification(limits), ...),
                "preserved_attribute_ids": (list[own_id], Field(max_length=len(attribute_ids))),
            }, "preserved_attribute_ids", method))
        fields[entity_id] = (verdict, ...)
    return strict_model("EntityPreservation", **fields)


def entity_attribute_ids(entities: Sequence[Entity]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((e.id, tuple(a.id for a in e.attributes)) for e in entities if e.attributes)


def assemble_entities(parsed: Mapping[str, Any]) -> AssembledView:
    """Entities listed more than once under one name are merged, keeping every distinct attribute
    (they all count in the EPS denominator)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for entity in parsed["entities"]:
        groups.setdefault(normalized(entity["name"]), []).append(entity)
    entities, notes = [], []
    for i, group in enumerate(groups.values(), 1):
        head = group[0]
        if len(group) > 1:
            kinds = sorted({e["kind"] for e in group})
            notes.append(ScaffoldNote(
                view="entities", action="merged entities",
                detail=f"{head['name']!r} was listed {len(group)} times; their attributes are merged into E{i}"
                       + (f" (kinds {', '.join(kinds)}; kept {head['kind']})" if len(kinds) > 1 else "")))
        attributes, repeats = unique([a for e in group for a in e["attributes"]], "attribute", "entities",
                                     f"E{i}.A{{}}".format, f"attribute of E{i}")
        notes.extend(repeats)
        entities.append(Entity(
            id=f"E{i}", name=head["name"], kind=head["kind"],
            attributes=tuple(Attribute(id=f"E{i}.A{j}", text=a["attribute"], label=a["label"])
                             for j, a in enumerate(attributes, 1)),
        ))
    return tuple(entities), notes


def read_entities(parsed: Mapping[str, Any]) -> ViewVerdicts:
    # Verdicts name kept attribute ids per entity; every other attribute of the scaffold was not kept
    # (the metrics look up each attribute and read a missing one as not kept).
    kept = {a: True for v in parsed.values() for a in first_of(v, KEPT_ATTRIBUTE_KEYS)}
    return ViewVerdicts(kept=kept, justification=justifications(parsed))


def entity_metrics(out: Scores, judged: Sequence[JudgedItem], verdicts: ViewVerdicts, n_sentences: int) -> None:
    # The paper (G.6): the denominator is always every scaffold attribute, whatever its label, so an
    # "other" attribute counts here (the one place it does) and a kept one raises EPS.
    out.share("eps", verdicts_of(judged, verdicts), "entity attribute", "scaffold has no entity attributes")


# A word of a name: a run of Han characters, of katakana, or of letters and digits in any other script
# (hiragana, which spells Japanese grammar, is never one).
def _read_items(entities: Sequence[Entity]) -> list[dict[str, Any]]:
    """Every attribute, whatever its label: all of them count in EPS."""
    return [{"id": a.id, "entity": e.name, "kind": e.kind, "text": a.text, "label": a.label}
            for e in entities for a in e.attributes]


ENTITIES = ViewSpec(
    name="entities", noun="entity", title="Entity attributes", item_model=Entity,
    extraction_model=entity_extraction_model,
    item_counts=lambda limits: (1, limits.max_entities),
    assemble=assemble_entities,
    judged=lambda entities: [JudgedItem(a.id, a.label, a.text, owner=e.name) for e in entities for a in e.attributes],
    prompt_items=lambda entities: [{"id": e.id, "name": e.name, "kind": e.kind,
                                    "attributes": [{"id": a.id, "text": a.text} for a in e.attributes]}
                                   for e in entities if e.attributes],
    alignment_model=lambda entities, n, limits, method: entity_preservation_model(
        entity_attribute_ids(entities), limits, method),
    read=read_entities,
    metrics={"eps": "EPS"},
    score=entity_metrics,
    drill_labels=("main point", "supporting detail", "other"),  # every attribute counts in EPS
    counted_labels=("main point", "supporting detail", "other"),
    reading=ReadingRules("preserved", _read_items),
)
