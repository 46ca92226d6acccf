"""The judgments of a method version that reads them (the default; earlier ones in part), read not written: one
reading per verdict (readings.py), and the records they come back as.

Every yes/no judgment is a prompt that ends where the judge's JSON answer gives its value; its prompt
is the task's instructions and examples, then the summary (facts, questions, entity attributes) or the
document and the summary (sentence checks, direct score), then the item, each a part of its own
(`Request.parts`), and the answer last. Two more readings share an item's prompt up to its answer: a
fact's summary sentences (`{"inferred": true, "sentence_ids": [`, which Fact Focus counts for the facts
counted kept) and a sentence's error category (`{"supported": false, "category": "`, counted for the
sentences judged unsupported): on an engine that computes prompts part by part they cost the answer's
few tokens, where asking them after the verdicts would compute the summary again. Each direct-score axis
is read at its grade, with a second reading after a `1` that may begin `10`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from ..backends.answers import YES_NO
from ..backends.protocol import Message, Request, Result, Sampling
from ..data.inputs import Candidate, Document
from ..errors import UsageError
from ..method.scaffold import Scaffold
from ..method.schemas import schema_text, strict_model
from ..method.versions import NO_ERROR
from ..method.views import ViewSpec
from ..method.views import direct_score as direct_score_view
from ..method.views import sentences as sentence_check
from ..method.views.spec import ReadingRules
from ..records import Record
from .judge_setup import JudgeSetup
from .long_documents import sentence_excerpts
from .planned import PlannedRequest
from .prior_free import PRIOR, prior_task
from .readings import (
    EXACT_ANSWER_MASS_FLOOR,
    MAX_UNDECIDED,
    READING_ALTERNATIVES,
    Distribution,
    Reading,
    distribution,
    expected,
    resolved,
    stored,
    value_prefix,
)

BOOLEAN = ("true", "false")
GRADES = tuple(str(grade) for grade in range(1, 11))
SUPPORTED = "supported"  # the sentence check's verdict field
EVIDENCE = "sentence_ids"  # a kept item's summary sentences
CATEGORY = "category"  # an unsupported sentence's error


def reading_rules(spec: ViewSpec, method_number: int) -> ReadingRules:
    if spec.reading is None:
        raise UsageError(f"view {spec.name!r} has no reading rules (ViewSpec.reading): method version {method_number} "
                         "reads every verdict and cannot judge it")
    return spec.reading


class VerdictReader:
    """Plans one summary's readings and reads their results, for a judge whose method reads its verdicts."""

    def __init__(self, judge: JudgeSetup):
        self.judge = judge

    # ------------------------------------------------------------ planning

    def plan(self, scaffold: Scaffold | None, document: Document, candidate: Candidate, task: str | None,
             sentences: list[str]) -> list[PlannedRequest]:
        """The readings of one summary (of every task, or of `task`): each item's verdict and, sharing its
        prompt up to the answer, the sentences of a fact (or another view whose rules read evidence) and the
        error category of a sentence; each direct-score axis."""
        shared = {"sentences": sentences, "document": document.text, "summary": candidate.summary}
        planned = []
        if scaffold is not None:
            planned += self._view_readings(scaffold, candidate, task, shared, len(sentences))
        if task in (None, sentence_check.TASK):
            planned += self._sentence_readings(document, candidate, shared, sentences)
        if task in (None, direct_score_view.TASK):
            read = functools.partial(self._read, candidate=candidate, task=direct_score_view.TASK, variables=shared)
            owner = f"{candidate.doc_id}/{candidate.system}"
            for axis in direct_score_view.AXES:
                planned.append(read(f"{owner}/direct_score/{axis}", Reading(axis, axis, GRADES, continued="1")))
                planned.append(read(f"{owner}/direct_score/{axis}/1", Reading(axis, axis, GRADES, after="1")))
        return planned

    def _view_readings(self, scaffold: Scaffold, candidate: Candidate, task: str | None, shared: dict[str, Any],
                       n_sentences: int) -> list[PlannedRequest]:
        """Each item's verdict and, sharing its prompt up to the answer, the sentences that say it where the view's
        rules read evidence (none for a one-sentence summary where the citation is apart: it is that sentence)."""
        owner = f"{candidate.doc_id}/{candidate.system}"
        ids = tuple(str(i) for i in range(1, n_sentences + 1))
        planned = []
        for name, spec in self.judge.views.items():
            if task not in (None, spec.align_task):
                continue
            rules = reading_rules(spec, self.judge.method.number)
            answers = YES_NO if name in self.judge.method.yes_no_kinds else BOOLEAN
            for item in rules.items(scaffold.items(name)):
                read = functools.partial(self._read, candidate=candidate, task=spec.align_task,
                                         variables={**shared, "item": item})
                verdict = Reading(item["id"], rules.field, answers)
                planned.append(read(f"{owner}/{name}/{item['id']}", verdict))
                if name in self.judge.method.prior_free_kinds:  # the same question of an empty summary
                    planned.append(prior_reading(self.judge, spec, item, verdict, candidate.doc_id))
                if rules.evidence and not (len(ids) == 1 and self.judge.method.citations_apart):
                    # where the summary says it, had it said it: Fact Focus counts it for kept items
                    written = f'"{rules.field}": true, '
                    planned.append(read(f"{owner}/{name}/{item['id']}/evidence", Reading(
                        item["id"], EVIDENCE, ids, continued="1" if len(ids) >= 10 else None), written=written))
                    if len(ids) >= 10:  # "1" may begin 10..19: what follows it too
                        planned.append(read(f"{owner}/{name}/{item['id']}/evidence/1",
                                            Reading(item["id"], EVIDENCE, ids, after="1"), written=written))
        return planned

    def _sentence_readings(self, document: Document, candidate: Candidate, shared: dict[str, Any],
                           sentences: list[str]) -> list[PlannedRequest]:
        """Each sentence's support and, where it is not read yes / no, its error category had it one."""
        owner = f"{candidate.doc_id}/{candidate.system}"
        errors = tuple(c for c in self.judge.method.error_categories if c != NO_ERROR)
        yes_no = self.judge.method.sentences_yes_no
        evidence = ([e.text for e in sentence_excerpts(document, sentences)]  # each sentence's best passages
                    if self.judge.method.sentences_on_passages else [document.text] * len(sentences))
        planned = []
        for i in range(1, len(sentences) + 1):
            read = functools.partial(self._read, candidate=candidate, task=sentence_check.TASK,
                                     variables={**shared, "document": evidence[i - 1], "check": i})
            verdict = Reading(f"S{i}", SUPPORTED, YES_NO if yes_no else BOOLEAN)
            planned.append(read(f"{owner}/faithfulness/S{i}", verdict))
            if not yes_no:  # the error, had it none: counted for the sentences judged unsupported
                planned.append(read(f"{owner}/faithfulness/S{i}/category", Reading(f"S{i}", CATEGORY, errors),
                                    written=f'"{SUPPORTED}": false, '))
        return planned

    def _read(self, request_id: str, reading: Reading, *, candidate: Candidate, task: str, variables: dict[str, Any],
              written: str = "") -> PlannedRequest:
        return reading_request(self.judge, request_id, reading, task=task, variables=variables,
                               doc_id=candidate.doc_id, system=candidate.system, written=written)

    # ------------------------------------------------------------ reading results

    def record(self, planned: PlannedRequest, result: Result, record: Record) -> Record:
        """A reading's record: its raw alternatives (`next_token`), and the verdict read from them: a
        boolean verdict with P(true) as its confidence, or the distribution of a value (a cited sentence, an
        error category, a grade). A reading whose alternatives hold no answer, or leave too much undecided,
        fails for its item alone, its alternatives kept."""
        reading = planned.reading
        assert reading is not None
        record.next_token = result.next_token
        if result.finish_reason == "error":
            record.failure = result.failure or "engine_crash"
            return record
        top = result.next_token or {}
        exact = self.judge.method.exact_readings
        found = distribution(top, reading.answers, reading.after, exact=exact, complete=result.answers_complete)
        if exact and found is not None and self._too_little_mass(record, found, reading, top):
            return record
        problem = _problem(found, reading, top)
        if problem is not None or found is None:
            failed = self._failed_item(reading)
            record.failure, record.validation_error = "validation", f"{failed}: {problem}"
            record.failed_items = {failed: problem or "no answer"}
            return record
        best = found.best()
        yes_no = reading.answers in (BOOLEAN, YES_NO)
        value: Any = best == reading.answers[0] if yes_no else int(best) if best.isdigit() else best
        try:  # the answer the judge would give, as its schema states it
            planned.model.model_validate({reading.key: [value] if reading.key == EVIDENCE else value})
        except ValidationError as exc:  # a reader bug, not the judge's: say so loudly
            raise AssertionError(f"reading {planned.request.id} gave an invalid answer {value!r}: {exc}") from exc
        if yes_no:
            record.parsed = {reading.item: {reading.key: value}}
            record.confidence = {reading.item: found.p[reading.answers[0]]}
        else:
            record.parsed = {reading.item: {reading.name: stored(found)}}
        return record

    def _too_little_mass(self, record: Record, found: Any, reading: Reading, top: dict[str, float]) -> bool:
        """Records an exact reading's answer mass; where it is below the floor, fails its item and says so."""
        record.answer_mass, record.bounded = round(found.answer_mass, 6), list(found.bounded) or None
        if found.answer_mass >= EXACT_ANSWER_MASS_FLOOR:
            return False
        failed = self._failed_item(reading)
        why = (f"the judge put {found.answer_mass:.3f} of its next-token probability on the answers (below "
               f"{EXACT_ANSWER_MASS_FLOOR}): it was about to write something else; likeliest next tokens "
               + ", ".join(f"{t!r} {math.exp(v):.2f}" for t, v in list(top.items())[:5]))
        record.failure, record.failed_items = "low_answer_mass", {failed: why}
        record.validation_error = f"{failed}: {why}"
        return True

    def _failed_item(self, reading: Reading) -> str:
        """What a failed reading voids: its item, or where that is not the verdict, the reading alone ("F3
        sentence_ids"): a continuation's failure matters only where its first reading needs it (`resolved`), and
        under `citations_apart` a failed citation leaves the fact's verdict standing (see `uncited`)."""
        apart = reading.after or (reading.key == EVIDENCE and self.judge.method.citations_apart)
        return f"{reading.item} {reading.name}" if apart else reading.item


