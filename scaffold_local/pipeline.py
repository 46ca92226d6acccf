"""Documents -> extraction requests -> scaffolds -> alignment requests -> records -> metrics.

Extraction runs once per source document and is cached by content address across runs. Judgment
requests for all summaries of a scaffold are sent together, sorted so that requests sharing a
prompt prefix are adjacent. The engine is started only when some request is not already stored.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .backends import Backend, create_backend
from .config import ModelConfig
from .data import Candidate, Document, LoadedInput
from .metrics import SummaryScores, SystemScores, rouge_l, score_summary, system_means
from .method import method_version
from .prompts import PromptTemplate
from .provenance import package_versions, platform_info
from .report import write_tables
from .schemas import ASSEMBLY_VERSION, Scaffold, VIEWS, direct_score_model, extraction_model, json_schema, schema_sha256
from .store import RunStore, ScaffoldStore, StoredScaffold
from .tasks import KIND_OF_TASK, Judge, PlannedRequest, Record, usage_stats

# progress(label, total) -> context manager yielding advance(n)
ProgressFactory = Callable[[str, int], contextlib.AbstractContextManager[Callable[[int], None]]]


@contextlib.contextmanager
def no_progress(label: str, total: int) -> Iterator[Callable[[int], None]]:
    yield lambda n: None


@dataclass
class ExtractionOutcome:
    scaffolds: dict[str, Scaffold] = field(default_factory=dict)  # by doc_id
    unavailable: dict[str, str] = field(default_factory=dict)  # doc_id -> engine error (retried next run)
    records: list[Record] = field(default_factory=list)  # the extraction records behind the scaffolds
    computed: int = 0
    reused: int = 0


@dataclass
class RunOutcome:
    run_dir: Path
    resumed: bool
    summaries: list[SummaryScores]
    systems: list[SystemScores]
    requests_sent: int
    requests_reused: int
    validation_failures: int
    engine_errors: int
    extraction: ExtractionOutcome
    failed_summaries: dict[str, str]  # "doc/system" -> why it could not be judged at all
    usage: dict[str, Any]  # tokens, prefix-cache hits and finish reasons, for extraction and judgments


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
    ):
        self.config = config
        self.store_root = Path(store_root)
        self.judge = Judge(config, method_version(method), prompts)
        self.method, self.prompts = self.judge.method, self.judge.prompts
        self.scaffolds = ScaffoldStore(self.store_root)
        self._backend_factory = backend_factory
        self._backend: Backend | None = None
        self.engine_description: dict[str, Any] | None = None
        self.progress = progress
        self.batch_requests = batch_requests or config.requests_per_call

    # ------------------------------------------------------------ engine, started on first need

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = self._backend_factory(self.config)
            self.engine_description = self._backend.describe()
        return self._backend

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def _run_batches(self, planned: Sequence[PlannedRequest], label: str,
                     on_batch: Callable[[list[Record]], None]) -> None:
        """Send requests in batches of whole groups (see `_batches`), record each batch as it returns."""
        if not planned:
            return
        with self.progress(label, len(planned)) as advance:
            for batch in _batches(planned, self.batch_requests):
                results = self.backend.generate([p.request for p in batch])
                if len(results) != len(batch) or any(r.id != p.request.id for r, p in zip(results, batch)):
                    raise RuntimeError(f"backend {self.config.backend!r} broke the protocol: results out of order")
                on_batch([self.judge.record(p, r) for p, r in zip(batch, results)])
                advance(len(batch))

    # ------------------------------------------------------------ stage 1: scaffolds

    def extract(self, documents: Sequence[Document]) -> ExtractionOutcome:
        outcome = ExtractionOutcome()
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

        def store(records: list[Record]) -> None:
            for record in records:
                arrived.setdefault(record.doc_id, {})[record.task.removeprefix("extract_")] = record
            for doc_id in dict.fromkeys(r.doc_id for r in records):
                mine = arrived[doc_id]
                if len(mine) < len(VIEWS):
                    continue  # the rest of this document's views is in the next batch
                outcome.records.extend(mine.values())
                errors = [f"{view}: {r.error}" for view, r in mine.items() if not r.done]
                if errors:  # engine failure: not cached, so the next run tries again
                    outcome.unavailable[doc_id] = "extraction engine error: " + "; ".join(errors)
                    continue
                scaffold = self.judge.build_scaffold(by_doc[doc_id], mine)
                self.scaffolds.put(StoredScaffold(scaffold=scaffold, records=list(mine.values())))
                outcome.scaffolds[doc_id] = scaffold
                outcome.computed += 1

        self._run_batches(pending, "extracting scaffolds", store)
        return outcome

    # ------------------------------------------------------------ stage 2: judgments and metrics

    def score(self, loaded: LoadedInput, run_name: str | None = None, command: Sequence[str] | None = None) -> RunOutcome:
        spec = self._spec(loaded, command)
        run = RunStore(self.store_root, run_name or spec["default_run_id"])
        resumed = run.open(spec, identity_keys=("input", "judge_fingerprint", "prompts", "schemas"))
        run.write_jsonl("input_issues.jsonl", loaded.issues)

        documents = [loaded.documents[d] for d in dict.fromkeys(c.doc_id for c in loaded.candidates)]
        extraction = self.extract(documents)
        done = run.load_records()

        candidates = sorted(loaded.candidates, key=lambda c: (c.doc_id, c.system))
        plans: dict[str, list[PlannedRequest]] = {}
        failed: dict[str, str] = {}
        for c in candidates:
            scaffold = extraction.scaffolds.get(c.doc_id)
            if scaffold is None:
                failed[c.key] = extraction.unavailable.get(c.doc_id, "no scaffold")
                continue
            plans[c.key] = self.judge.judgment_requests(scaffold, loaded.documents[c.doc_id], c)
        pending = [p for ps in plans.values() for p in ps if p.cache_key not in done]
        # All summaries of a scaffold adjacent, then the same task together: shared prompt prefixes.
        pending.sort(key=lambda p: (p.doc_id, p.task, p.system or ""))
        reused = sum(1 for ps in plans.values() for p in ps if p.cache_key in done)

        sent = 0
        engine_errors: dict[str, Record] = {}  # this run's failures, so their messages reach the report

        def keep(records: list[Record]) -> None:
            nonlocal sent
            run.append(records)
            sent += len(records)
            done.update({r.cache_key: r for r in records if r.done})
            engine_errors.update({r.cache_key: r for r in records if not r.done})

        self._run_batches(pending, "judging summaries", keep)

        def latest(p: PlannedRequest) -> Record | None:
            return done.get(p.cache_key) or engine_errors.get(p.cache_key)

        if self.engine_description is not None:
            spec = run.read_spec()
            spec.setdefault("engines", []).append({**self.engine_description, "started_at": _now()})
            run.write_json("spec.json", spec)

        summaries = []
        for c in candidates:
            if c.key in failed:
                continue
            scaffold = extraction.scaffolds[c.doc_id]
            records = {KIND_OF_TASK[p.task]: r for p in plans[c.key] if (r := latest(p))}
            n_sentences = len(self.judge.sentences(c.summary))
            judgments = self.judge.judgments(scaffold, n_sentences, records)
            summaries.append(score_summary(
                scaffold, judgments, system=c.system, n_sentences=n_sentences,
                rouge_l_value=rouge_l(c.summary, c.references),
            ))
        systems = system_means(summaries)
        used = [r for ps in plans.values() for p in ps if (r := latest(p))]
        usage = {"extraction": usage_stats(extraction.records), "judgments": usage_stats(used)}
        run.write_json("usage.json", usage)
        self._write_outputs(run, candidates, extraction, summaries, systems, failed)
        return RunOutcome(
            run_dir=run.dir, resumed=resumed, summaries=summaries, systems=systems,
            requests_sent=sent, requests_reused=reused,
            validation_failures=sum(r.validation_error is not None for r in used),
            engine_errors=len(engine_errors), extraction=extraction, failed_summaries=failed, usage=usage,
        )

    def _spec(self, loaded: LoadedInput, command: Sequence[str] | None) -> dict[str, Any]:
        limits = self.config.limits
        static_schemas = {f"extract_{v}": schema_sha256(json_schema(extraction_model(v, limits, self.method)))  # type: ignore[arg-type]
                          for v in VIEWS}
        static_schemas["direct_score"] = schema_sha256(json_schema(direct_score_model(limits, self.method)))
        spec: dict[str, Any] = {
            "input": {"source": loaded.source, "fingerprint": loaded.fingerprint,
                      "fields": loaded.fields.model_dump(), "split": loaded.split},
            "judge": self.config.model_dump(),
            "judge_fingerprint": self.judge.fingerprint,
            "prompts": {task: {"ref": p.ref, "sha256": p.sha256} for task, p in sorted(self.prompts.items())},
            "schemas": {"version": str(self.method.number), "static_sha256": static_schemas,
                        "per_request": "alignment schemas are built per scaffold; each record holds its schema_sha256"},
        }
        identity = json.dumps({k: spec[k] for k in ("input", "judge_fingerprint", "prompts", "schemas")}, sort_keys=True)
        stem = Path(loaded.source).stem or "input"
        spec["default_run_id"] = f"{stem}-{self.config.name}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}"
        spec.update({
            "method": self.method.describe(),
            "created_at": _now(),
            "command": list(command) if command is not None else sys.argv,
            "counts": {"documents": len(loaded.documents), "candidates": len(loaded.candidates),
                       "input_issues": len(loaded.issues)},
            "versions": package_versions(),
            "platform": platform_info(),
        })
        return spec

    def _write_outputs(self, run: RunStore, candidates: list[Candidate],
                       extraction: ExtractionOutcome, summaries: list[SummaryScores],
                       systems: list[SystemScores], failed: dict[str, str]) -> None:
        run.write_jsonl("candidates.jsonl", [
            {"record": c.record, "doc_id": c.doc_id, "system": c.system, "summary": c.summary,
             "sentences": self.judge.sentences(c.summary), "references": list(c.references),
             "scaffold_key": extraction.scaffolds[c.doc_id].key if c.doc_id in extraction.scaffolds else None,
             "failed": failed.get(c.key)}
            for c in candidates
        ])
        run.write_jsonl("summaries.jsonl", summaries)
        run.write_json("systems.json", [s.model_dump() for s in systems])
        write_tables(run.dir, summaries, systems)


def _batches(planned: Sequence[PlannedRequest], size: int) -> Iterator[list[PlannedRequest]]:
    """Batches of at most `size`, cut between documents when possible so that all requests of one
    scaffold travel together (a document larger than `size` is split)."""
    batch: list[PlannedRequest] = []
    for _, members in itertools.groupby(planned, key=lambda p: p.doc_id):
        group = list(members)
        if batch and len(batch) + len(group) > size:
            yield batch
            batch = []
        while len(group) > size:
            yield group[:size]
            group = group[size:]
        batch.extend(group)
    if batch:
        yield batch


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
