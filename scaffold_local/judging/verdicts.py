"""Rules on the item ids of a judgment's output that its grammar cannot state, and the records of a
judgment asked one item per request joined into one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..method.schemas import (
    CITED_KEYS,
    KEPT_ATTRIBUTE_KEYS,
    describe_failed_items,
)
from ..records import Record


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
    # A failed reading names its item; otherwise the last part of a request id names its item, or (a view
    # asked in parts) its items joined by "+".
    failed_items |= {item: f"{r.failure}: {r.validation_error or r.error or 'no output'}" for r in failed
                     for item in (r.failed_items or dict.fromkeys(r.request_id.rsplit("/", 1)[-1].split("+")))}
    first = judged[0]
    confidence = {k: v for r in judged for k, v in (r.confidence or {}).items()}
    # Several readings of one item (its verdict, then its cited sentences) add up to one verdict.
    parsed: dict[str, Any] = {}
    for r in judged:
        for item, verdict in (r.parsed or {}).items():
            earlier = parsed.get(item)
            parsed[item] = {**earlier, **verdict} if isinstance(earlier, dict) and isinstance(verdict, dict) else verdict
    return first.model_copy(update={
        "request_id": first.request_id.rsplit("/", 1)[0], "cache_key": "", "text": None, "next_token": None,
        "parsed": parsed,
        "confidence": confidence or None,
        "usage": {k: sum((r.usage or {}).get(k) or 0 for r in records) for k in (first.usage or {})} or None,
        "failed_items": failed_items or None,
        "validation_error": describe_failed_items(failed_items) or None,
        "failure": failed[0].failure if failed else ("validation" if failed_items else None),
    })


def ids_cited_twice(parsed: dict[str, Any]) -> dict[str, str]:
    """A rule the grammar cannot state (no engine enforces uniqueItems): up to method version 2, an
    id cited twice within one verdict makes that verdict invalid. The verdicts that break it, with why."""
    broken = {}
    for item_id, verdict in parsed.items():
        if not isinstance(verdict, dict):
            continue
        for key in (*CITED_KEYS, *KEPT_ATTRIBUTE_KEYS):
            values = verdict.get(key, [])
            if isinstance(values, list) and len(values) != len(set(values)):
                broken[item_id] = f"{key}: duplicate ids {values}"
                break
    return broken


def cited_once_each(parsed: dict[str, Any]) -> dict[str, Any]:
    """Method version 3: the cited list is the verdict, and a sentence cited twice is cited once (the
    135M judge pads lists to their bound with repeats; the record keeps the raw text)."""
    keys = (*CITED_KEYS, *KEPT_ATTRIBUTE_KEYS)
    return {item_id: {k: list(dict.fromkeys(v)) if k in keys and isinstance(v, list) else v for k, v in verdict.items()}
            if isinstance(verdict, dict) else verdict for item_id, verdict in parsed.items()}
