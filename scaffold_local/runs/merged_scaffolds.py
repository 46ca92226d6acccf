"""Scaffolds merged from others: a long document's, from its chunks' (labelled for the whole document
by one judge pass, judging/long_documents.py), and a group's, the union of its members'
(method/document_groups.py). Both are stored, so a later run reuses them without a request."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence

from ..data.inputs import Document, LoadedInput
from ..data.store import ScaffoldStore, StoredScaffold
from ..judging.judge import Judge
from ..judging.long_documents import merge, with_labels
from ..judging.planned import PlannedRequest
from ..method.document_groups import union_scaffold
from ..method.scaffold import Scaffold
from ..method.views import labelling
from ..records import Record
from .sources import ScaffoldSet

# The records of these requests by cache key (from the cache, or sent now), and the records sent.
Answer = Callable[[Sequence[PlannedRequest], str], tuple[dict[str, Record], list[Record]]]


def merge_chunks(judge: Judge, store: ScaffoldStore, answer: Answer, scaffolds: ScaffoldSet, loaded: LoadedInput) -> None:
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
        key = hashlib.sha256(json.dumps(["chunked", judge.template(labelling.TASK).sha256,
                                         *(s.key for s in chunk_scaffolds)]).encode()).hexdigest()
        if (stored := store.get(key)) is not None:
            scaffolds.scaffolds[doc_id] = stored.scaffold
            scaffolds.records.extend(stored.records)
            continue
        merged = merge(loaded.documents[doc_id], chunk_scaffolds, key)
        pending[doc_id] = (merged, judge.extraction.label_requests(merged, loaded.documents[doc_id]))
    records, _ = answer([p for _, planned in pending.values() for p in planned], "labelling long documents")
    for doc_id, (merged, planned) in pending.items():
        mine = [records[p.cache_key] for p in planned if p.cache_key in records]
        if passing := [r for r in mine if r.retryable]:  # not stored: labelled again on the next run
            scaffolds.unavailable[doc_id] = f"labelling the merged scaffold failed, retried next run: {passing[0].error}"
            continue
        failed = [f"{r.request_id}: {r.validation_error or r.error}" for r in mine if r.parsed is None]
        labels = {i: label for r in mine for i, label in (r.parsed or {}).items()}
        scaffold = with_labels(merged, labels, "; ".join(failed))
        store.put(StoredScaffold(scaffold=scaffold, records=mine))
        scaffolds.scaffolds[doc_id] = scaffold
        scaffolds.records.extend(mine)


def add_groups(store: ScaffoldStore, scaffolds: ScaffoldSet, loaded: LoadedInput, sources: dict[str, Document]) -> None:
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
        store.put(StoredScaffold(scaffold=union, records=[]))
        scaffolds.scaffolds[group] = union
