"""A judge's session with a store: the judge bound to its config, method version and prompts; the store's scaffolds
and judgment cache; the engine behind the dispatcher, started only when a request is missing. A run (pipeline.py)
and the meta-evaluation's tasks ask through it.

Scaffolds come from the session's source: extracted once per document by its own judge (content-addressed, reused
by every later run), another judge's stored scaffolds, a finished run's, or a user's file. Every request's record
goes to the store's judgment cache, which all runs share: a request already answered there, by any run, is not sent
again; one whose failure would repeat (context overflow, invalid request, truncated twice, invalid output) is not
re-sent until its cache key changes; one that failed for a passing reason (rate limit, server error, timeout, engine
crash) is sent again on the next run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..backends import Backend, create_backend
from ..data.inputs import Document, LoadedInput
from ..data.store import EngineRates, JudgmentCache, ScaffoldStore
from ..errors import UsageError
from ..judging.config import ModelConfig
from ..judging.dispatch import Dispatcher, ProgressFactory, no_progress, prefix_order
from ..judging.judge import Judge
from ..judging.pace import Pace
from ..judging.planned import PlannedRequest
from ..judging.prompts import PromptTemplate
from ..judging.quality import ScaffoldQuality, inspect, quality_path, read_support, save_support, support_requests
from ..method.scaffold import Scaffold
from ..method.versions import method_version
from ..records import Record, ScaffoldSource
from .extracting import extract_scaffolds
from .main_point_labels import read_main_points
from .merged_scaffolds import merge_chunks
from .sources import ScaffoldSet, from_file, from_judge, from_run, identify


class JudgeSession:
    def __init__(
        self,
        config: ModelConfig,
        store_root: Path,
        *,
        prompts: dict[str, PromptTemplate] | None = None,
        backend_factory: Callable[[ModelConfig], Backend] = create_backend,
        progress: ProgressFactory = no_progress,
        announce: Callable[[str], None] | None = None,
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
        pace = Pace(EngineRates(self.store_root), config.name, self.method.number, announce)
        self.dispatch = Dispatcher(config, self.judge, backend_factory, batch_requests or config.requests_per_call, progress,
                                   pace)

    @property
    def estimates_said(self) -> list[str]:
        """Every estimate of a send's time given so far, in order."""
        return self.dispatch.pace.said

    def close(self) -> None:
        self.dispatch.close()
        self.cache.close()

    # ------------------------------------------------------------ stage 1: scaffolds

    def extract(self, documents: Sequence[Document]) -> ScaffoldSet:
        """Scaffolds by the run's own judge: stored ones reused, the rest extracted and stored. A
        document whose extraction failed for a passing reason gets no scaffold (tried again next run). Under a
        method version that reads main points, each scaffold comes relabelled by them."""
        scaffolds = extract_scaffolds(self.judge, self.scaffolds, self.cache, self.dispatch, documents)
        if self.judge.method.reads_main:
            read_main_points(self.judge, self.scaffolds, self.answer, scaffolds, documents)
        return scaffolds

    def scaffold_path(self, key: str) -> Path:
        """Where the store keeps a scaffold."""
        return self.scaffolds.path(key)

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
        # Readings computed together are sent whole: a member's numbers depend on the rest of its group.
        unfinished = {p.request.together for p in planned if p.cache_key not in records and p.request.together}
        pending = list({p.cache_key: p for p in planned
                        if p.cache_key not in records or p.request.together in unfinished}.values())
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
        merge_chunks(self.judge, self.scaffolds, self.answer, scaffolds, loaded)
        return scaffolds