def _problem(found: Distribution | None, reading: Reading, top: Mapping[str, float]) -> str | None:
    likeliest = ", ".join(f"{t!r} {v:.2f}" for t, v in list(top.items())[:5])
    if found is None:
        return f"none of the answers is among the judge's likeliest next tokens ({likeliest or 'none given'})"
    width = found.width - (found.undecided.get(reading.continued, 0.0) if reading.continued else 0.0)
    if reading.continued:  # its other spellings (" 1") are continued by the same reading
        width -= sum(w for t, w in found.undecided.items() if t != reading.continued and t.lstrip() == reading.continued)
    if width > MAX_UNDECIDED:
        return (f"undecided: {width:.2f} of the answers' mass is on tokens that begin several answers "
                f"({', '.join(t for t in found.undecided if t.lstrip() != reading.continued)}), "
                f"likeliest next tokens {likeliest}")
    return None


def reading_request(judge: JudgeSetup, request_id: str, reading: Reading, *, task: str, variables: dict[str, Any],
                    doc_id: str, system: str | None, written: str = "") -> PlannedRequest:
    """One reading: the task's prompt, then the judge's answer up to where `reading`'s value begins
    (`written`: the fields the answer holds before it)."""
    kind = "boolean" if reading.answers == BOOLEAN else "word" if reading.answers == YES_NO else \
        "integer" if reading.answers[0].isdigit() else "string"
    template = judge.template(task)
    messages, parts = template.render_parts(**variables)
    opening = "[" if reading.key == EVIDENCE else ""  # a list of sentence numbers
    answer = Message(role="assistant", content=template.answer_opening(**variables) + written
                     + value_prefix(reading.key, kind) + opening + reading.after)
    model = answer_model(reading, kind)
    request = Request(
        id=request_id, prefix_group=doc_id, messages=(*messages, answer), json_schema=None,
        sampling=Sampling(max_tokens=0, temperature=0.0, seed=judge.config.seed, top_logprobs=READING_ALTERNATIVES),
        context={"task": task, "reading": {"item": reading.item, "key": reading.key, "answers": list(reading.answers),
                                           "after": reading.after}, **variables},
        parts=(*parts, (len(messages), 0)),  # the answer a part of its own: siblings share the item
        answers=reading.space if judge.method.exact_readings else None,
    )
    return PlannedRequest(request, request.cache_key(judge.fingerprint, schema_text(model)), task, doc_id, system,
                          model, reading)


