"""The judge: plans each request (prompt + per-request schema + token budget) and reads its output
back into a record, parsed or failed with a failure class; assembles scaffolds and the metric
inputs of one summary. Knows prompts, schemas and the views; never an engine."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..backends.base import Request, Result, Sampling
from ..backends.tokens import prompt_tokens_at_most
from ..config import ModelConfig
from ..data import Candidate, Document
from ..language import detect, trusted
from ..language import name as language_name
from ..method import MethodVersion, method_version
from ..metrics import Judgments
from ..prompts import PromptTemplate, load_prompts
from ..records import Record
from ..scaffold import Scaffold
from ..schemas import (
    ASSEMBLY_VERSION,
    OutputError,
    describe_failed_items,
    json_schema,
    parse_items,
    parse_output,
    schema_sha256,
    schema_text,
)
from ..text import split_sentences, splitter_version
from ..views import ViewSpec, ViewVerdicts, direct_score, judgment_kind, labelling, tasks_of, verdict_field, views_of
from ..views import sentences as sentence_check
from .confidence import CONFIDENCE_ALTERNATIVES, verdict_confidence
from .planned import PlannedRequest
from .read_verdicts import SUPPORTED, VerdictReader
from .verdicts import cited_once_each, ids_cited_twice, join_records


class Judge:
    """Binds a model config, a method version and its prompt set; turns documents and summaries into
    requests and outputs into records, scaffolds and judgments."""

    def __init__(self, config: ModelConfig, method: MethodVersion | None = None,
                 prompts: Mapping[str, PromptTemplate] | None = None):
        self.config = config
        self.method = method or method_version(config.method_version)  # the config's own, else the default
        self.views = views_of(self.method)  # the scaffold views this method version uses
        self.prompts = prompts or load_prompts(version=self.method.number, tasks=tasks_of(self.method),
                                               pins=dict(self.method.prompt_pins))
        self.fingerprint = config.fingerprint()
        # A config's thresholds hold for the method version they were calibrated under only (or one that sends
        # that version's judgment requests).
        self.thresholds: dict[str, float] = dict(
            config.thresholds.get(self.method.number) or config.thresholds.get(self.method.judges_like or 0) or {})
        self.reader = VerdictReader(self) if self.method.reads_verdicts else None
        self.known_sentences: dict[str, list[str]] = {}  # filled from the store (JudgmentCache.sentences)
        self.judgment_overhead: int | None = None  # bytes around document and summary (context_fit.py)

    @property
    def decision_threshold(self) -> float | None:
        """Versions 3-6: the one threshold of facts and questions (their run specs hold it)."""
        return None if self.method.reads_verdicts else self.thresholds.get("facts")

    def template(self, task: str) -> PromptTemplate:
        """The prompt of a task: the method version's, or (chunked mode's labelling pass, which no
        version's prompt set holds) the newest of its own. "<purpose>:<task>" (a justification asked for on
        demand, explain.py) is written on <task>'s prompt."""
        task = task.split(":", 1)[-1]
        if task not in self.prompts:
            self.prompts = {**self.prompts, **load_prompts(tasks=(task,))}
        return self.prompts[task]

    def label_requests(self, scaffold: Scaffold, document: Document) -> list[PlannedRequest]:
        """Chunked mode's labelling pass over a merged scaffold: every judged item, one label each for
        the whole document. One request, or where the list is too long for one, consecutive parts
        that each surely fit."""
        items = tuple(i for spec, view in scaffold.each_view() if view for i in spec.judged(view))
        if not items:
            return []
        title = document.text.split("\n", 1)[0][:200]

        def ask(part: tuple[Any, ...], kind: str) -> PlannedRequest:
            model = labelling.label_model(tuple(i.id for i in part))
            budget = self.config.budget.base + labelling.TOKENS_PER_ITEM * len(part)
            return self._plan(f"{document.doc_id}/{kind}", labelling.TASK, model, budget, document.doc_id, None,
                              {"items": labelling.prompt_items(part), "title": title})

        parts = self._fitting_parts(items, ask)
        return [ask(part, "label_items" if len(parts) == 1 else f"label_items/{k}") for k, part in enumerate(parts, 1)]

    def sentences(self, summary: str, language: str | None = None) -> list[str]:
        """The summary's numbered sentences under this method version's splitter (version 6: by the
        rules of `language`, its document's; see `summary_language`)."""
        known = self.known_sentences.get(summary)
        return list(known) if known is not None else split_sentences(summary, self.method.splitter, language)

    def summary_language(self, document: Document) -> str | None:
        """Under a version that splits by language: the document's language where its detection is
        trusted, by whose rules its summaries are split (a short summary is a poor sample of its own
        language). None otherwise."""
        return trusted(document.text) if self.method.splitter == "pysbd-language" else None

    @property
    def splitter_version(self) -> str:
        return splitter_version(self.method.splitter)

    def _plan(self, request_id: str, task: str, model: type[BaseModel], max_tokens: int,
              doc_id: str, system: str | None, variables: dict[str, Any]) -> PlannedRequest:
        """One request. The template variables double as the request's context (what the prompt was
        rendered from), which test doubles answer from and traces keep."""
        c = self.config
        alternatives = CONFIDENCE_ALTERNATIVES if c.verdict_confidence and verdict_field(task) else 0
        request = Request(
            id=request_id,
            prefix_group=doc_id,
            messages=self.template(task).render(**variables),
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
        schema = planned.request.json_schema or (json_schema(planned.model) if planned.reading else None)
        record = Record(
            request_id=planned.request.id, cache_key=planned.cache_key, task=planned.task,
            prompt=self.template(planned.task).ref, schema_sha256=schema_sha256(schema) if schema else None,
            doc_id=planned.doc_id, system=planned.system, text=result.text, finish_reason=result.finish_reason,
            usage=result.usage.model_dump() if result.usage else None, latency_s=result.latency_s, error=result.error,
            max_tokens=planned.request.sampling.max_tokens, attempts=attempts,
        )
        if planned.reading is not None:
            assert self.reader is not None, "a reading planned under a method version that writes its verdicts"
            return self.reader.record(planned, result, record)
        if result.finish_reason == "error":
            record.failure = result.failure or "engine_crash"
            return record
        if schema is None:  # free text (a justification written on demand): kept as written, never a verdict
            record.parsed = {"text": result.text or ""}
            return record
        try:
            # One verdict per item id: read item by item, so one bad item voids only itself.
            if judgment_kind(planned.task) not in (None, direct_score.KIND):
                parsed, failed = parse_items(planned.model, result.text)
            else:
                parsed, failed = parse_output(planned.model, result.text).model_dump(), {}
            if self.method.compact_verdicts:
                record.parsed = cited_once_each(parsed)
            else:
                failed |= ids_cited_twice(parsed)
                record.parsed = {item: verdict for item, verdict in parsed.items() if item not in failed}
                if not record.parsed:
                    raise OutputError(describe_failed_items(failed))
            verdict = verdict_field(planned.task)
            if result.logprobs and verdict:
                record.confidence = verdict_confidence(result.text or "", result.logprobs, verdict,
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
        for name, spec in self.views.items():
            fewest, most = spec.item_counts(limits)
            variables = {"document": document.text, "min_items": fewest, "max_items": most,
                         "max_attributes": limits.max_attributes_per_entity, "entity_kinds": self.method.entity_kinds}
            if self.method.in_document_language:
                variables["language"] = self.document_language(document)
            planned.append(self._plan(f"{document.doc_id}/extract/{name}", spec.extract_task,
                                      spec.extraction_model(limits, self.method), self.config.budget.extraction,
                                      document.doc_id, None, variables))
        return planned

    @staticmethod
    def document_language(document: Document) -> str:
        """The document's language as the extraction prompts name it ("German"), or "the document's own
        language" where detection is not trusted."""
        language = trusted(document.text)
        return language_name(language) if language else "the document's own language"

    def language_note(self, documents: Iterable[Document]) -> str | None:
        """Under a method version that writes every scaffold in English: the documents in other
        languages, and the version that writes theirs in their own."""
        if self.method.in_document_language:
            return None
        found = Counter(language_name(code) for doc in documents if not doc.text.isascii()
                        and (code := trusted(doc.text)) not in (None, "en"))
        if not found:
            return None
        return (f"{sum(found.values())} documents are not in English ({', '.join(f'{n} {k}' for k, n in found.items())}): "
                f"under method version {self.method.number} their scaffolds are written in English and summaries "
                "are split by English rules; --method-version 6 writes each scaffold in its document's language")

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
        for name, spec in self.views.items():
            record = records[name]
            if record.parsed is None:
                views[name] = None
                failures[name] = record.validation_error or record.error or "no output"
                continue
            views[name], view_notes = spec.assemble(record.parsed)
            notes.extend(view_notes)
        language = detect(document.text) if self.method.in_document_language else None
        return Scaffold(key=self.scaffold_key(document), doc_id=document.doc_id, document_sha256=document.sha256,
                        views=views, failures=failures, notes=tuple(notes), assembly=ASSEMBLY_VERSION,
                        language=language and language.code, language_probability=language and language.probability)

    # ------------------------------------------------------------ stage 2: judgment

    def plan(self, scaffold: Scaffold | None, document: Document, candidate: Candidate,
             task: str | None = None) -> list[PlannedRequest]:
        """The requests for one summary: of every judgment task, or of `task` alone (one request, or
        one per item under method v5). A summary with no sentences needs none (see `judgments`);
        views that failed extraction or have nothing to judge are not asked about; with no scaffold,
        only the tasks that need none (the faithfulness check, the direct score) are planned."""
        sentences = self.sentences(candidate.summary, self.summary_language(document))
        n = len(sentences)
        if n == 0:
            return []
        if self.reader is not None:
            return self.reader.plan(scaffold, document, candidate, task, sentences)
        limits, budget, method = self.config.limits, self.config.budget, self.method
        shared = {"sentences": sentences, "document": document.text, "summary": candidate.summary}

        def plan(kind: str, task: str, model: type[BaseModel], max_tokens: int, **variables: Any) -> PlannedRequest:
            return self._plan(f"{candidate.doc_id}/{candidate.system}/{kind}", task, model, max_tokens,
                              candidate.doc_id, candidate.system, {**shared, **variables})

        planned = []
        for name, spec in self.views.items():
            if scaffold is None or task not in (None, spec.align_task):
                continue
            # One request for the view, or (method v5) one per item: the view narrowed to that item.
            view = scaffold.items(name)
            parts = [(f"{name}/{item.id}", (item,)) for item in view] if method.one_item_per_request else [(name, view)]
            for kind, part in parts:
                if not spec.prompt_items(part):
                    continue
                ask = functools.partial(self._view_request, plan, spec, n)
                request = ask(part, kind)
                if scaffold.item_sources and not self._surely_fits(request):
                    # A merged scaffold (a group, a long document) can hold more items than one answer
                    # has room for: asked in parts that each surely fit, named by their items.
                    planned += [ask(p, f"{name}/{'+'.join(i.id for i in p)}") for p in self._fitting_parts(part, ask)]
                else:
                    planned.append(request)
        if task in (None, sentence_check.TASK):
            # One request for every sentence, or (method v5) one per sentence.
            checks = [(f"faithfulness/S{i}", i) for i in range(1, n + 1)] if method.one_item_per_request else \
                [("faithfulness", None)]
            planned += [plan(kind, sentence_check.TASK, sentence_check.faithfulness_model(n, limits, method, only=i),
                             budget.for_items(1 if i else n), **({"check": i} if i else {})) for kind, i in checks]
        if task in (None, direct_score.TASK):
            planned.append(plan("direct_score", direct_score.TASK, direct_score.direct_score_model(limits, method),
                                budget.direct_score))
        return planned

    def _view_request(self, plan: Callable[..., PlannedRequest], spec: ViewSpec, n_sentences: int,
                      part: tuple[Any, ...], kind: str) -> PlannedRequest:
        """The alignment request of a view's items (all, or a part)."""
        items = spec.prompt_items(part)
        return plan(kind, spec.align_task, spec.alignment_model(part, n_sentences, self.config.limits, self.method),
                    self.config.budget.for_items(len(items)), **{spec.name: items})

    def _surely_fits(self, planned: PlannedRequest) -> bool:
        """Prompt + max_tokens within the context by a bound that needs no tokenizer (every token is
        at least one byte)."""
        tokens = prompt_tokens_at_most(planned.request.messages) + planned.request.sampling.max_tokens
        return tokens <= self.config.max_model_len

    def _fitting_parts(self, items: tuple[Any, ...], ask: Callable[[tuple[Any, ...], str], PlannedRequest]
                       ) -> list[tuple[Any, ...]]:
        """The items in consecutive parts, halved until each part's request surely fits (or holds one item)."""
        if len(items) == 1 or self._surely_fits(ask(items, "part")):
            return [items]
        half = len(items) // 2
        return [*self._fitting_parts(items[:half], ask), *self._fitting_parts(items[half:], ask)]

    @staticmethod
    def by_kind(planned: Sequence[PlannedRequest], records: Mapping[str, Record]) -> dict[str, Record]:
        """One summary's records by judgment kind (a view, "faithfulness", "direct_score"): where a
        kind was asked one item per request, its records joined into one (see `join_records`)."""
        grouped: dict[str, list[Record]] = {}
        for p in planned:
            if p.cache_key in records:
                grouped.setdefault(judgment_kind(p.task), []).append(records[p.cache_key])  # type: ignore[arg-type]
        asked = Counter(judgment_kind(p.task) for p in planned)
        return {kind: join_records(found) for kind, found in grouped.items() if len(found) == asked[kind]}

    def verdicts(self, view: str, record: Record, weighted: bool = False) -> ViewVerdicts:
        """A view's verdicts as this judge decides them: the output's own, or, for every item whose
        P(kept) was recorded, P(kept) itself (`weighted`) or P(kept) >= the config's decision threshold.
        Items whose verdict failed are in `failed`, neither kept nor missed."""
        parsed = record.parsed if self.reader is not None else None
        if parsed is not None:
            field = self.views[view].reading.field  # type: ignore[union-attr]  # planned only where it has one
            verdicts = ViewVerdicts(kept={i: v[field] for i, v in parsed.items() if field in v},
                                    failed=dict(record.failed_items or {}))
        else:
            verdicts = self.views[view].read_record(record) or ViewVerdicts(kept={})
        threshold = self.thresholds.get(view)
        if record.confidence and weighted:
            verdicts = dataclasses.replace(verdicts, kept={**verdicts.kept, **record.confidence})
        elif record.confidence and threshold is not None:
            decided = {i: float(p >= threshold) for i, p in record.confidence.items()}
            verdicts = dataclasses.replace(verdicts, kept={**verdicts.kept, **decided})
        if parsed is not None and self.reader is not None:  # the sentences read for every item count where it is kept
            cited = {i: self.reader.cited(v) for i, v in parsed.items() if verdicts.kept.get(i, 0) >= 0.5}
            verdicts = dataclasses.replace(verdicts, cited=cited)
        return verdicts

    def sentence_verdicts(self, record: Record, n_sentences: int, weighted: bool = False) -> list[float | None]:
        """Each summary sentence faithful (1) or not (0), or P(supported) when `weighted` (method version 7);
        None where its verdict failed."""
        parsed, failed = record.parsed or {}, record.failed_items or {}
        if self.reader is None:
            return [None if ok is None else float(ok) for ok in sentence_check.read_faithful(parsed, failed, n_sentences)]
        threshold, confidence = self.thresholds.get(sentence_check.KIND), record.confidence or {}
        out: list[float | None] = []
        for i in range(1, n_sentences + 1):
            item = f"S{i}"
            if item in failed or item not in confidence:
                out.append(None)
            elif weighted:
                out.append(confidence[item])
            else:
                out.append(float(confidence[item] >= threshold if threshold is not None else parsed[item][SUPPORTED]))
        return out

    def judgments(self, scaffold: Scaffold, n_sentences: int, records: Mapping[str, Record],
                  weighted: bool = False) -> Judgments:
        """Normalize one summary's records (keyed by judgment kind) into metric inputs. `weighted`:
        a fact or question counts by the probability the judge gave its verdict, where recorded."""
        if n_sentences == 0:
            # Nothing to judge: every item is missed, F and Fact Focus are undefined (the README, "What the metrics mean").
            return Judgments(views={name: ViewVerdicts(kept={i.id: False for i in spec.judged(items)})
                                    for name, spec in self.views.items()
                                    if (items := scaffold.view(name)) is not None})
        out = Judgments()
        for kind in (*self.views, sentence_check.KIND, direct_score.KIND):
            record = records.get(kind)
            spec = self.views.get(kind)
            items = scaffold.view(kind)
            if record is None and spec is not None and items is not None and not spec.prompt_items(items):
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
            elif kind == sentence_check.KIND:
                assert record is not None
                out.sentence_faithful = self.sentence_verdicts(record, n_sentences, weighted)
            elif self.reader is not None:
                grades, why = self.reader.grades(parsed)
                if grades is None:
                    out.failures[kind] = why
                else:
                    out.direct_score = grades
            else:
                out.direct_score = direct_score.read_grades(parsed)
        return out
