"""The judge's tasks: build each request (prompt + per-request schema + token budget) and read each
output back (parse, validate, check ids). Knows prompts and schemas, never an engine."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from .assembly import assemble_view
from .backends.base import Request, Result, Sampling
from .config import ModelConfig
from .data import Candidate, Document
from .method import NO_ERROR, MethodVersion, method_version
from .metrics import Judgments
from .prompts import PromptTemplate, load_prompts
from .schemas import (
    ASSEMBLY_VERSION,
    OutputError,
    Scaffold,
    VIEWS,
    direct_score_model,
    entity_attribute_ids,
    entity_preservation_model,
    extraction_model,
    fact_alignment_model,
    faithfulness_model,
    json_schema,
    parse_output,
    question_alignment_model,
)
from .text import split_sentences

JudgmentKind = Literal["facts", "questions", "entities", "faithfulness", "direct_score"]
JUDGMENT_KINDS: tuple[JudgmentKind, ...] = ("facts", "questions", "entities", "faithfulness", "direct_score")
TASK_OF_KIND: dict[str, str] = {
    "facts": "align_facts",
    "questions": "align_questions",
    "entities": "align_entities",
    "faithfulness": "check_faithfulness",
    "direct_score": "direct_score",
}
KIND_OF_TASK = {task: kind for kind, task in TASK_OF_KIND.items()}


class Record(BaseModel):
    """Everything about one request and its output: the unit of storage, resume and audit."""

    request_id: str
    cache_key: str
    task: str
    prompt: str  # template ref, e.g. "align_facts.v1"
    schema_sha256: str | None
    doc_id: str
    system: str | None = None
    text: str | None
    finish_reason: str
    usage: dict[str, Any] | None = None
    latency_s: float | None = None
    error: str | None = None  # engine error: the request is retried on resume
    parsed: dict[str, Any] | None = None
    validation_error: str | None = None  # output that failed validation: kept, never counted

    @property
    def done(self) -> bool:
        return self.finish_reason != "error"


def usage_stats(records: Sequence[Record]) -> dict[str, Any]:
    """Tokens, prefix-cache hits, finish reasons and failures over a set of records."""
    prompt = sum((r.usage or {}).get("prompt_tokens", 0) for r in records)
    cached_values = [(r.usage or {}).get("cached_prompt_tokens") for r in records]
    cached = sum(v for v in cached_values if v is not None) if any(v is not None for v in cached_values) else None
    return {
        "requests": len(records),
        "prompt_tokens": prompt,
        "completion_tokens": sum((r.usage or {}).get("completion_tokens", 0) for r in records),
        "cached_prompt_tokens": cached,
        "prefix_cache_hit_rate": round(cached / prompt, 4) if cached is not None and prompt else None,
        "finish_reasons": dict(Counter(r.finish_reason for r in records)),
        "validation_failures": sum(r.validation_error is not None for r in records),
    }


def _schema_hash(schema: dict[str, Any] | None) -> str | None:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest() if schema else None


@dataclass
class PlannedRequest:
    request: Request
    cache_key: str
    task: str
    doc_id: str
    system: str | None
    model: type[BaseModel]


class Judge:
    """Binds a model config, a method version and its prompt set; turns documents and summaries into
    requests and outputs into scaffolds and judgments."""

    def __init__(self, config: ModelConfig, method: MethodVersion | None = None,
                 prompts: Mapping[str, PromptTemplate] | None = None):
        self.config = config
        self.method = method or method_version()
        self.prompts = prompts or load_prompts(version=self.method.number)
        self.fingerprint = config.fingerprint()

    def sentences(self, summary: str) -> list[str]:
        """The summary's numbered sentences under this method version's splitter."""
        return split_sentences(summary, self.method.splitter)

    def _sampling(self, max_tokens: int) -> Sampling:
        c = self.config
        return Sampling(max_tokens=max_tokens, temperature=c.temperature, top_p=c.top_p, seed=c.seed)

    def _plan(self, request_id: str, task: str, model: type[BaseModel], max_tokens: int,
              doc_id: str, system: str | None, variables: dict[str, Any]) -> PlannedRequest:
        """One request. The template variables double as the request's context (what the prompt was
        rendered from), which test doubles answer from and traces keep."""
        request = Request(
            id=request_id,
            messages=self.prompts[task].render(**variables),
            json_schema=json_schema(model),
            sampling=self._sampling(max_tokens),
            context={"task": task, **variables},
        )
        return PlannedRequest(request, request.cache_key(self.fingerprint), task, doc_id, system, model)

    def record(self, planned: PlannedRequest, result: Result) -> Record:
        record = Record(
            request_id=planned.request.id, cache_key=planned.cache_key, task=planned.task,
            prompt=self.prompts[planned.task].ref, schema_sha256=_schema_hash(planned.request.json_schema),
            doc_id=planned.doc_id, system=planned.system, text=result.text, finish_reason=result.finish_reason,
            usage=result.usage.model_dump() if result.usage else None, latency_s=result.latency_s, error=result.error,
        )
        if record.done:
            try:
                parsed = parse_output(planned.model, result.text).model_dump()
                _check_ids(parsed)
                record.parsed = parsed
            except OutputError as exc:
                suffix = " (output cut off at max_tokens)" if result.finish_reason == "length" else ""
                record.validation_error = f"{exc}{suffix}"
        return record

    # ------------------------------------------------------------ stage 1: extraction

    def extraction_requests(self, document: Document) -> list[PlannedRequest]:
        limits = self.config.limits
        max_items = {"facts": limits.max_facts, "questions": limits.max_questions, "entities": limits.max_entities}
        min_items = {"facts": limits.min_facts, "questions": limits.min_questions, "entities": 1}
        return [
            self._plan(
                f"{document.doc_id}/extract/{view}", f"extract_{view}",
                extraction_model(view, limits, self.method),  # type: ignore[arg-type]
                self.config.budget.extraction, document.doc_id, None,
                {"document": document.text, "min_items": min_items[view], "max_items": max_items[view],
                 "max_attributes": limits.max_attributes_per_entity, "entity_kinds": self.method.entity_kinds},
            )
            for view in VIEWS
        ]

    def scaffold_key(self, document: Document) -> str:
        """Content address: the extraction requests (document, prompts, schemas, sampling, judge)."""
        keys = [p.cache_key for p in self.extraction_requests(document)]
        return hashlib.sha256(json.dumps([str(self.method.number), *keys]).encode()).hexdigest()

    def build_scaffold(self, document: Document, records: Mapping[str, Record]) -> Scaffold:
        """Assemble a scaffold from the three extraction records (keyed by view), assigning ids.
        A view whose output failed validation is None, with the reason in `failures`."""
        views: dict[str, Any] = {}
        failures: dict[str, str] = {}
        notes = []
        for view in VIEWS:
            record = records[view]
            if record.parsed is None:
                views[view] = None
                failures[view] = record.validation_error or record.error or "no output"
                continue
            views[view], view_notes = assemble_view(view, record.parsed)  # type: ignore[arg-type]
            notes.extend(view_notes)
        return Scaffold(
            key=self.scaffold_key(document), doc_id=document.doc_id, document_sha256=document.sha256,
            facts=views["facts"], questions=views["questions"], entities=views["entities"],
            failures=failures, notes=tuple(notes), assembly=ASSEMBLY_VERSION,
        )

    # ------------------------------------------------------------ stage 2: judgment

    def judgment_requests(self, scaffold: Scaffold, document: Document, candidate: Candidate) -> list[PlannedRequest]:
        """The requests for one summary. A summary with no sentences needs none (see `judgments`);
        views that failed extraction or are empty are not asked about."""
        sentences = self.sentences(candidate.summary)
        n = len(sentences)
        if n == 0:
            return []
        limits, budget, method = self.config.limits, self.config.budget, self.method
        shared = {"sentences": sentences, "document": document.text, "summary": candidate.summary}

        def plan(kind: str, task: str, model: type[BaseModel], max_tokens: int, **variables: Any) -> PlannedRequest:
            return self._plan(f"{candidate.doc_id}/{candidate.system}/{kind}", task, model, max_tokens,
                              candidate.doc_id, candidate.system, {**shared, **variables})

        planned = []
        if scaffold.facts:
            facts = [{"id": f.id, "text": f.text, "label": f.label} for f in scaffold.facts]
            model = fact_alignment_model(tuple(f.id for f in scaffold.facts), n, limits, method)
            planned.append(plan("facts", "align_facts", model, budget.for_items(len(facts)), facts=facts))
        if scaffold.questions:
            questions = [{"id": q.id, "question": q.question, "expected_answer": q.expected_answer, "label": q.label}
                         for q in scaffold.questions]
            model = question_alignment_model(tuple(q.id for q in scaffold.questions), n, limits, method)
            planned.append(plan("questions", "align_questions", model, budget.for_items(len(questions)), questions=questions))
        ids = entity_attribute_ids(scaffold)
        if ids:
            entities = [
                {"id": e.id, "name": e.name, "kind": e.kind, "attributes": [{"id": a.id, "text": a.text} for a in e.attributes]}
                for e in scaffold.entities or () if e.attributes
            ]
            model = entity_preservation_model(ids, limits)
            planned.append(plan("entities", "align_entities", model, budget.for_items(len(entities)), entities=entities))
        planned.append(plan("faithfulness", "check_faithfulness", faithfulness_model(n, limits, method), budget.for_items(n)))
        planned.append(plan("direct_score", "direct_score", direct_score_model(limits, method), budget.direct_score))
        return planned

    @staticmethod
    def judgments(scaffold: Scaffold, n_sentences: int, records: Mapping[str, Record]) -> Judgments:
        """Normalize one summary's records (keyed by judgment kind) into metric inputs."""
        if n_sentences == 0:
            # Nothing to judge: every item is missed, F and Fact Focus are undefined (METHOD.md).
            return Judgments(
                fact_inferred={f.id: False for f in scaffold.facts or ()},
                question_answered={q.id: False for q in scaffold.questions or ()},
                preserved_attributes=frozenset(),
            )
        out = Judgments()
        # A view without items (e.g. no entity has attributes) is never asked about: empty verdicts.
        unasked = {
            "facts": scaffold.facts == (),
            "questions": scaffold.questions == (),
            "entities": scaffold.entities is not None and not entity_attribute_ids(scaffold),
        }
        for kind in JUDGMENT_KINDS:
            record = records.get(kind)
            if record is None and unasked.get(kind):
                parsed: Mapping[str, Any] = {}
            elif record is None:
                out.failures[kind] = "not judged"
                continue
            elif record.parsed is None:
                out.failures[kind] = record.validation_error or record.error or "no output"
                continue
            else:
                parsed = record.parsed
            if kind == "facts":
                out.fact_inferred = {i: v["inferred"] for i, v in parsed.items()}
                out.fact_sentences = {i: v["sentence_ids"] for i, v in parsed.items()}
            elif kind == "questions":
                out.question_answered = {i: v["answered"] for i, v in parsed.items()}
            elif kind == "entities":
                out.preserved_attributes = frozenset(a for v in parsed.values() for a in v["preserved_attribute_ids"])
            elif kind == "faithfulness":
                out.sentence_faithful = [parsed[f"S{i}"]["category"] == NO_ERROR for i in range(1, n_sentences + 1)]
            else:
                out.direct_score = {k: v for k, v in parsed.items() if k != "rationale"}
        return out


def _check_ids(parsed: Mapping[str, Any]) -> None:
    """Rules the grammar cannot state: no id cited twice within one verdict."""
    for item_id, verdict in parsed.items():
        if not isinstance(verdict, dict):
            continue
        for key in ("sentence_ids", "preserved_attribute_ids"):
            values = verdict.get(key, [])
            if len(values) != len(set(values)):
                raise OutputError(f"{item_id}.{key}: duplicate ids {values}")
