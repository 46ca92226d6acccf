"""What a run could not score, one row per failure: a judgment item that failed (its document, system, kind of
judgment, item and failure class), a summary that could not be judged at all, and an input record that was skipped.
A run with any of them is `partial`, lists them in its folder (failures.jsonl) and says so on the console."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..data.inputs import InputIssue
from ..method.text import counted
from ..method.views import judgment_kind
from ..records import Record

SHOWN = 5  # failures named on the console; the run folder lists every one


def failure_rows(records: Iterable[Record], unjudged: Mapping[str, str],
                 issues: Iterable[InputIssue]) -> list[dict[str, Any]]:
    """Every failed judgment item of `records`, every summary of `unjudged` ("doc/system" -> why) and every input
    record skipped for an error, as rows (doc_id, system, kind, item, failure, reason)."""
    rows = []
    for record in records:
        if record.failure is None and not record.failed_items:
            continue
        kind = judgment_kind(record.task) or record.task
        whole = [(None, record.validation_error or record.error or "no output")]  # the output failed as a whole
        for item, reason in list((record.failed_items or {}).items()) or whole:
            rows.append({"doc_id": record.doc_id, "system": record.system, "kind": kind, "item": item,
                         "failure": record.failure or "validation", "reason": reason})
    for key, reason in unjudged.items():
        doc_id, _, system = key.partition("/")
        rows.append({"doc_id": doc_id, "system": system, "kind": "summary", "item": None, "failure": "not judged",
                     "reason": reason})
    rows += [{"doc_id": i.doc_id, "system": i.system, "kind": "input", "item": f"record {i.record}",
              "failure": "skipped", "reason": f"{i.field}: {i.message}" if i.field else i.message}
             for i in issues if i.severity == "error"]
    return rows


def describe(row: Mapping[str, Any]) -> str:
    """One failure in a line: where, what, which class, why."""
    where = "/".join(str(part) for part in (row["doc_id"], row["system"]) if part) or "the input"
    item = f" {row['item']}" if row["item"] else ""
    return f"{where}: {row['kind']}{item}: {row['failure']} ({str(row['reason'])[:160]})"


def describe_partial(rows: Sequence[Mapping[str, Any]]) -> str:
    """How many failures a partial run had and the first SHOWN of them, in a line."""
    return f"{counted(len(rows), 'failure')} (status partial); the first: " + "; ".join(describe(r) for r in rows[:SHOWN])
