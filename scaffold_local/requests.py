"""The judge's requests: plan each one (prompt + per-request schema + token budget) and read its
output back into a record, parsed or failed with a failure class. Knows prompts, schemas and the
views; never an engine."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from .backends.base import Request, Result, Sampling
from .confidence import verdict_confidence
from .config import ModelConfig
from .data import Candidate, Document, InputIssue, LoadedInput
from .method import NO_ERROR, MethodVersion, method_version
from .metrics import Judgments
from .prompts import PromptTemplate, load_prompts
from .records import Message, Record
from .schemas import (
    ASSEMBLY_VERSION,
    CITED_KEYS,
    KEPT_ATTRIBUTE_KEYS,
    OutputError,
    Scaffold,
    describe_failed_items,
    direct_score_model,
    faithfulness_model,
    json_schema,
    parse_items,
    parse_output,
    schema_text,
)
from .text import split_sentences, splitter_version
from .views import VIEW_SPECS, ViewVerdicts

# Judgment kind (a scaffold view, faithfulness, the direct score) of each judgment task.
KIND_OF_TASK: dict[str, str] = {
    **{spec.align_task: name for name, spec in VIEW_SPECS.items()},
    "check_faithfulness": "faithfulness",
    "direct_score": "direct_score",
}
JUDGMENT_KINDS = tuple(KIND_OF_TASK.values())
# Tasks whose output holds one verdict per item id: read item by item, so one bad item voids only itself.
ITEM_TASKS = frozenset(task for task, kind in KIND_OF_TASK.items() if kind != "direct_score")


def _schema_hash(schema: dict[str, Any] | None) -> str | None:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest() if schema else None


@dataclass(frozen=True)
class PlannedRequest:
    request: Request
    cache_key: str
    task: str
    doc_id: str
    system: str | None
    model: type[BaseModel]

    def with_budget(self, max_tokens: int) -> PlannedRequest:
        """The same request with another token budget, recorded under the planned cache key (a
        truncated output's one retry)."""
        sampling = self.request.sampling.model_copy(update={"max_tokens": max_tokens})
        return dataclasses.replace(self, request=self.request.model_copy(update={"sampling": sampling}))


class Judge:
    """Binds a model config, a method version and its prompt set; turns documents and summaries into
    requests and outputs into records, scaffolds and judgments."""

    def __init__(self, config: ModelConfig, method: MethodVersion | None = None,
                 prompts: Mapping[str, PromptTemplate] | None = None):
        self.config = config
        self.method = method or method_version(config.method_version)  # the config's own, else the default
        self.prompts = prompts or load_prompts(version=self.method.number)
        self.fingerprint = config.fingerprint()
        # The config's threshold holds for the method version it was calibrated under only.
        calibrated = config.method_version == self.method.number
        self.decision_threshold = config.decision_threshold if calibrated else None
        self.known_sentences: dict[str, list[str]] = {}  # filled from the store (JudgmentCache.sentences)
        self.judgment_overhead: int | None = None  # see fit_context

    def fit_context(self, loaded: LoadedInput, counter: TokenCounter | None = None,
                    extraction: bool = True) -> ContextFit:
        """The input without the documents whose requests cannot fit the judge's context (see
        `fit_context` below), before anything is sent."""
        return fit_context(self, loaded, counter, extraction)

    def sentences(self, summary: str) -> list[str]:
        """The summary's numbered sentences under this method version's splitter."""
        known = self.known_sentences.get(summary)
        return list(known) if known is not None else split_sentences(summary, self.method.splitter)

    @property
    def splitter_version(self) -> str:
        return splitter_version(self.method.splitter)

    def _plan(self, request_id: str, task: str, model: type[BaseModel], max_tokens: int,
              doc_id: str, system: str | None, variables: dict[str, Any]) -> PlannedRequest:
        """One request. The template variables double as the request's context (what the prompt was
        rendered from), which test doubles answer from and traces keep."""
        c = self.config
        alternatives = CONFIDENCE_ALTERNATIVES if c.verdict_confidence and task in VERDICT_OF_TASK else 0
        request = Request(
            id=request_id,
            prefix_group=doc_id,
            messages=self.prompts[task].render(**variables),
            json_schema=json_schema(model),
            sampling=Sampling(max_tokens=max_tokens, temperature=c.temperature, top_p=c.top_p, seed=c.seed,
                              top_logprobs=alternatives),
            context={"task": task, **variables},
        )
        return PlannedRequest(request, request.cache_key(self.fingerprint, schema_text(model)), task, doc_id, system,
                              model)

    def record(self, planned: PlannedRequest, result: Result, attempts: int = 1) -> Record:
        """One output as a record: parsed, or failed with its class (an engine's own, "truncated"
        when cut off at max_tokens, "validation" when complete but invalid)."""
        record = Record(
            request_id=planned.request.id, cache_key=planned.cache_key, task=planned.task,
            prompt=self.prompts[planned.task].ref, schema_sha256=_schema_hash(planned.request.json_schema),
            doc_id=planned.doc_id, system=planned.system, text=result.text, finish_reason=result.finish_reason,
            usage=result.usage.model_dump() if result.usage else None, latency_s=result.latency_s, error=result.error,
            max_tokens=planned.request.sampling.max_tokens, attempts=attempts,
        )
        if result.finish_reason == "error":
            record.failure = result.failure or "engine_crash"
            return record
        try:
            if planned.task in ITEM_TASKS:
                parsed, failed = parse_items(planned.model, result.text)
            else:
                parsed, failed = parse_output(planned.model, result.text).model_dump(), {}
            if self.method.compact_verdicts:
                record.parsed = _once_each(parsed)
            else:
                failed |= _ids_cited_twice(parsed)
                record.parsed = {item: verdict for item, verdict in parsed.items() if item not in failed}
                if not record.parsed:
                    raise OutputError(describe_failed_items(failed))
            if result.logprobs and planned.task in VERDICT_OF_TASK:
                record.confidence = verdict_confidence(result.text or "", result.logprobs, VERDICT_OF_TASK[planned.task],
                                                      self.method.decided_by_evidence)
            if failed:  # the valid verdicts count; the failed items alone are a validation failure
                record.failed_items, record.failure = failed, "validation"
                record.validation_error = describe_failed_items(failed)
                record.confidence = {i: p for i, p in (record.confidence or {}).items() if i in record.parsed} or None
        except OutputError as exc:
            truncated = result.finish_reason == "length"
            record.validation_error = f"{exc}" + (" (output cut off at max_tokens)" if truncated else "")
            record.failure = "truncated" if truncated else "validation"
        return record

    def reread(self, planned: PlannedRequest, stored: Record) -> Record:
        """A stored output read again under today's rules, without an engine call: a store written
        before verdicts were read item by item holds outputs rejected whole for one bad item. The
        token probabilities are not stored, so items valid only now have no confidence."""
        again = self.record(planned, Result(id=stored.request_id, text=stored.text, finish_reason="stop"))
        return stored.model_copy(update={key: getattr(again, key)
                                         for key in ("parsed", "failed_items", "validation_error", "failure")})

    # ------------------------------------------------------------ stage 1: extraction

    def extraction_requests(self, document: Document) -> list[PlannedRequest]:
        limits = self.config.limits
        planned = []
        for name, spec in VIEW_SPECS.items():
            fewest, most = spec.item_counts(limits)
            variables = {"document": document.text, "min_items": fewest, "max_items": most,
                         "max_attributes": limits.max_attributes_per_entity, "entity_kinds": self.method.entity_kinds}
            planned.append(self._plan(f"{document.doc_id}/extract/{name}", spec.extract_task,
                                      spec.extraction_model(limits, self.method), self.config.budget.extraction,
                                      document.doc_id, None, variables))
        return planned

    def scaffold_key(self, document: Document) -> str:
        """Content address: the extraction requests (document, prompts, schemas, sampling, judge)."""
        keys = [p.cache_key for p in self.extraction_requests(document)]
        return hashlib.sha256(json.dumps([str(self.method.number), *keys]).encode()).hexdigest()

    def build_scaffold(self, document: Document, records: Mapping[str, Record]) -> Scaffold:
        """Assemble a scaffold from the extraction records (keyed by view), assigning ids. A view
        whose output failed is None, with the reason in `failures`."""
        views: dict[str, Any] = {}
        failures: dict[str, str] = {}
        notes = []
        for name, spec in VIEW_SPECS.items():
            record = records[name]
            if record.parsed is None:
                views[name] = None
                failures[name] = record.validation_error or record.error or "no output"
                continue
            views[name], view_notes = spec.assemble(record.parsed)
            notes.extend(view_notes)
        return Scaffold(
            key=self.scaffold_key(document), doc_id=document.doc_id, document_sha256=document.sha256,
            facts=views["facts"], questions=views["questions"], entities=views["entities"],
            failures=failures, notes=tuple(notes), assembly=ASSEMBLY_VERSION,
        )

    # ------------------------------------------------------------ stage 2: judgment

    def judgment_requests(self, scaffold: Scaffold, document: Document, candidate: Candidate) -> list[PlannedRequest]:
        """The requests for one summary. A summary with no sentences needs none (see `judgments`);
        views that failed extraction or have nothing to judge are not asked about."""
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
        for name, spec in VIEW_SPECS.items():
            # One request for the view, or (method v5) one per item: the scaffold narrowed to that item.
            parts = [(f"{name}/{item.id}", scaffold.model_copy(update={name: (item,)}))
                     for item in spec.items(scaffold) or ()] if method.one_item_per_request else [(name, scaffold)]
            for kind, part in parts:
                items = spec.prompt_items(part)
                if items:
                    planned.append(plan(kind, spec.align_task, spec.alignment_model(part, n, limits, method),
                                        budget.for_items(len(items)), **{name: items}))
        if method.one_item_per_request:
            planned += [plan(f"faithfulness/S{i}", "check_faithfulness", faithfulness_model(n, limits, method, only=i),
                             budget.for_items(1), check=i) for i in range(1, n + 1)]
        else:
            planned.append(plan("faithfulness", "check_faithfulness", faithfulness_model(n, limits, method),
                                budget.for_items(n)))
        planned.append(plan("direct_score", "direct_score", direct_score_model(limits, method), budget.direct_score))
        return planned

    def task_requests(self, task: str, scaffold: Scaffold, document: Document, candidate: Candidate) -> list[PlannedRequest]:
        """The requests of one judgment task for one summary (one, or one per item under method v5)."""
        return [p for p in self.judgment_requests(scaffold, document, candidate) if p.task == task]

    @staticmethod
    def by_kind(planned: Sequence[PlannedRequest], records: Mapping[str, Record]) -> dict[str, Record]:
        """One summary's records by judgment kind (a view, "faithfulness", "direct_score"): where a
        kind was asked one item per request, its records joined into one (see `join_records`)."""
        grouped: dict[str, list[Record]] = {}
        for p in planned:
            if p.cache_key in records:
                grouped.setdefault(KIND_OF_TASK[p.task], []).append(records[p.cache_key])
        asked = Counter(KIND_OF_TASK[p.task] for p in planned)
        return {kind: join_records(found) for kind, found in grouped.items() if len(found) == asked[kind]}

    def verdicts(self, view: str, record: Record, weighted: bool = False) -> ViewVerdicts:
        """A view's verdicts as this judge decides them: the output's own, or, for every item whose
        P(kept) was recorded, P(kept) itself (`weighted`) or P(kept) >= the config's decision threshold.
        Items whose verdict failed are in `failed`, neither kept nor missed."""
        verdicts = VIEW_SPECS[view].read_record(record) or ViewVerdicts(kept={})
        if record.confidence and weighted:
            return dataclasses.replace(verdicts, kept={**verdicts.kept, **record.confidence})
        if record.confidence and self.decision_threshold is not None:
            decided = {i: float(p >= self.decision_threshold) for i, p in record.confidence.items()}
            return dataclasses.replace(verdicts, kept={**verdicts.kept, **decided})
        return verdicts

    def judgments(self, scaffold: Scaffold, n_sentences: int, records: Mapping[str, Record],
                  weighted: bool = False) -> Judgments:
        """Normalize one summary's records (keyed by judgment kind) into metric inputs. `weighted`:
        a fact or question counts by the probability the judge gave its verdict, where recorded."""
        if n_sentences == 0:
            # Nothing to judge: every item is missed, F and Fact Focus are undefined (METHOD.md).
            return Judgments(views={name: ViewVerdicts(kept={i.id: False for i in spec.judged(scaffold)})
                                    for name, spec in VIEW_SPECS.items() if spec.items(scaffold) is not None})
        out = Judgments()
        for kind in JUDGMENT_KINDS:
            record = records.get(kind)
            spec = VIEW_SPECS.get(kind)
            if record is None and spec is not None and spec.items(scaffold) is not None and not spec.prompt_items(scaffold):
                parsed: Mapping[str, Any] = {}  # a view with nothing to judge is never asked about
            elif record is None:
                out.failures[kind] = "not judged"
                continue
            elif record.parsed is None:
                out.failures[kind] = record.validation_error or record.error or "no output"
                continue
            else:
                parsed = record.parsed
            if spec is not None:
                out.views[kind] = self.verdicts(kind, record, weighted) if record is not None else spec.read(parsed)
            elif kind == "faithfulness":
                failed = (record.failed_items if record is not None else None) or {}
                out.sentence_faithful = [None if f"S{i}" in failed else parsed[f"S{i}"]["category"] == NO_ERROR
                                         for i in range(1, n_sentences + 1)]
            else:
                out.direct_score = {k: v for k, v in parsed.items() if k != "rationale"}
        return out


def join_records(records: Sequence[Record]) -> Record:
    """The records of one kind of judgment asked one item per request, as if one request had asked
    about every item: the verdicts and confidences of the items judged, and, in `failed_items`, each
    item whose request failed, with its class and reason (its own record keeps the raw text), so a
    failed item voids only itself. Where every item failed: the first failed item's record."""
    if len(records) == 1:
        return records[0]
    failed = [r for r in records if r.parsed is None]
    judged = [r for r in records if r.parsed is not None]
    if not judged:
        item = failed[0].request_id.rsplit("/", 1)[-1]
        return failed[0].model_copy(update={key: f"{item}: {value}" for key in ("validation_error", "error")
                                            if (value := getattr(failed[0], key))})
    failed_items = {k: v for r in judged for k, v in (r.failed_items or {}).items()}
    failed_items |= {r.request_id.rsplit("/", 1)[-1]: f"{r.failure}: {r.validation_error or r.error or 'no output'}"
                     for r in failed}
    first = judged[0]
    confidence = {k: v for r in judged for k, v in (r.confidence or {}).items()}
    return first.model_copy(update={
        "request_id": first.request_id.rsplit("/", 1)[0], "cache_key": "", "text": None,
        "parsed": {k: v for r in judged for k, v in (r.parsed or {}).items()},
        "confidence": confidence or None,
        "usage": {k: sum((r.usage or {}).get(k) or 0 for r in records) for k in (first.usage or {})} or None,
        "failed_items": failed_items or None,
        "validation_error": describe_failed_items(failed_items) or None,
        "failure": failed[0].failure if failed else ("validation" if failed_items else None),
    })


VERDICT_OF_TASK = {"align_facts": "inferred", "align_questions": "answered"}
CONFIDENCE_ALTERNATIVES = 20  # top tokens per position (the most vLLM and OpenAI-compatible servers give)


def _ids_cited_twice(parsed: dict[str, Any]) -> dict[str, str]:
    """A rule the grammar cannot state (no engine enforces uniqueItems): up to method version 2, an
    id cited twice within one verdict makes that verdict invalid. The verdicts that break it, with why."""
    broken = {}
    for item_id, verdict in parsed.items():
        if not isinstance(verdict, dict):
            continue
        for key in (*CITED_KEYS, *KEPT_ATTRIBUTE_KEYS):
            values = verdict.get(key, [])
            if len(values) != len(set(values)):
                broken[item_id] = f"{key}: duplicate ids {values}"
                break
    return broken


def _once_each(parsed: dict[str, Any]) -> dict[str, Any]:
    """Method version 3: the cited list is the verdict, and a sentence cited twice is cited once (the
    135M judge pads lists to their bound with repeats; the record keeps the raw text)."""
    keys = (*CITED_KEYS, *KEPT_ATTRIBUTE_KEYS)
    return {item_id: {k: list(dict.fromkeys(v)) if k in keys else v for k, v in verdict.items()}
            if isinstance(verdict, dict) else verdict for item_id, verdict in parsed.items()}


# ---------------------------------------------------------------- fitting the judge's context, before sending


class TokenCounter(Protocol):
    """Counts a prompt's tokens as the judge's engine will. `exact`: with the judge's own tokenizer
    (or the test double's rule); otherwise an estimate, and `how` says which."""

    exact: bool
    how: str

    def count(self, messages: Sequence[Message]) -> int: ...


def _prompt_bytes(messages: Sequence[Message]) -> int:
    return sum(len(m.content.encode("utf-8", "surrogatepass")) for m in messages)


# Above what a chat template adds to a prompt: role markers and special tokens per message, a default
# system prompt or a date line (SmolLM2, Llama 3.1), the generation prompt.
_TEMPLATE_TOKENS = 128
_TOKENS_PER_MESSAGE = 16


def prompt_tokens_at_most(messages: Sequence[Message]) -> int:
    """An upper bound for any byte-level or byte-fallback tokenizer (every token covers at least one
    byte of UTF-8): a prompt under it needs no tokenizer to know that it fits."""
    return _prompt_bytes(messages) + _TOKENS_PER_MESSAGE * len(messages) + _TEMPLATE_TOKENS


class ResponderTokens:
    """The test double's own count (backends/responder.py: 4 characters a token): exact for it."""

    exact = True
    how = "counted as the responder counts (4 characters a token)"

    def count(self, messages: Sequence[Message]) -> int:
        from .backends.responder import prompt_tokens

        return prompt_tokens(messages)


class EstimatedTokens:
    """Where no tokenizer is at hand (a hosted model): an estimate, meant to err high."""

    exact = False

    def __init__(self, reason: str):
        self.how = f"estimated at 3 bytes of UTF-8 a token, which errs high for most text ({reason})"

    def count(self, messages: Sequence[Message]) -> int:
        return math.ceil(_prompt_bytes(messages) / 3) + _TOKENS_PER_MESSAGE * len(messages) + 16


class TokenizerTokens:
    """The judge model's own tokenizer and chat template, as the engine applies them. Loaded on the
    first count only: prompts under `prompt_tokens_at_most` never need it. If it cannot be loaded,
    the count is an estimate, labelled."""

    def __init__(self, load: Callable[[], Callable[[Sequence[Message]], int]]):
        self._load_counter = load
        self._counter: Callable[[Sequence[Message]], int] | None = None
        self._fallback: EstimatedTokens | None = None
        self.exact = True
        self.how = "counted with the judge's tokenizer and chat template"

    def count(self, messages: Sequence[Message]) -> int:
        if self._counter is None and self._fallback is None:
            try:
                self._counter = self._load_counter()
            except Exception as exc:  # no tokenizer: estimate, and say so
                self._fallback = EstimatedTokens(f"the judge's tokenizer could not be loaded: {type(exc).__name__}: "
                                                 f"{str(exc)[:200]}")
                self.exact, self.how = False, self._fallback.how
        if self._counter is None:
            assert self._fallback is not None
            return self._fallback.count(messages)
        return self._counter(messages)


def _hugging_face_counter(model: str) -> Callable[[], Callable[[Sequence[Message]], int]]:
    """transformers, vLLM and Ray: the tokenizer of the model's local folder."""
    def load() -> Callable[[Sequence[Message]], int]:
        from transformers import AutoTokenizer

        from .backends.weights import resolve_model_path

        tokenizer = AutoTokenizer.from_pretrained(str(resolve_model_path(model)), local_files_only=True)

        def count(messages: Sequence[Message]) -> int:
            text = tokenizer.apply_chat_template([m.model_dump() for m in messages], add_generation_prompt=True,
                                                 tokenize=False)
            return len(tokenizer(text, add_special_tokens=False)["input_ids"])
        return count
    return load


def _gguf_counter(model: str) -> Callable[[], Callable[[Sequence[Message]], int]]:
    """llama.cpp: the GGUF file's own vocabulary and chat template, without its weights."""
    def load() -> Callable[[Sequence[Message]], int]:
        from .backends.llama_cpp import ChatTokenizer

        chat = ChatTokenizer.vocab_only(model)
        return lambda messages: len(chat.tokens(messages))
    return load


def token_counter(config: ModelConfig) -> TokenCounter:
    """How to count this judge's prompt tokens without starting its engine."""
    if config.backend == "responder":
        return ResponderTokens()
    if config.backend in ("transformers", "vllm", "ray"):
        return TokenizerTokens(_hugging_face_counter(config.model))
    if config.backend == "llama-cpp":
        return TokenizerTokens(_gguf_counter(config.model))
    return EstimatedTokens(f"backend {config.backend} has no local tokenizer; the server decides")


_SENTENCE_ENDS = re.compile(r"[.!?;:。！？…\n]")


@dataclass
class ContextFit:
    """What `Judge.fit_context` found: the input without the documents that cannot fit (a copy, its
    issues followed by the new ones), the new issues, and the skipped documents with the reason."""

    loaded: LoadedInput
    issues: list[InputIssue]
    skipped: dict[str, str]  # doc_id -> why


def fit_context(judge: Judge, loaded: LoadedInput, counter: TokenCounter | None = None,
                extraction: bool = True) -> ContextFit:
    """Check, before any request is sent, that every request whose size the input alone decides fits
    the judge's context (prompt + max_tokens <= max_model_len):

    - a document whose extraction prompt cannot fit is skipped, never sent and never truncated: its
      records leave the input and one error issue names it, with the token count and the limit;
    - a summary whose faithfulness check or direct score cannot fit (a long summary of a long
      document) is warned about: it is still scored, and that judgment is recorded as
      context_overflow by the engine without being sent, its metrics undefined with that reason.

    Prompts are counted with the judge's tokenizer where it has one (`token_counter`), only when a
    byte bound does not already show that they fit; an estimate is labelled as one, and skips
    nothing (the server decides). `extraction`: False where the scaffolds come from elsewhere (a
    file, another judge or run), so only the judgments are checked."""
    check = _ContextCheck(judge, counter or token_counter(judge.config), loaded)
    records_of: dict[str, list[Candidate]] = {}
    for c in loaded.candidates:
        records_of.setdefault(c.doc_id, []).append(c)
    issues: list[InputIssue] = []
    skipped: dict[str, str] = {}
    for doc_id, candidates in records_of.items():
        document = loaded.documents[doc_id]
        issue = check.document(document, candidates) if extraction else None
        if issue is not None:
            issues.append(issue)
            if issue.severity == "error":
                skipped[doc_id] = issue.message
                continue
        issues.extend(i for c in candidates for i in check.summary(document, c))
    kept = dataclasses.replace(loaded, candidates=[c for c in loaded.candidates if c.doc_id not in skipped],
                               documents={d: doc for d, doc in loaded.documents.items() if d not in skipped},
                               issues=[*loaded.issues, *issues])
    return ContextFit(loaded=kept, issues=issues, skipped=skipped)


class _ContextCheck:
    """fit_context's two checks: a document's extraction prompts, a summary's judgment prompts."""

    def __init__(self, judge: Judge, counter: TokenCounter, loaded: LoadedInput):
        self.judge, self.counter, self.fields = judge, counter, loaded.fields
        self.limit = judge.config.max_model_len

    def measure(self, planned: PlannedRequest) -> tuple[int, bool] | None:
        """(prompt tokens, exact) when prompt + budget may not fit; None when it surely fits."""
        budget = planned.request.sampling.max_tokens
        if prompt_tokens_at_most(planned.request.messages) + budget <= self.limit:
            return None
        tokens = self.counter.count(planned.request.messages)
        return (tokens, self.counter.exact) if tokens + budget > self.limit else None

    def explain(self, planned: PlannedRequest, tokens: int, exact: bool) -> str:
        budget = planned.request.sampling.max_tokens
        return (f"{planned.task} prompt of {tokens:,} tokens + max_tokens {budget:,} = {tokens + budget:,} "
                f"{'exceeds' if exact else 'may exceed'} the judge's max_model_len {self.limit:,} ({self.counter.how})")

    def document(self, document: Document, candidates: list[Candidate]) -> InputIssue | None:
        """An error (skip the document) or a warning (an estimate only) for its first extraction
        prompt that cannot fit; None when all fit."""
        for planned in self.judge.extraction_requests(document):
            found = self.measure(planned)
            if found is None:
                continue
            tokens, exact = found
            numbers = ", ".join(str(c.record) for c in candidates[:10]) + (", ..." if len(candidates) > 10 else "")
            where = {"record": candidates[0].record, "field": self.fields.document, "doc_id": document.doc_id}
            if exact:
                why = f"document does not fit the judge's context: {self.explain(planned, tokens, exact)}"
                return InputIssue(**where, severity="error", message=(
                    f"{why}; not sent, never truncated: its {len(candidates)} record(s) ({numbers}) are "
                    f"skipped (shorten or split the document, or use a judge with a longer context)"))
            return InputIssue(**where, severity="warning", message=(
                f"document may not fit the judge's context: {self.explain(planned, tokens, exact)}; sent "
                f"anyway: a refusal is recorded as context_overflow for its {len(candidates)} record(s)"))
        return None

    def summary(self, document: Document, c: Candidate) -> list[InputIssue]:
        """Warnings for a summary's fact-check or direct-score prompt that cannot fit (still scored)."""
        judge, limit = self.judge, self.limit
        # A bound first, without splitting the summary: every sentence ends at one of these characters.
        n_most = len(_SENTENCE_ENDS.findall(c.summary)) + 1
        if (len(document.text.encode("utf-8")) + 2 * len(c.summary.encode("utf-8")) + 12 * n_most
                + _judgment_overhead(judge) + max(judge.config.budget.for_items(n_most), judge.config.budget.direct_score)
                <= limit):
            return []
        shell = Scaffold(key="", doc_id=c.doc_id, document_sha256=document.sha256, facts=None, questions=None,
                         entities=None)  # no views: the requests that do not depend on the scaffold
        issues = []
        for planned in judge.judgment_requests(shell, document, c):
            found = self.measure(planned)
            if found is not None:
                then = ("this judgment is recorded as context_overflow without being sent" if found[1] else
                        "a refusal of this judgment is recorded as context_overflow")
                issues.append(InputIssue(
                    record=c.record, field=self.fields.summary, severity="warning", doc_id=c.doc_id, system=c.system,
                    message=f"judgment {'does' if found[1] else 'may'} not fit the judge's context: "
                            f"{self.explain(planned, *found)}; still scored: {then}, and its metrics are undefined"))
        return issues


def _judgment_overhead(judge: Judge) -> int:
    """Bytes of the faithfulness and direct-score prompts without document and summary (the larger),
    with the chat template's share."""
    if judge.judgment_overhead is None:
        empty = {"document": "", "summary": "", "sentences": [""], "check": 1}  # check: the sentence of a v5 request
        judge.judgment_overhead = max(_prompt_bytes(judge.prompts[t].render(**empty))
                                      for t in ("check_faithfulness", "direct_score")) + prompt_tokens_at_most(())
    return judge.judgment_overhead
