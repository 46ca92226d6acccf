"""Main points read, not written (method version 19): each extracted fact's and key question's importance is the
judge's P(yes) to "would a short summary of this document have to state this?", the document in the shared prefix,
and its label follows from it.

A small judge writes "main point" on about one fact per document, arbitrarily; read, the labels come from a
probability with a threshold calibrated against people's key facts (the config's `main`). Per view: an item at or
above the threshold is a main point; below it, an item extracted as a main point becomes a supporting detail and the
others keep their label; a view with none above it has its likeliest item as its main point. An item whose reading
failed keeps its extracted label, and the scaffold's note says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..backends.answers import YES_NO
from ..data.inputs import Document
from ..method.scaffold import Scaffold
from ..method.schemas import ScaffoldNote
from ..method.views import labelling
from ..records import Record
from .judge_setup import JudgeSetup
from .planned import PlannedRequest, read_together
from .read_verdicts import reading_request
from .readings import Reading

VIEWS = ("facts", "questions")  # the views whose items carry a main / supporting label that a metric weighs
MAIN, SUPPORTING = "main point", "supporting detail"
DEFAULT_THRESHOLD = 0.5  # where the config calibrated none


def main_requests(judge: JudgeSetup, scaffold: Scaffold, document: Document) -> list[PlannedRequest]:
    """One reading per fact and key question of the document, whatever its extracted label."""
    planned = []
    for view in VIEWS:
        for item in scaffold.items(view):
            shown = ({"id": item.id, "question": item.question, "expected_answer": item.expected_answer}
                     if view == "questions" else {"id": item.id, "text": item.text})
            planned.append(reading_request(
                judge, f"{document.doc_id}/main/{item.id}", Reading(item.id, "main", YES_NO), task=labelling.MAIN_TASK,
                variables={"document": document.text, "item": shown}, doc_id=document.doc_id, system=None))
    return read_together(planned, judge.fingerprint) if judge.method.readings_together else planned


def read_importance(planned: Sequence[PlannedRequest], records: Mapping[str, Record]) -> dict[str, float]:
    """P(main) of each item whose reading is among `records` and did not fail."""
    return {p.reading.item: records[p.cache_key].confidence[p.reading.item]  # type: ignore[union-attr,index]
            for p in planned if p.cache_key in records and records[p.cache_key].confidence}


def main_labels(scaffold: Scaffold, planned: Sequence[PlannedRequest], records: Mapping[str, Record],
                threshold: float) -> tuple[dict[str, str], ScaffoldNote]:
    """Each read item's label, and a note giving every P(main) (and every failed reading) with the threshold."""
    p_main = read_importance(planned, records)
    failed = [p.reading.item for p in planned if p.reading.item not in p_main]  # type: ignore[union-attr]
    labels: dict[str, str] = {}
    for view in VIEWS:
        read = {item.id: (item.label, p_main[item.id]) for item in scaffold.items(view) if item.id in p_main}
        main = {i for i, (_, p) in read.items() if p >= threshold} or set(sorted(read, key=lambda i: -read[i][1])[:1])
        labels |= {i: MAIN if i in main else SUPPORTING if label == MAIN else label for i, (label, _) in read.items()}
    detail = ", ".join(f"{i} {p:.2f}" for i, p in p_main.items()) + f" (main at P >= {threshold:.2f})"
    if failed:
        detail += f"; not read, extracted label kept: {', '.join(failed)}"
    return labels, ScaffoldNote(view="all", action="main points read", detail=detail)
