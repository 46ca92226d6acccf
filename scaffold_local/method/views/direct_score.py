"""The direct score: the holistic G-Eval-style grades of a summary on four axes (DS and its axes).
It needs no scaffold."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from statistics import fmean
from typing import Annotated, Any

from pydantic import BaseModel, Field

from ..schemas import SchemaLimits, strict_model
from ..versions import MethodVersion
from .scoring import Scores

TASK = "direct_score"
KIND = "direct_score"
AXES = ("faithfulness", "completeness", "understandability", "hallucination")
METRICS = {**{f"ds_{axis}": f"DS {axis.capitalize()}" for axis in AXES}, "ds": "DS"}


@cache
def direct_score_model(limits: SchemaLimits, method: MethodVersion) -> type[BaseModel]:
    """The paper asks for the four grades first and the rationale last; method version 1 put the
    rationale first.

    The prompt (direct_score.v2.jinja, used by every later version) has anchors at 1, 5 and 10 for
    each axis in the paper's sense, shortened, not reproduced as given (its header comment says
    otherwise; it stays as it is, since its hash is part of every run's identity): the paper's
    "mostly faithful", "easy to follow", "severely disorganised" and "significant unsupported claims"
    are not in it. Version 1's anchors are its own."""
    axis = Annotated[int, Field(ge=1, le=10)]
    grades: dict[str, Any] = {name: (axis, ...) for name in AXES}
    rationale = {"rationale": (Annotated[str, Field(max_length=limits.justification_chars * 2)], ...)}
    fields = {**grades, **rationale} if method.scores_before_rationale else {**rationale, **grades}
    return strict_model("DirectScore", **fields)


def read_grades(parsed: Mapping[str, Any]) -> dict[str, int]:
    return {k: v for k, v in parsed.items() if k != "rationale"}


def score(out: Scores, grades: Mapping[str, float] | None, n_sentences: int, failure: str) -> None:
    if grades is None:
        out.unavailable(METRICS, "summary is empty" if n_sentences == 0 else f"direct score failed: {failure}")
        return
    for axis in AXES:
        out.set(f"ds_{axis}", float(grades[axis]), "")
    out.set("ds", fmean(grades[axis] for axis in AXES), "")  # the paper's "DS"
