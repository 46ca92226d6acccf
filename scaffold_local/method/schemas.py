"""Pydantic schema building blocks and the JSON schemas derived from them.

Every JSON schema sent to an engine is generated from a pydantic model, so the grammar that
constrains decoding and the validator that checks the output can never disagree. The views
(views/) build their extraction and alignment models from the pieces here: strict models, bounded
statements, and the verdict shapes every method version writes. Alignment models are built per
scaffold: one required property per item id, in scaffold order, so the grammar itself forces
exactly one verdict for every item. Constrained decoding writes fields in schema order: up to
method version 2 the justification comes before the verdict; version 3's compact verdicts put the
evidence (which is the verdict) first and justify only what is kept; version 4 writes the verdict
first, then the evidence, then the justification (the paper's order).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache, lru_cache
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from ..errors import OutputError
from .versions import MethodVersion

Label = Literal["main point", "supporting detail", "other"]
LABELS: tuple[str, ...] = get_args(Label)

_FORBID = ConfigDict(extra="forbid")

class SchemaLimits(BaseModel):
    """Bounds written into every schema. Small models need small bounds; see model_configs/."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_facts: int = Field(60, ge=1)
    max_questions: int = Field(20, ge=1)
    # Asked for in the extraction prompts (the paper: 20-100 facts), not enforced by the schema: a
    # short document yields fewer items (the paper's screenshots: 8-15) and must not be padded.
    min_facts: int = Field(1, ge=1, description="extraction prompt: at least this many facts, where the document has them")
    min_questions: int = Field(1, ge=1, description="extraction prompt: at least this many questions, likewise")
    max_entities: int = Field(20, ge=1)
    max_attributes_per_entity: int = Field(6, ge=1)
    statement_chars: int = Field(200, ge=20, description="fact, question, answer and attribute text")
    name_chars: int = Field(80, ge=10)
    justification_chars: int = Field(160, ge=10)
    max_cited_sentences: int = Field(6, ge=1, description="sentence ids one verdict may cite")


# Version of the rules that assemble a scaffold from extraction outputs (ids, duplicates, merges).
# A stored scaffold made under older rules is rebuilt from its own extraction records.
ASSEMBLY_VERSION = 2