def prior_reading(judge: JudgeSetup, spec: ViewSpec, item: dict[str, Any], verdict: Reading, doc_id: str) -> PlannedRequest:
    """An item's prior: its verdict's reading with an empty summary, owned by no summary (prior_free.py)."""
    return reading_request(judge, f"{doc_id}/{PRIOR}/{spec.name}/{item['id']}", verdict, task=prior_task(spec.align_task),
                           variables={"sentences": [], "item": item}, doc_id=doc_id, system=None)


def cited(verdict: Mapping[str, Any]) -> list[int]:
    """The summary sentence read after a kept verdict (the likeliest), or none."""
    return [int(resolved(verdict, EVIDENCE).best())] if EVIDENCE in verdict else []


def citation_failed(item: str, failed: Mapping[str, str]) -> str | None:
    """Why an item's citation reading failed, where it did and its verdict stands (`citations_apart`)."""
    return failed.get(f"{item} {EVIDENCE}")


def grades(parsed: Mapping[str, Any]) -> tuple[dict[str, float] | None, str]:
    """Each direct-score axis's probability-weighted mean grade, or None and why not."""
    grades = {}
    for axis in direct_score_view.AXES:
        if axis not in parsed or axis not in parsed[axis]:
            return None, f"{axis} was not read"
        read = resolved(parsed[axis], axis)
        if read.width > MAX_UNDECIDED:
            return None, f"{axis}: {read.width:.2f} of its grade's mass left undecided"
        grades[axis] = round(expected(read), 4)
    return grades, ""


def category(verdict: Mapping[str, Any]) -> str | None:
    """An unsupported sentence's likeliest error category, where it was read."""
    return resolved(verdict, CATEGORY).best() if CATEGORY in verdict else None


def answer_model(reading: Reading, kind: str) -> type[BaseModel]:
    """The schema of a reading's answer (its cache key covers it): the field and the values it may take."""
    value: Any
    if kind == "boolean":
        value = bool
    elif kind == "word":  # a plain question does not name its item: its schema (so its cache key) does, so that a
        # sentence repeated word for word is two readings, each recorded under its own item
        value = Annotated[bool, Field(description=reading.item)]
    elif kind == "integer":
        value = Annotated[int, Field(ge=1, le=max(int(a) for a in reading.answers))]
        if reading.key == EVIDENCE:
            value = list[value]
    else:
        value = Literal[reading.answers]
    return strict_model(f"{reading.key.capitalize().replace('_', '')}Reading", **{reading.key: (value, ...)})
