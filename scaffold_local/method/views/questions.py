"""The questions view: key questions of the source with expected answers, each answered or not by
the summary (QPS, QC)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from ..schemas import Label, SchemaLimits, cited_alignment_model, list_of, statement, strict_model
from ..versions import MethodVersion
from .assembly import unique
from .scoring import SCORED_LABELS, Scores, by_label
from .spec import AssembledView, JudgedItem, ReadingRules, ViewSpec, ViewVerdicts, read_cited


class KeyQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    question: str
    expected_answer: str
    provenance: str
    label: Label


@cache
def question_extraction_model(limits: SchemaLimits, method: MethodVersion) -> type[BaseModel]:
    item = strict_model(
        "ExtractedQuestion",
        question=(statement(limits), ...), expected_answer=(statement(limits), ...),
        provenance=(Annotated[str, Field(min_length=1, max_length=40)], ...), label=(Label, ...),
    )
    return list_of("QuestionExtraction", "questions", item, limits.max_questions)


def question_alignment_model(question_ids: tuple[str, ...], n_sentences: int, limits: SchemaLimits,
                             method: MethodVersion) -> type[BaseModel]:
    return cited_alignment_model("QuestionAlignment", "answered", question_ids, n_sentences, limits, method)


def assemble_questions(parsed: Mapping[str, Any]) -> AssembledView:
    items, notes = unique(parsed["questions"], "question", "questions", lambda i: f"Q{i}", "question")
    return tuple(
        KeyQuestion(id=f"Q{i}", question=q["question"], expected_answer=q["expected_answer"],
                    provenance=q["provenance"], label=q["label"])
        for i, q in enumerate(items, 1)
    ), notes


def question_metrics(out: Scores, judged: Sequence[JudgedItem], verdicts: ViewVerdicts, n_sentences: int) -> None:
    main, supp = by_label(judged, verdicts)
    out.preference("qps", main, supp, "question", "scaffold has no main questions")
    out.share("qc", [*main, *supp], "question", "scaffold has no main or supporting questions")


QUESTIONS = ViewSpec(
    name="questions", noun="question", title="Key questions", item_model=KeyQuestion,
    extraction_model=question_extraction_model,
    item_counts=lambda limits: (limits.min_questions, limits.max_questions),
    assemble=assemble_questions,
    judged=lambda questions: [JudgedItem(q.id, q.label, q.question) for q in questions],
    prompt_items=lambda questions: [{"id": q.id, "question": q.question, "expected_answer": q.expected_answer,
                                     "label": q.label} for q in questions],
    alignment_model=lambda questions, n, limits, method: question_alignment_model(
        tuple(q.id for q in questions), n, limits, method),
    read=read_cited("answered"),
    metrics={"qps": "QPS", "qc": "QC"},
    score=question_metrics,
    verdict_field="answered",
    reading=ReadingRules("answered", lambda questions: [
        {"id": q.id, "question": q.question, "expected_answer": q.expected_answer, "label": q.label}
        for q in questions if q.label in SCORED_LABELS]),
)