class ScaffoldNote(BaseModel):
    """What assembling the scaffold changed in the judge's extraction output, for people to audit."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    view: str
    action: Literal["dropped duplicate", "merged entities", "labels of the parts kept", "main points read"]
    detail: str


# ---------------------------------------------------------------- building blocks for the views' models


def strict_model(model_name: str, /, **fields: Any) -> type[BaseModel]:
    """A strict pydantic model (no extra keys: `additionalProperties: false` in its schema)."""
    return create_model(model_name, __config__=_FORBID, **fields)


def statement(limits: SchemaLimits) -> Any:
    return Annotated[str, Field(min_length=1, max_length=limits.statement_chars)]


def justification(limits: SchemaLimits, method: MethodVersion | None = None) -> Any:
    bound = limits.justification_chars
    if method is not None and method.justification_chars:
        bound = min(bound, method.justification_chars)
    return Annotated[str, Field(max_length=bound)]


# Compact verdicts (method v3): the evidence list is the verdict and comes first; a justification
# ("why") only where something is cited, kept or found wrong. Readers accept both shapes.
CITED_KEYS = ("sentence_ids", "ids")
KEPT_ATTRIBUTE_KEYS = ("preserved_attribute_ids", "kept")
JUSTIFICATION_KEYS = ("justification", "reason", "why")


def evidence_or_nothing(name: str, evidence_key: str, evidence: Any, most: int, limits: SchemaLimits,
                        method: MethodVersion) -> Any:
    """Either evidence (1..most ids) with a short justification, or an empty list and nothing else."""
    cited = strict_model(name, **{evidence_key: (list[evidence], Field(min_length=1, max_length=most))},
                         why=(justification(limits, method), ...))
    empty = strict_model(f"No{name}", **{evidence_key: (list[evidence], Field(max_length=0))})
    return cited | empty


@cache
def verdict_model(verdict_field: str, n_sentences: int, limits: SchemaLimits, method: MethodVersion) -> Any:
    """Justification, cited sentence ids, verdict. Sentence ids are bounded by the summary's own
    sentence count, so the grammar cannot cite a sentence that does not exist (summaries of one
    scaffold with equal length share a schema). Where the method asks for it, verdict and evidence
    agree: either a positive verdict citing 1..k sentences or a negative one citing none (anyOf)."""
    sentence_id = Annotated[int, Field(ge=1, le=n_sentences)]
    most = min(limits.max_cited_sentences, n_sentences)
    if method.compact_verdicts:
        return evidence_or_nothing(verdict_field.capitalize(), "ids", sentence_id, most, limits, method)

    def shape(name: str, verdict: Any, min_cited: int, max_cited: int) -> type[BaseModel]:
        fields: dict[str, Any] = {
            "justification": (justification(limits), ...),
            "sentence_ids": (list[sentence_id], Field(min_length=min_cited or None, max_length=max_cited)),
            verdict_field: (verdict, ...),
        }
        return strict_model(name, **in_order(fields, verdict_field, method))

    title = verdict_field.capitalize()
    if not method.verdict_needs_evidence:
        return shape(f"{title}Verdict", bool, 0, most)
    return shape(title, exactly(True), 1, most) | shape(f"Not{title}", exactly(False), 0, 0)


@lru_cache(maxsize=1024)
def cited_alignment_model(name: str, verdict_field: str, ids: tuple[str, ...], n_sentences: int, limits: SchemaLimits,
                          method: MethodVersion) -> type[BaseModel]:
    """One verdict citing summary sentences per item id, in order (facts, questions)."""
    verdict = verdict_model(verdict_field, n_sentences, limits, method)
    return strict_model(name, **{i: (verdict, ...) for i in ids})


def list_of(name: str, key: str, item: type[BaseModel], most: int) -> type[BaseModel]:
    """An extraction output: `{key: [item, ...]}` with 1..most items."""
    return strict_model(name, **{key: (list[item], Field(min_length=1, max_length=most))})  # type: ignore[valid-type]


def in_order(fields: dict[str, Any], verdict: str, method: MethodVersion) -> dict[str, Any]:
    """Fields in the order the judge writes them (constrained decoding follows the schema's order):
    the verdict first and the justification last where the method says so (the paper's order)."""
    if not method.verdict_first:
        return fields
    rest = [name for name in fields if name not in (verdict, "justification", "reason")]
    last = [name for name in ("justification", "reason") if name in fields]
    return {name: fields[name] for name in (verdict, *rest, *last)}


def _only_booleans(value: Any) -> Any:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def exactly(value: bool) -> Any:
    """Literal[value] that takes only a JSON boolean: pydantic's Literal[True] takes 1, as 1 == True."""
    return Annotated[Literal[value], BeforeValidator(_only_booleans)]


# ---------------------------------------------------------------- JSON schema derivation and parsing


@lru_cache(maxsize=1024)
def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with $refs inlined and titles dropped: self-contained and compact,
    which every grammar engine and OpenAI-compatible server accepts. Cached per model class (the
    classes are themselves cached per shape): callers must not change the dict."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: resolve(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    return resolve(raw)


@lru_cache(maxsize=1024)
def schema_text(model: type[BaseModel]) -> str:
    """The model's JSON schema as the canonical text cache keys hash (sorted keys)."""
    return json.dumps(json_schema(model), sort_keys=True)


def schema_sha256(schema: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise OutputError(f"duplicate keys in output: {', '.join(duplicates)}")
    return dict(pairs)


def _load_json(text: str | None, object_pairs_hook: Any) -> Any:
    if text is None or not text.strip():
        raise OutputError("empty output")
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        raise OutputError(f"not valid JSON: {exc}") from None


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()[:5])


def parse_output(model: type[BaseModel], text: str | None) -> BaseModel:
    """Parse and validate one output. Duplicate keys (which json.loads would silently collapse) and
    unknown ids are errors, never counted."""
    data = _load_json(text, _reject_duplicate_keys)
    try:
        return model.model_validate(data, strict=True)  # as the JSON schema: no "1" for 1, no 1 for true
    except ValidationError as exc:
        raise OutputError(f"schema violation: {_problems(exc)}") from None


class _Object(dict[str, Any]):
    """A JSON object that remembers the keys given in it more than once (json.loads keeps the last)."""

    repeated: tuple[str, ...] = ()


def _remember_repeated_keys(pairs: list[tuple[str, Any]]) -> _Object:
    keys = [k for k, _ in pairs]
    found = _Object(pairs)
    found.repeated = tuple(sorted({k for k in keys if keys.count(k) > 1}))
    return found


def _repeated_within(value: Any) -> list[str]:
    if isinstance(value, list):
        return [k for v in value for k in _repeated_within(v)]
    if isinstance(value, _Object):
        return [*value.repeated, *(k for v in value.values() for k in _repeated_within(v))]
    return []


@lru_cache(maxsize=4096)
def _item_adapter(model: type[BaseModel], item_id: str) -> TypeAdapter[Any]:
    annotation = model.model_fields[item_id].annotation
    assert annotation is not None  # every field of a judgment model is typed
    return TypeAdapter(annotation)


def parse_items(model: type[BaseModel], text: str | None) -> tuple[dict[str, Any], dict[str, str]]:
    """Parse an output that holds one verdict per item id (an alignment, a sentence check) item by
    item: the valid verdicts, and why each other id failed (given twice, not an item of the request,
    missing, or a verdict its schema rejects), so that one bad item does not void the others. The
    output fails as a whole (OutputError) when it is not a JSON object or holds no valid verdict."""
    data = _load_json(text, _remember_repeated_keys)
    if not isinstance(data, _Object):
        raise OutputError(f"schema violation: <root>: not a JSON object but {type(data).__name__}")
    fields = model.model_fields
    failed = {key: "duplicate key in the output (judged twice)" for key in data.repeated}
    failed |= {key: "not an item of this request" for key in data if key not in fields and key not in failed}
    failed |= {key: "missing" for key in fields if key not in data}
    valid = {}
    for key, value in data.items():
        if key in failed:
            continue
        if repeated := _repeated_within(value):
            failed[key] = f"duplicate keys in the verdict: {', '.join(sorted(set(repeated)))}"
            continue
        adapter = _item_adapter(model, key)
        try:
            valid[key] = adapter.dump_python(adapter.validate_python(value, strict=True))
        except ValidationError as exc:
            failed[key] = f"schema violation: {_problems(exc)}"
    if not valid:
        raise OutputError(describe_failed_items(failed) or "no items")
    return valid, failed


def describe_failed_items(failed: dict[str, str]) -> str:
    """Failed items as one line: "F2: missing; F9: not an item of this request"."""
    return "; ".join(f"{item}: {why}" for item, why in failed.items())
