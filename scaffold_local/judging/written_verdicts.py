"""Verdicts the judge writes (method versions 1-6): one summary's alignment, sentence-check and
direct-score requests, each answered in JSON under its schema, and an output parsed back into its
record (read_verdicts.py does both for the versions that read their verdicts)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from ..backends.protocol import Result
from ..data.inputs import Candidate, Document
from ..method.scaffold import Scaffold
from ..method.schemas import OutputError, describe_failed_items, parse_items, parse_output
from ..method.views import ViewSpec, direct_score, judgment_kind, verdict_field
from ..method.views import sentences as sentence_check
from ..records import Record
from .confidence import verdict_confidence
from .extraction import fitting_parts, surely_fits
from .judge_setup import JudgeSetup
from .planned import PlannedRequest
from .verdicts import cited_once_each, ids_cited_twice


def plan_written(judge: JudgeSetup, scaffold: Scaffold | None, document: Document, candidate: Candidate,
                 task: str | None, sentences: list[str]) -> list[PlannedRequest]:
    """One summary's requests (of every judgment task, or of `task`): one per view, or (method v5) one
    per item; views that failed extraction or have nothing to judge are not asked about; with no
    scaffold, only the tasks that need none (the sentence check, the direct score)."""
    n = len(sentences)
    limits, budget, method = judge.config.limits, judge.config.budget, judge.method
    shared = {"sentences": sentences, "document": document.text, "summary": candidate.summary}

    def plan(kind: str, task: str, model: type[BaseModel], max_tokens: int, **variables: Any) -> PlannedRequest:
        return judge.request(f"{candidate.doc_id}/{candidate.system}/{kind}", task, model, max_tokens,
                             candidate.doc_id, candidate.system, {**shared, **variables})

    planned = []
    for name, spec in judge.views.items():
        if scaffold is None or task not in (None, spec.align_task):
            continue
        # One request for the view, or (method v5) one per item: the view narrowed to that item.
        view = scaffold.items(name)
        parts = [(f"{name}/{item.id}", (item,)) for item in view] if method.one_item_per_request else [(name, view)]
        for kind, part in parts:
            if not spec.prompt_items(part):
                continue
            ask = functools.partial(_view_request, judge, plan, spec, n)
            request = ask(part, kind)
            if scaffold.item_sources and not surely_fits(judge, request):
                # A merged scaffold (a group, a long document) can hold more items than one answer
                # has room for: asked in parts that each surely fit, named by their items.
                planned += [ask(p, f"{name}/{'+'.join(i.id for i in p)}") for p in fitting_parts(judge, part, ask)]
            else:
                planned.append(request)
    if task in (None, sentence_check.TASK):
        # One request for every sentence, or (method v5) one per sentence.
        checks = [(f"faithfulness/S{i}", i) for i in range(1, n + 1)] if method.one_item_per_request else \
            [("faithfulness", None)]
        planned += [plan(kind, sentence_check.TASK, sentence_check.faithfulness_model(n, limits, method, only=i),
                         budget.for_items(1 if i else n), **({"check": i} if i else {})) for kind, i in checks]
    if task in (None, direct_score.TASK):
        planned.append(plan("direct_score", direct_score.TASK, direct_score.direct_score_model(limits, method),
                            budget.direct_score))
    return planned


def _view_request(judge: JudgeSetup, plan: Callable[..., PlannedRequest], spec: ViewSpec, n_sentences: int,
                  part: tuple[Any, ...], kind: str) -> PlannedRequest:
    """The alignment request of a view's items (all, or a part)."""
    items = spec.prompt_items(part)
    return plan(kind, spec.align_task, spec.alignment_model(part, n_sentences, judge.config.limits, judge.method),
                judge.config.budget.for_items(len(items)), **{spec.name: items})


def parse_written(judge: JudgeSetup, planned: PlannedRequest, result: Result, record: Record) -> Record:
    """A written output into `record`: its verdicts item by item (one bad item voids only itself), with
    P(verdict) where the engine returned token probabilities; failed with its class where nothing valid is
    left ("truncated" when cut off at max_tokens, "validation" when complete but invalid)."""
    try:
        if judgment_kind(planned.task) not in (None, direct_score.KIND):
            parsed, failed = parse_items(planned.model, result.text)
        else:
            parsed, failed = parse_output(planned.model, result.text).model_dump(), {}
        if judge.method.compact_verdicts:
            record.parsed = cited_once_each(parsed)
        else:
            failed |= ids_cited_twice(parsed)
            record.parsed = {item: verdict for item, verdict in parsed.items() if item not in failed}
            if not record.parsed:
                raise OutputError(describe_failed_items(failed))
        verdict = verdict_field(planned.task)
        if result.logprobs and verdict:
            record.confidence = verdict_confidence(result.text or "", result.logprobs, verdict,
                                                  judge.method.decided_by_evidence)
        if failed:  # the valid verdicts count; the failed items alone are a validation failure
            record.failed_items, record.failure = failed, "validation"
            record.validation_error = describe_failed_items(failed)
            record.confidence = {i: p for i, p in (record.confidence or {}).items() if i in record.parsed} or None
    except OutputError as exc:
        truncated = result.finish_reason == "length"
        record.validation_error = f"{exc}" + (" (output cut off at max_tokens)" if truncated else "")
        record.failure = "truncated" if truncated else "validation"
    return record
