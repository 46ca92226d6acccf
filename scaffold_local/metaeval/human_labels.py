"""The evaluation data: one JSON object per source document, in one normalized shape
({"doc_id", "document", "keyfacts"?, "summaries": [{"system", "summary", "human": {...}}]}), each line
checked against its dataset's model (a bad line is an error naming the line and the field), and seeded
sampling by document so a CPU run finishes in minutes. Your own labels in the same shape work alike; with
one annotator per item (no `*_per_annotator` lists) there is no human ceiling, and the tables say so."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import EvalDataError

Label = Annotated[int, Field(ge=0, le=1)]


class _Row(BaseModel):
    model_config = ConfigDict(extra="allow")  # the datasets carry more than the package reads


class _RealsummHuman(_Row):
    scu_presence: list[Label]  # per key fact: the majority of the annotators (or the one annotator)
    litepyramid_recall: float
    scu_presence_per_annotator: list[list[Label]] | None = None


class _RealsummSummary(_Row):
    system: str = Field(min_length=1)
    summary: str
    human: _RealsummHuman


class _Realsumm(_Row):
    doc_id: str | int
    document: str = Field(min_length=1)
    keyfacts: list[str] = Field(min_length=1)
    summaries: list[_RealsummSummary] = Field(min_length=1)

    @model_validator(mode="after")
    def _a_label_per_key_fact(self) -> _Realsumm:
        for n, summary in enumerate(self.summaries):
            labels = [summary.human.scu_presence, *(summary.human.scu_presence_per_annotator or [])]
            if any(len(row) != len(self.keyfacts) for row in labels):
                raise ValueError(f"summaries.{n}.human: a presence label per key fact ({len(self.keyfacts)}), in "
                                 "scu_presence and in each annotator's list")
        return self


class _FrankHuman(_Row):
    sentence_error_majority: list[Label]
    frank_summary_scores: dict[str, float]
    sentence_error_per_annotator: list[list[Label]] | None = None


class _FrankSummary(_Row):
    system: str = Field(min_length=1)
    sentences: list[str] = Field(min_length=1)
    human: _FrankHuman

    @model_validator(mode="after")
    def _a_label_per_sentence(self) -> _FrankSummary:
        labels = [self.human.sentence_error_majority, *(self.human.sentence_error_per_annotator or [])]
        if any(len(row) != len(self.sentences) for row in labels):
            raise ValueError(f"human: an error label per sentence ({len(self.sentences)})")
        if "Factuality" not in self.human.frank_summary_scores:
            raise ValueError("human.frank_summary_scores: no Factuality")
        return self


class _Frank(_Row):
    doc_id: str | int
    document: str = Field(min_length=1)
    summaries: list[_FrankSummary] = Field(min_length=1)


class _SummevalHuman(_Row):
    expert_mean_coherence: float
    expert_mean_consistency: float
    expert_mean_fluency: float
    expert_mean_relevance: float


class _SummevalSummary(_Row):
    system: str = Field(min_length=1)
    summary: str
    human: _SummevalHuman


class _Summeval(_Row):
    doc_id: str | int
    document: str = Field(min_length=1)
    summaries: list[_SummevalSummary] = Field(min_length=1)


class _SummeditsHuman(_Row):
    label_consistent: Label  # 1: consistent with the document
    edit_types: list[str] | None = None  # of an inconsistent edit


class _SummeditsSummary(_Row):
    system: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    human: _SummeditsHuman


class _Summedits(_Row):
    doc_id: str | int
    source_dataset: str = Field(min_length=1)  # "SummEdits/<domain>"
    document: str = Field(min_length=1)
    summaries: list[_SummeditsSummary] = Field(min_length=1)


class _AggrefactHuman(_Row):
    is_consistent: Label  # 1: no error annotated
    error_types: list[str] | None = None
    annotated_error_spans: list[str | list[str]] | None = None  # CLIFF: strings; Goyal'21: lists of strings


class _AggrefactSummary(_Row):
    system: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    human: _AggrefactHuman


class _Aggrefact(_Row):
    doc_id: str | int
    source_dataset: str = Field(min_length=1)  # "XSum test", "CNN/DailyMail test"
    document: str = Field(min_length=1)
    summaries: list[_AggrefactSummary] = Field(min_length=1)


SHAPES: dict[str, type[BaseModel]] = {"realsumm": _Realsumm, "frank": _Frank, "summeval": _Summeval,
                                      "summedits": _Summedits, "aggrefact": _Aggrefact}

FILES = {
    "realsumm": "realsumm/realsumm.jsonl",
    "frank": "frank/frank_sentence_level.jsonl",
    "summeval": "summeval/summeval.jsonl",
    "summedits": "summedits/summedits.jsonl",
    "aggrefact": "aggrefact_spans/aggrefact_spans.jsonl",
}


SPLITS = ("all", "dev", "test")


def split_of(doc_id: str) -> str:
    """A document's fixed half: "dev" (where formats and thresholds are chosen) or "test" (where they
    are checked), decided by a hash of its id, so the halves never share a document whatever the
    sample size or seed."""
    return "dev" if hashlib.sha256(f"scaffold-local split:{doc_id}".encode()).digest()[0] < 128 else "test"


def load(data_dir: Path, dataset: str, limit: int | None = None, seed: int = 0, split: str = "all",
         per_document: int | None = None) -> list[dict[str, Any]]:
    """The dataset's documents (of one split, or all): all of them, or `limit` drawn at random
    (seeded) by document; with `per_document`, that many of each document's summaries, drawn at
    random (seeded), so that a CPU run can cover more documents."""
    if split not in SPLITS:
        raise EvalDataError(f"unknown split {split!r} (known: {', '.join(SPLITS)})")
    path = data_dir / FILES[dataset]
    if not path.is_file():
        raise EvalDataError(f"{path} not found: point --data at the evaluation-data folder (it holds {FILES[dataset]})")
    documents = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                document = json.loads(line)
                SHAPES[dataset].model_validate(document)
            except json.JSONDecodeError as exc:
                raise EvalDataError(f"{path}, line {number}: not JSON ({exc.msg})") from None
            except ValidationError as exc:
                problem = exc.errors()[0]
                loc = ".".join(str(part) for part in problem["loc"])
                where = f"{loc}: " if loc else ""  # a rule over the whole document has no field of its own
                raise EvalDataError(f"{path}, line {number}: {where}{problem['msg'].removeprefix('Value error, ')}",
                                    hint=f"each line is one document in the {dataset} shape: see the "
                                         "meta-evaluation page of the documentation") from None
            documents.append(document)
    if not documents:
        raise EvalDataError(f"{path} holds no documents")
    if split != "all":
        documents = [d for d in documents if split_of(str(d["doc_id"])) == split]
    if limit is not None and limit < len(documents):
        documents = random.Random(seed).sample(documents, limit)
    if per_document is not None:
        documents = [{**d, "summaries": _sample(d["summaries"], per_document, f"{seed}:{d['doc_id']}")}
                     for d in documents]
    return documents


def _sample(summaries: list[dict[str, Any]], n: int, seed: str) -> list[dict[str, Any]]:
    """n summaries in their original order (all when there are no more)."""
    if n >= len(summaries):
        return summaries
    keep = set(random.Random(seed).sample(range(len(summaries)), n))
    return [s for i, s in enumerate(summaries) if i in keep]
