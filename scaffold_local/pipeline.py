"""Documents -> scaffolds -> judgment requests -> records -> metrics.

Scaffolds come from the run's source: extracted once per document by the run's own judge
(content-addressed, reused by every later run), another judge's stored scaffolds, a finished run's,
or a user's file. Every request's record goes to the store's judgment cache, which all runs share:
a request already answered there, by any run, is not sent again; one whose failure would repeat
(context overflow, invalid request, truncated twice, invalid output) is not re-sent until its cache
key changes; one that failed for a passing reason (rate limit, server error, timeout, engine crash)
is sent again on the next run. Requests for all summaries of a scaffold go to the engine together,
sorted so that requests sharing a prompt prefix are adjacent. The engine starts only when a request
is missing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .backends import Backend, create_backend
from .config import ModelConfig
from .data import Candidate, Document, InputIssue, LoadedInput
from .dispatch import Dispatcher, ProgressFactory, no_progress, prefix_order
from .errors import UsageError
from .groups import member_scores, union_scaffold
from .long_documents import merge, with_labels
from .method import method_version
from .metrics import SummaryScores, SystemScores, rouge_l, score_summary, system_means
from .prompts import PromptTemplate
from .provenance import package_versions, platform_info
from .quality import ScaffoldQuality, inspect, quality_path, read_support, save_support, support_requests
from .records import Record, RunSpec, RunUsage, ScaffoldSource, describe_decision, usage_stats
from .requests import Judge, PlannedRequest, fit_context
from .scaffold import Scaffold
from .schemas import ASSEMBLY_VERSION, json_schema, schema_sha256
from .sources import ScaffoldSet, from_file, from_judge, from_run, identify
from .store import JudgmentCache, RunFolder, ScaffoldStore, StoredScaffold
from .store.runs import check_run_name, now
from .views import direct_score, labelling


@dataclass(frozen=True)
class Prepared:
    """The input as the judge will score it, and what every front end tells its user before scoring:
    `Pipeline.prepare` decides it once; `score`, `extract`, `evaluate()` and the Inspect scorer render it."""

    loaded: LoadedInput  # the records whose requests fit the judge's context
    issues: list[InputIssue]  # the records left out (and the long documents read in chunks), each with why
    summary: str  # documents, summaries, systems, the judge, the method version, the verdict rule, the scaffolds
    notes: list[str]  # what the user should know: thresholds of another version, documents not in English

    @property
    def nothing_fits(self) -> bool:
        return not self.loaded.candidates


def prepare_for(judge: Judge, scaffolds: str, loaded: LoadedInput, extracting: bool,
             chunk_tokens: int | None = None) -> Prepared:
    """`Pipeline.prepare` for one judge (`scaffolds`: where the run's scaffolds come from, in words)."""
    fit = fit_context(judge, loaded, extraction=extracting, chunk_tokens=chunk_tokens)
    fitted, config, method = fit.loaded, judge.config, judge.method
    groups = f" in {len(fitted.groups)} groups" if fitted.groups else ""
    documents = len(fitted.documents)
    summary = (f"{documents} document{'' if documents == 1 else 's'}{groups}, {len(fitted.candidates)} summaries "
               f"from {len(fitted.systems)} systems; judge: {config.name} ({config.backend}); method version "
               f"{method.number}; {describe_decision(judge.thresholds, method.reads_verdicts)}; scaffolds: {scaffolds}")
    notes = []
    if config.thresholds and not judge.thresholds:
        calibrated = ", ".join(map(str, sorted(config.thresholds)))
        notes.append(f"the thresholds of {config.name} were calibrated under method version {calibrated}; under "
                     f"version {method.number} its verdicts count as "
                     f"{'the judge finds likelier' if method.reads_verdicts else 'it writes them'}")
    if extracting and (language := judge.language_note(fitted.documents.values())):
        notes.append(language)
    return Prepared(fitted, fit.issues, summary, notes)


@dataclass
class RunOutcome:
    run_dir: Path
    resumed: bool
    summaries: list[SummaryScores]
    systems: list[SystemScores]
    requests_sent: int
    requests_reused: int
    validation_failures: int
    engine_errors: int  # this run's retryable failures: sent again on the next run
    failures: dict[str, int]  # every failed judgment of the run, by failure class
    extraction: ScaffoldSet
    failed_summaries: dict[str, str]  # "doc/system" -> why it could not be judged at all
    usage: RunUsage  # tokens, prefix-cache hits, finish reasons, failures, for extraction and judgments


class Pipeline:
    def __init__(
        self,
        config: ModelConfig,
        store_root: Path,
        *,
        prompts: dict[str, PromptTemplate] | None = None,
        backend_factory: Callable[[ModelConfig], Backend] = create_backend,
        progress: ProgressFactory = no_progress,
        batch_requests: int | None = None,
        method: int | None = None,
        scaffolds: ScaffoldSource | None = None,
        weighted_verdicts: bool = False,
    ):
        if weighted_verdicts and not config.verdict_confidence:
            config = config.model_copy(update={"verdict_confidence": True})  # the weights are the verdicts' probabilities
        self.config = config
        self.weighted_verdicts = weighted_verdicts
        self.store_root = Path(store_root)
        self.judge = Judge(config, method_version(method) if method is not None else None, prompts)
        self.method, self.prompts = self.judge.method, self.judge.prompts
        if weighted_verdicts and self.method.not_a_confidence:
            raise UsageError(f"weighted verdicts need P(kept) to be a confidence, but {self.method.not_a_confidence}")
        self.source = identify(scaffolds or ScaffoldSource())
        self.scaffolds = ScaffoldStore(self.store_root)
        self.cache = JudgmentCache(self.store_root)
        self.dispatch = Dispatcher(config, self.judge, backend_factory, batch_requests or config.requests_per_call, progress)

    def close(self) -> None:
        self.dispatch.close()
        self.cache.close()

    # ------------------------------------------------------------ before anything is sent

    def prepare(self, loaded: LoadedInput, *, chunk_tokens: int | None = None, extraction: bool | None = None) -> Prepared:
        """The input fitted to the judge's context (requests.fit_context: long documents in chunks, documents
        that cannot fit left out, each said), its description, and the notes a user should read first.
        `extraction`: whether this run extracts scaffolds (default: when its scaffold source is extraction)."""
        extracting = self.source.kind == "extracted" if extraction is None else extraction
        return prepare_for(self.judge, self.source.describe(), loaded, extracting, chunk_tokens)

    # ------------------------------------------------------------ stage 1: scaffolds

    def extract(self, documents: Sequence[Document]) -> ScaffoldSet:
        """Scaffolds by the run's own judge: stored ones reused, the rest extracted and stored. A
        document whose extraction failed for a passing reason gets no scaffold (tried again next run)."""
        outcome = ScaffoldSet()
        pending: list[PlannedRequest] = []
        by_doc = {d.doc_id: d for d in documents}
        for document in documents:
            stored = self.scaffolds.get(self.judge.scaffold_key(document))
            if stored is not None and stored.scaffold.assembly < ASSEMBLY_VERSION:
                # Made under older assembly rules: rebuilt from its own extraction outputs, no engine call.
                records = {r.task.removeprefix("extract_"): r for r in stored.records}
                stored = StoredScaffold(scaffold=self.judge.build_scaffold(document, records), records=stored.records)
                self.scaffolds.put(stored)
            if stored is not None:
                outcome.scaffolds[document.doc_id] = stored.scaffold.model_copy(update={"doc_id": document.doc_id})
                outcome.records.extend(stored.records)
                outcome.reused += 1
            else:
                pending.extend(self.judge.extraction_requests(document))

        arrived: dict[str, dict[str, Record]] = {}
        # Views answered by an earlier run in which another view of the same document failed for a
        # passing reason: kept in the judgment cache then (below), so only the failed views are sent again.
        answered = self.cache.finished(p.cache_key for p in pending)
        for p in pending:
            if p.cache_key in answered:
                arrived.setdefault(p.doc_id, {})[p.task.removeprefix("extract_")] = answered[p.cache_key]

        def assemble(doc_ids: list[str]) -> None:
            for doc_id in doc_ids:
                mine = arrived[doc_id]
                if len(mine) < len(self.judge.views):
                    continue  # the rest of this document's views is in the next batch
                outcome.records.extend(mine.values())
                passing = [f"{view}: {r.error}" for view, r in mine.items() if r.retryable]
                if passing:  # no scaffold stored, so the next run tries again: the failed views only
                    self.cache.put([r for r in mine.values() if r.cache_key not in answered])  # failures kept for audit
                    outcome.unavailable[doc_id] = "extraction failed, retried next run: " + "; ".join(passing)
                    continue
                scaffold = self.judge.build_scaffold(by_doc[doc_id], mine)
                self.scaffolds.put(StoredScaffold(scaffold=scaffold, records=list(mine.values())))
                outcome.scaffolds[doc_id] = scaffold
                outcome.computed += 1

        def store(records: list[Record]) -> None:
            for record in records:
                arrived.setdefault(record.doc_id, {})[record.task.removeprefix("extract_")] = record
            assemble(list(dict.fromkeys(r.doc_id for r in records)))

        assemble([d for d, views in arrived.items() if len(views) == len(self.judge.views)])  # nothing left to send
        self.dispatch.send([p for p in pending if p.cache_key not in answered], "extracting scaffolds", store)
        return outcome

    def scaffolds_for(self, documents: Sequence[Document]) -> ScaffoldSet:
        """The run's scaffolds, from its source."""
        source, docs = self.source, list(documents)
        if source.kind == "judge":
            other = Judge(ModelConfig.load(source.reference), self.method)
            return from_judge(other, docs, self.scaffolds)
        if source.kind == "run":
            return from_run(source.reference or "", docs, self.scaffolds)
        if source.kind == "file":
            return from_file(Path(source.reference or ""), docs, self.scaffolds, source.default_label or "main point")
        return self.extract(docs)

    # ------------------------------------------------------------ stage 2: judgments and metrics

    def score(self, loaded: LoadedInput, run_name: str | None = None, command: Sequence[str] | None = None,
              word_budget: int | None = None) -> RunOutcome:
        if run_name is not None:
            check_run_name(run_name, "run_name")  # a name from outside: one plain folder under runs/
        spec = run_spec(self.judge, self.source, loaded, command, self.weighted_verdicts)
        run = RunFolder(self.store_root, run_name or spec.run_id or "run")
        spec, resumed = run.open(spec, self.cache)
        spec = spec.model_copy(update={"word_budget": word_budget})
        try:
            outcome, spec = self._score(loaded, run, spec, resumed)
        except BaseException:  # a crash, Ctrl-C or a kill the process sees: the run says so
            run.set_status(run.read_spec(), "interrupted")
            raise
        run.set_status(spec, "complete")
        return outcome

    def _score(self, loaded: LoadedInput, run: RunFolder, spec: RunSpec, resumed: bool) -> tuple[RunOutcome, RunSpec]:
        sources = {d: loaded.source_of(d) for d in dict.fromkeys(c.doc_id for c in loaded.candidates)}
        retries_before = self.dispatch.retries.copy()
        scaffolds = self.document_scaffolds(loaded, sources)
        self._add_groups(scaffolds, loaded, sources)
        retries = {"extraction": self.dispatch.retries - retries_before}
        run.write_jsonl("input_issues.jsonl", [*loaded.issues, *scaffolds.issues])
        spec = spec.model_copy(update={"scaffold_keys": {d: s.key for d, s in scaffolds.scaffolds.items()}})
        run.write_spec(spec)

        candidates = sorted(loaded.candidates, key=lambda c: (c.doc_id, c.system))
        by_language: dict[str | None, list[str]] = {}  # one group (None) unless the splitter goes by language
        for c in candidates:
            by_language.setdefault(self.judge.summary_language(sources[c.doc_id]), []).append(c.summary)
        for language, texts in by_language.items():
            splitter = self.judge.splitter_version + (f"+{language}" if language else "")
            self.judge.known_sentences.update(self.cache.sentences(
                texts, splitter, functools.partial(self.judge.sentences, language=language)))
        plans: dict[str, list[PlannedRequest]] = {}
        failed: dict[str, str] = {}
        for c in candidates:
            scaffold = scaffolds.scaffolds.get(c.doc_id)
            if scaffold is None:
                failed[c.key] = scaffolds.unavailable.get(c.doc_id, "no scaffold")
            else:
                plans[c.key] = self.judge.plan(scaffold, loaded.excerpts.get(c.key, sources[c.doc_id]), c)
        planned = [p for ps in plans.values() for p in ps]
        run.write_jsonl("requests.jsonl", [{"cache_key": p.cache_key, "request_id": p.request.id, "task": p.task,
                                            "doc_id": p.doc_id, "system": p.system} for p in planned])

        records, sent = self.answer(planned, "judging summaries")
        retries["judgments"] = self.dispatch.retries - retries_before - retries["extraction"]
        if self.dispatch.engine_description is not None:
            started = {**self.dispatch.engine_description, "started_at": now()}
            spec = spec.model_copy(update={"engines": [*spec.engines, started]})

        scored = [self._scores(c, scaffolds, plans[c.key], records) for c in candidates if c.key in plans]
        summaries = [summary for summary, _ in scored]
        systems = system_means(summaries)
        used = [records[p.cache_key] for p in planned if p.cache_key in records]
        stages = {"extraction": usage_stats(scaffolds.records), "judgments": usage_stats(used)}
        for stage, counted in retries.items():  # attempts the backend sent again, by class; a resumed run adds to them
            stages[stage].retries = dict(sorted((counted + run.previous_retries(stage)).items()))
        # engine time of this run folder's invocations (a resumed run adds to it)
        usage = RunUsage(**stages, engine_seconds=round(self.dispatch.engine_seconds + run.previous_engine_seconds(), 3))
        run.write_json("usage.json", usage.model_dump())
        run.write_scores(summaries, systems)
        run.write_jsonl("candidates.jsonl", self._candidate_rows(candidates, scaffolds, failed, loaded.groups))
        if loaded.groups:
            run.write_jsonl("member_scores.jsonl", [row for _, rows in scored for row in rows])
        run.write_jsonl("records.jsonl", used)
        outcome = RunOutcome(
            run_dir=run.dir, resumed=resumed, summaries=summaries, systems=systems,
            requests_sent=len(sent), requests_reused=len(planned) - len(sent),
            validation_failures=sum(r.validation_error is not None for r in used),
            engine_errors=sum(r.retryable for r in sent), failures=dict(Counter(r.failure for r in used if r.failure)),
            extraction=scaffolds, failed_summaries=failed, usage=usage,
        )
        return outcome, spec

    def check(self, scaffolds: dict[str, Scaffold], documents: dict[str, Document]) -> list[ScaffoldQuality]:
        """The judge-free checks and the judge's support check of every scaffold, saved beside it."""
        checks = {doc_id: (s, inspect(s, self.config.limits), support_requests(self.judge, s, documents[doc_id]))
                  for doc_id, s in scaffolds.items()}
        records, _ = self.answer([r for _, _, planned in checks.values() for r in planned], "checking scaffolds")
        for scaffold, quality, planned in checks.values():
            record = self.judge.by_kind(planned, records).get("faithfulness")
            read_support(quality, scaffold, record, self.judge)
            if quality.unsupported is not None:
                save_support(quality_path(self.scaffolds.path(scaffold.key)), quality)
        return [quality for _, quality, _ in checks.values()]

    def answer(self, planned: Sequence[PlannedRequest], label: str) -> tuple[dict[str, Record], list[Record]]:
        """The records of these requests by cache key: from the store's cache where it holds a finished
        one, the rest sent now (and cached). Also returns the records sent."""
        records = self.cache.finished(p.cache_key for p in planned)
        for p in planned:  # a stored invalid output is read again: today's rules may keep its valid items
            stored = records.get(p.cache_key)
            if stored is not None and stored.failure == "validation" and stored.failed_items is None:
                records[p.cache_key] = self.judge.reread(p, stored)
        pending = list({p.cache_key: p for p in planned if p.cache_key not in records}.values())
        pending.sort(key=prefix_order)
        sent: list[Record] = []

        def keep(batch: list[Record]) -> None:
            self.cache.put(batch)  # one transaction per engine call: a kill loses at most the call in flight
            sent.extend(batch)
            records.update({r.cache_key: r for r in batch})

        self.dispatch.send(pending, label, keep)
        return records, sent

    def document_scaffolds(self, loaded: LoadedInput, doc_ids: Iterable[str]) -> ScaffoldSet:
        """The scaffolds of these documents (or of a group's members), from the run's source; a long
        document's merged from its chunks' (fit_context decided which are long)."""
        scaffolds = self.scaffolds_for(loaded.to_extract(doc_ids))
        self._merge_chunks(scaffolds, loaded)
        return scaffolds

    def _merge_chunks(self, scaffolds: ScaffoldSet, loaded: LoadedInput) -> None:
        """Each long document's scaffold, merged from its chunks' and labelled for the whole document by
        one judge pass (long_documents.py); stored under a key of its chunks' keys and the labelling
        prompt, so a later run reuses it without a request."""
        pending: dict[str, tuple[Scaffold, list[PlannedRequest]]] = {}
        for doc_id, parts in loaded.chunks.items():
            missing = [f"chunk {p.doc_id}: {scaffolds.unavailable.pop(p.doc_id, 'no scaffold')}" for p in parts
                       if p.doc_id not in scaffolds.scaffolds]
            chunk_scaffolds = [s for p in parts if (s := scaffolds.scaffolds.pop(p.doc_id, None)) is not None]
            if missing:
                scaffolds.unavailable[doc_id] = "; ".join(missing)
                continue
            key = hashlib.sha256(json.dumps(["chunked", self.judge.template(labelling.TASK).sha256,
                                             *(s.key for s in chunk_scaffolds)]).encode()).hexdigest()
            if (stored := self.scaffolds.get(key)) is not None:
                scaffolds.scaffolds[doc_id] = stored.scaffold
                scaffolds.records.extend(stored.records)
                continue
            merged = merge(loaded.documents[doc_id], chunk_scaffolds, key)
            pending[doc_id] = (merged, self.judge.label_requests(merged, loaded.documents[doc_id]))
        records, _ = self.answer([p for _, planned in pending.values() for p in planned], "labelling long documents")
        for doc_id, (merged, planned) in pending.items():
            mine = [records[p.cache_key] for p in planned if p.cache_key in records]
            if passing := [r for r in mine if r.retryable]:  # not stored: labelled again on the next run
                scaffolds.unavailable[doc_id] = f"labelling the merged scaffold failed, retried next run: {passing[0].error}"
                continue
            failed = [f"{r.request_id}: {r.validation_error or r.error}" for r in mine if r.parsed is None]
            labels = {i: label for r in mine for i, label in (r.parsed or {}).items()}
            scaffold = with_labels(merged, labels, "; ".join(failed))
            self.scaffolds.put(StoredScaffold(scaffold=scaffold, records=mine))
            scaffolds.scaffolds[doc_id] = scaffold
            scaffolds.records.extend(mine)

    def _add_groups(self, scaffolds: ScaffoldSet, loaded: LoadedInput, sources: dict[str, Document]) -> None:
        """Each group's scaffold, the union of its members' (stored, so a run's scaffolds can be read
        back); a group with a member without a scaffold has none, and says which member."""
        for group in (d for d in sources if d in loaded.groups):
            members = loaded.groups[group]
            missing = [f"member {m}: {scaffolds.unavailable.get(m, 'no scaffold')}" for m in members
                       if m not in scaffolds.scaffolds]
            if missing:
                scaffolds.unavailable[group] = "; ".join(missing)
                continue
            union = union_scaffold(group, sources[group].sha256, [scaffolds.scaffolds[m] for m in members])
            self.scaffolds.put(StoredScaffold(scaffold=union, records=[]))
            scaffolds.scaffolds[group] = union

    def _scores(self, candidate: Candidate, scaffolds: ScaffoldSet, planned: list[PlannedRequest],
                records: dict[str, Record]) -> tuple[SummaryScores, list[dict[str, Any]]]:
        """A summary's scores and, for a group's summary, its coverage of each member document."""
        scaffold = scaffolds.scaffolds[candidate.doc_id]
        mine = self.judge.by_kind(planned, records)
        n_sentences = len(self.judge.sentences(candidate.summary))
        judgments = self.judge.judgments(scaffold, n_sentences, mine, self.weighted_verdicts)
        scores = score_summary(scaffold, judgments, system=candidate.system, n_sentences=n_sentences,
                               rouge_l_value=rouge_l(candidate.summary, candidate.references))
        members = [{"group": candidate.doc_id, **m.model_dump()}
                   for m in member_scores(scaffold, judgments, candidate.system, n_sentences)]
        return scores, members

    def _candidate_rows(self, candidates: list[Candidate], scaffolds: ScaffoldSet, failed: dict[str, str],
                        groups: dict[str, tuple[str, ...]]) -> list[dict[str, Any]]:
        return [
            {"record": c.record, "doc_id": c.doc_id, "system": c.system, "summary": c.summary,
             "sentences": self.judge.sentences(c.summary), "references": list(c.references),
             "scaffold_key": scaffolds.scaffolds[c.doc_id].key if c.doc_id in scaffolds.scaffolds else None,
             "failed": failed.get(c.key), **({"members": list(groups[c.doc_id])} if c.doc_id in groups else {})}
            for c in candidates
        ]


def run_spec(judge: Judge, source: ScaffoldSource, loaded: LoadedInput, command: Sequence[str] | None,
             weighted_verdicts: bool = False) -> RunSpec:
    """What the run is: its identity (input, judge, prompts, schemas, scaffold source) and provenance."""
    config = judge.config
    limits = config.limits
    if loaded.chunks:
        judge.template(labelling.TASK)  # its prompt is part of the run
    static_schemas = {spec.extract_task: schema_sha256(json_schema(spec.extraction_model(limits, judge.method)))
                      for spec in judge.views.values()}
    static_schemas[direct_score.TASK] = schema_sha256(json_schema(direct_score.direct_score_model(limits, judge.method)))
    spec = RunSpec(
        input={"source": loaded.source, "fingerprint": loaded.fingerprint,
               "fields": loaded.fields.model_dump(), "split": loaded.split},
        judge=config.model_dump(),
        judge_fingerprint=judge.fingerprint,
        method=judge.method.describe(),
        prompts={task: {"ref": p.ref, "sha256": p.sha256} for task, p in sorted(judge.prompts.items())},
        schemas={"version": str(judge.method.number), "static_sha256": static_schemas,
                 "per_request": "alignment schemas are built per scaffold; each record holds its schema_sha256"},
        scaffold_source=source,
        weighted_verdicts=weighted_verdicts,
        decision_threshold=None if weighted_verdicts else judge.decision_threshold,
        thresholds={} if weighted_verdicts or not judge.method.reads_verdicts else judge.thresholds,
        created_at=now(),
        command=list(command) if command is not None else sys.argv,
        counts={"documents": len(loaded.documents), "candidates": len(loaded.candidates),
                "input_issues": len(loaded.issues), **({"groups": len(loaded.groups)} if loaded.groups else {}),
                **({"chunked_documents": len(loaded.chunks)} if loaded.chunks else {})},
        versions=package_versions(),
        platform=platform_info(),
    )
    stem = Path(loaded.source).stem or "input"
    return spec.model_copy(update={"run_id": f"{stem}-{config.name}-{spec.identity_hash()[:8]}"})
