"""Stage 1 for a run whose judge extracts its own scaffolds: stored ones reused, the rest extracted,
assembled and stored, a document at a time as its views' records arrive."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..data.inputs import Document
from ..data.store import JudgmentCache, ScaffoldStore, StoredScaffold
from ..data.user_scaffolds import scaffold_line
from ..judging.dispatch import Dispatcher
from ..judging.judge import Judge
from ..judging.planned import PlannedRequest
from ..method.scaffold import Scaffold
from ..method.schemas import ASSEMBLY_VERSION
from ..records import Record
from .sources import ScaffoldSet


def extract_scaffolds(judge: Judge, store: ScaffoldStore, cache: JudgmentCache, dispatch: Dispatcher,
                      documents: Sequence[Document]) -> ScaffoldSet:
    """Scaffolds by the run's own judge: stored ones reused, the rest extracted and stored. A
    document whose extraction failed for a passing reason gets no scaffold (tried again next run)."""
    outcome = ScaffoldSet()
    pending = _reuse_stored(judge, store, documents, outcome)
    by_doc = {d.doc_id: d for d in documents}
    arrived: dict[str, dict[str, Record]] = {}
    # Views answered by an earlier run in which another view of the same document failed for a
    # passing reason: kept in the judgment cache then (below), so only the failed views are sent again.
    answered = cache.finished(p.cache_key for p in pending)
    for p in pending:
        if p.cache_key in answered:
            arrived.setdefault(p.doc_id, {})[p.task.removeprefix("extract_")] = answered[p.cache_key]

    def assemble(doc_ids: list[str]) -> None:
        for doc_id in doc_ids:
            mine = arrived[doc_id]
            if len(mine) < len(judge.views):
                continue  # the rest of this document's views is in the next batch
            outcome.records.extend(mine.values())
            passing = [f"{view}: {r.error}" for view, r in mine.items() if r.retryable]
            if passing:  # no scaffold stored, so the next run tries again: the failed views only
                cache.put([r for r in mine.values() if r.cache_key not in answered])  # failures kept for audit
                outcome.unavailable[doc_id] = "extraction failed, retried next run: " + "; ".join(passing)
                continue
            scaffold = judge.extraction.build_scaffold(by_doc[doc_id], mine)
            store.put(StoredScaffold(scaffold=scaffold, records=list(mine.values())))
            # answered once for every method version that sends the same requests (its scaffold key is its own)
            cache.put([r for r in mine.values() if r.cache_key not in answered])
            outcome.scaffolds[doc_id] = scaffold
            outcome.computed += 1

    def arrive(records: list[Record]) -> None:
        for record in records:
            arrived.setdefault(record.doc_id, {})[record.task.removeprefix("extract_")] = record
        assemble(list(dict.fromkeys(r.doc_id for r in records)))

    assemble([d for d, views in arrived.items() if len(views) == len(judge.views)])  # nothing left to send
    dispatch.send([p for p in pending if p.cache_key not in answered], "extracting scaffolds", arrive)
    return outcome


def _reuse_stored(judge: Judge, store: ScaffoldStore, documents: Sequence[Document],
                  outcome: ScaffoldSet) -> list[PlannedRequest]:
    """The stored scaffolds into `outcome` (one made under older assembly rules rebuilt from its own extraction
    outputs, no engine call); the extraction requests of every other document."""
    pending: list[PlannedRequest] = []
    for document in documents:
        stored = store.get(judge.extraction.scaffold_key(document))
        if stored is not None and stored.scaffold.assembly < ASSEMBLY_VERSION:
            records = {r.task.removeprefix("extract_"): r for r in stored.records}
            stored = StoredScaffold(scaffold=judge.extraction.build_scaffold(document, records), records=stored.records)
            store.put(stored)
        if stored is not None:
            outcome.scaffolds[document.doc_id] = stored.scaffold.model_copy(update={"doc_id": document.doc_id})
            outcome.records.extend(stored.records)
            outcome.reused += 1
        else:
            pending.extend(judge.extraction.requests(document))
    return pending


def write_scaffold_file(path: Path, scaffolds: Iterable[Scaffold], extracted_by: str) -> None:
    """Scaffolds as a scaffold file (JSONL, one document a line), to score against anywhere with `--scaffold-file`."""
    path.write_text("".join(json.dumps(scaffold_line(s, extracted_by), ensure_ascii=False) + "\n" for s in scaffolds),
                    encoding="utf-8")
