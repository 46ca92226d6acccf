"""Each extracted scaffold relabelled by its items' read importance (method version 19, judging/main_points.py),
stored under a key of the extracted scaffold, the readings and the threshold, so that a later run reuses it without
a request, and a recalibrated threshold never reuses stale labels."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from ..data.inputs import Document
from ..data.store import ScaffoldStore, StoredScaffold
from ..judging.judge import Judge
from ..judging.long_documents import with_labels
from ..judging.main_points import DEFAULT_THRESHOLD, main_labels, main_requests
from .merged_scaffolds import Answer
from .sources import ScaffoldSet


def read_main_points(judge: Judge, store: ScaffoldStore, answer: Answer, scaffolds: ScaffoldSet,
                     documents: Sequence[Document]) -> None:
    """Every document's scaffold in `scaffolds` replaced by its relabelled one (read now, or stored before)."""
    threshold = judge.thresholds.get("main", DEFAULT_THRESHOLD)
    pending = {}
    for document in documents:
        scaffold = scaffolds.scaffolds.get(document.doc_id)
        if scaffold is None:
            continue
        planned = main_requests(judge, scaffold, document)
        key = hashlib.sha256(json.dumps(["main", scaffold.key, threshold, *sorted(p.cache_key for p in planned)])
                             .encode()).hexdigest()
        if (stored := store.get(key)) is not None:
            scaffolds.scaffolds[document.doc_id] = stored.scaffold
            scaffolds.records.extend(stored.records)
        else:
            pending[document.doc_id] = (scaffold.model_copy(update={"key": key}), planned)
    records, _ = answer([p for _, planned in pending.values() for p in planned], "reading main points")
    for doc_id, (scaffold, planned) in pending.items():
        mine = [records[p.cache_key] for p in planned if p.cache_key in records]
        if passing := [r for r in mine if r.retryable]:  # not stored: read again on the next run
            scaffolds.unavailable[doc_id] = f"reading main points failed, retried next run: {passing[0].error}"
            del scaffolds.scaffolds[doc_id]
            continue
        labels, note = main_labels(scaffold, planned, records, threshold)
        relabelled = with_labels(scaffold, labels)
        relabelled = relabelled.model_copy(update={"notes": (*relabelled.notes, note)})
        store.put(StoredScaffold(scaffold=relabelled, records=mine))
        scaffolds.scaffolds[doc_id] = relabelled
        scaffolds.records.extend(mine)
