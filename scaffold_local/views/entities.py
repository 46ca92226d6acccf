"""The entities view: the source's entities with their attributes, each attribute preserved or not
in the summary (EPS)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..method import MethodVersion
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
from ..text import HAN, split_sentences
from .assembly import normalized, unique
from .base import (
    AssembledView,
    JudgedItem,
    ReadingRules,
    ResponderRules,
    ViewSpec,
    ViewVerdicts,
    first_of,
    justifications,
)
from .responding import bound, compact, document_facts, p_kept_by_overlap, schema_order, supporting
from .scoring import Scores, verdicts_of


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
_NAME_WORD = re.compile(f"[{HAN}]+|[\u30a0-\u30ff]+|[^\\W_{HAN}\u3040-\u30ff]+")


def _entity_names(document: str) -> list[str]:
    """Capitalised names not at a sentence start; without any (lower-cased text, a script without
    case), the longest word, taken from a sentence so that some fact mentions it."""
    names: list[str] = []
    sentences = split_sentences(document)
    for sentence in sentences:
        for match in re.finditer(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*", sentence):
            if match.start() > 0 and match.group() not in names:
                names.append(match.group())
    words = [w for sentence in sentences for w in _NAME_WORD.findall(sentence)]
    return names or [max(words, key=len, default=sentences[0] if sentences else "document")]


def _respond_extract(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Entities are names; their attributes the document sentences that mention them."""
    items = bound(schema, "properties", "entities")
    entity = items["items"]["properties"]
    max_attributes = entity["attributes"]["maxItems"]
    max_chars = entity["attributes"]["items"]["properties"]["attribute"]["maxLength"]
    facts = document_facts(ctx["document"])
    entities = []
    for name in _entity_names(ctx["document"])[: items["maxItems"]]:
        name = name[:entity["name"]["maxLength"]]  # still in the sentences that mention it
        attributes = [{"attribute": f[:max_chars], "label": label} for f, label in facts if name in f]
        kind = "other" if "enum" in entity["kind"] else "name"  # method v2 has an enum of kinds
        entities.append({"name": name, "kind": kind, "attributes": attributes[:max_attributes]})
    return {"entities": entities}


def _respond_align(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """An attribute is preserved where the summary names the entity and a sentence holds 60% of its words."""
    summary = ctx["summary"].lower()
    answer = {}
    for entity in ctx["entities"]:
        named = entity["name"].lower() in summary
        kept = [a["id"] for a in entity["attributes"] if named and supporting(ctx["sentences"], a["text"], 0.6)]
        why = "named in summary" if named else "not named"
        verdict_schema = schema["properties"][entity["id"]]
        if not compact(verdict_schema):
            answer[entity["id"]] = schema_order({"justification": why, "preserved_attribute_ids": kept}, verdict_schema)
        else:
            answer[entity["id"]] = {"kept": kept, "why": why} if kept else {"kept": []}
    return answer


def _read_items(entities: Sequence[Entity]) -> list[dict[str, Any]]:
    """Every attribute, whatever its label: all of them count in EPS."""
    return [{"id": a.id, "entity": e.name, "kind": e.kind, "text": a.text, "label": a.label}
            for e in entities for a in e.attributes]


def _p_preserved(item: dict[str, Any], sentences: Sequence[str]) -> float:
    """The responder's P(preserved): the attribute's best word overlap, where the summary names the entity."""
    named = item["entity"].lower() in " ".join(sentences).lower()
    return p_kept_by_overlap("text", 0.6)(item, sentences) if named else 0.02


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
    respond=ResponderRules(_respond_extract, _respond_align),
    drill_labels=("main point", "supporting detail", "other"),  # every attribute counts in EPS
    counted_labels=("main point", "supporting detail", "other"),
    reading=ReadingRules("preserved", _read_items, _p_preserved),
)
