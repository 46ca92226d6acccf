"""Justifications on demand (`show --explain`): for a run whose verdicts were read (the default method),
the judge writes why it decided as the metrics counted, for the items a reader opens.

Each explanation is the item's own reading prompt with the verdict the metrics counted written into the
answer and a justification begun (`{"inferred": true, "justification": "`), continued by the judge up to
the closing quote. It is stored in the judgment cache like every request (a second `--explain` reads it
back), under a task that no judgment kind names, so no metric, table or report ever reads it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..backends import Message, Sampling
from ..data.inputs import Candidate, Document
from ..errors import UsageError
from ..judging.planned import PlannedRequest
from ..method.scaffold import Scaffold
from .pipeline import Pipeline
from .run import Run

TASK_PREFIX = "explain:"  # "explain:align_facts": never a judgment kind
MAX_TOKENS = 80  # one short sentence


@dataclass(frozen=True)
class Explanation:
    item: str
    verdict: bool  # as the metrics counted it
    text: str  # the judge's justification (empty where the request failed)
    failure: str | None = None


def _asked(run: Run, scaffold: Scaffold, document: Document, candidate: Candidate,
           items: Sequence[str]) -> list[tuple[str, bool, PlannedRequest]]:
    """A justification request for every verdict the metrics counted (or for `items`), with the item and its verdict."""
    judge = run.judge
    records = run.records_for(candidate.doc_id, candidate.system)
    planned: list[tuple[str, bool, PlannedRequest]] = []
    for name, spec in judge.views.items():
        record = records.get(name)
        if record is None or record.parsed is None or spec.reading is None:
            continue
        counted = run.verdicts(name, record).kept
        for reading in judge.plan(scaffold, document, candidate, task=spec.align_task):
            item = reading.reading.item if reading.reading else ""
            if reading.reading is None or reading.reading.key != spec.reading.field or item not in counted:
                continue  # verdicts only, and only those the metrics counted
            if items and item not in items:
                continue
            verdict = counted[item] >= 0.5
            planned.append((item, verdict, _explanation_request(judge.fingerprint, reading, spec.reading.field, verdict)))
    return planned


def explain(run: Run, key: str, items: Sequence[str] = ()) -> list[Explanation]:
    """The judge's justification of every counted verdict of one summary's views (or of `items`), written
    now where the store does not hold it yet (the run's judge starts only then)."""
    if not run.spec.reads_verdicts:
        raise UsageError(f"{run.dir.name} was scored under method version {run.spec.method_version}, whose judge "
                         "wrote a justification with every verdict: `show --summary` prints them",
                         hint="--explain is for runs whose method reads its verdicts (the default does)")
    candidate_row = run.candidate(key)
    scaffold = run.scaffold(candidate_row["scaffold_key"] or "")
    if scaffold is None:
        raise UsageError(f"the scaffold of {key} is not in the store {run.store_root}")
    judge = run.judge
    judge.known_sentences[candidate_row["summary"]] = candidate_row["sentences"]  # numbered as they were
    candidate = Candidate(record=candidate_row["record"], doc_id=candidate_row["doc_id"], system=candidate_row["system"],
                          summary=candidate_row["summary"])
    document = Document(doc_id=candidate.doc_id, text="", sha256=scaffold.document_sha256)  # views' prompts omit it
    planned = _asked(run, scaffold, document, candidate, items)
    if items and (unknown := sorted(set(items) - {item for item, _, _ in planned})):
        raise UsageError(f"{key} has no counted verdict for {', '.join(unknown)}")
    pipeline = Pipeline(judge.config, run.store_root, method=run.spec.method_version)
    try:
        answered, _ = pipeline.answer([p for _, _, p in planned], "explaining verdicts")
    finally:
        pipeline.close()
    out = []
    for item, verdict, p in planned:
        record = answered.get(p.cache_key)
        if record is None or record.parsed is None:
            why = "not answered" if record is None else record.error or record.validation_error or str(record.failure)
            out.append(Explanation(item, verdict, "", why))
        else:
            out.append(Explanation(item, verdict, _until_closing_quote(record.parsed["text"])))
    return out


def _explanation_request(fingerprint: str, reading: PlannedRequest, field: str, verdict: bool) -> PlannedRequest:
    request = reading.request
    read = request.messages[-1].content  # the reading's answer up to its verdict: `{"F2": {"inferred":`
    opening = read[:read.index(f'"{field}":')]
    answer = Message(role="assistant", content=opening + f'"{field}": {json.dumps(verdict)}, "justification": "')
    sampling = Sampling(max_tokens=MAX_TOKENS, temperature=0.0, seed=request.sampling.seed)
    explaining = request.model_copy(update={"id": f"{request.id}/explain", "messages": (*request.messages[:-1], answer),
                                            "sampling": sampling})
    task = f"{TASK_PREFIX}{reading.task}"
    return PlannedRequest(explaining, explaining.cache_key(fingerprint), task, reading.doc_id, reading.system, reading.model)


def _until_closing_quote(text: str) -> str:
    """The justification: the generated text up to the first unescaped quote (the string's end)."""
    escaped = False
    for i, char in enumerate(text):
        if char == '"' and not escaped:
            return text[:i].strip()
        escaped = char == "\\" and not escaped
    return text.strip()
