"""The judge check's cases: each a document, its key facts, and summaries whose every fact's presence is
known (built in: cases.jsonl; a user's own with `check-judge --cases FILE`), validated line by line."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import InputError

CASES = Path(__file__).with_name("cases.jsonl")
PRESENT = ("verbatim", "paraphrased")
KINDS = ("verbatim", "paraphrased", "dropped", "contradicted")


Kind = Literal["verbatim", "paraphrased", "dropped", "contradicted"]


class CaseSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")
    system: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    presence: list[Kind]  # one per fact of the case, in its order


class Case(BaseModel):
    """One document, its key facts, and summaries whose presence of each fact is known."""

    model_config = ConfigDict(extra="forbid")
    doc_id: str = Field(min_length=1)
    document: str = Field(min_length=1)
    facts: list[str] = Field(min_length=1)
    summaries: list[CaseSummary] = Field(min_length=1)

    @model_validator(mode="after")
    def _a_presence_per_fact(self) -> Case:
        for summary in self.summaries:
            if len(summary.presence) != len(self.facts):
                raise ValueError(f"summary {summary.system!r}: {len(summary.presence)} presence labels for "
                                 f"{len(self.facts)} facts")
        return self


def load_cases(path: Path = CASES) -> list[Case]:
    """The check's cases, each line validated: a bad line is an error naming its line and field."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read the check's cases {path}: {exc}") from exc
    cases = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            cases.append(Case.model_validate_json(line))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "the line"
            raise InputError(f"{path}, line {number}: {where}: {problem['msg']}",
                             hint="each line: {\"doc_id\", \"document\", \"facts\": [...], \"summaries\": "
                                  "[{\"system\", \"summary\", \"presence\": [one of verbatim, paraphrased, "
                                  "dropped, contradicted per fact]}]}") from exc
    if not cases:
        raise InputError(f"{path} holds no cases")
    return cases
