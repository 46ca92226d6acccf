"""What a scaffold view is: the one description (`ViewSpec`) every stage reads it through.

A view says what it extracts (its item model, extraction schema, item counts, assembly), what the
judge is asked about it (the items its alignment prompt lists, the alignment schema), how verdicts
are read back, which metrics they feed, how the deterministic responder answers its requests, and
where its prompt templates are. The request planner, the metrics, the report, the user-scaffold
reader and the command line go through the registry (views/__init__.py); adding a view is one
module that builds a `ViewSpec`, its templates and its tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..schemas import CITED_KEYS, JUSTIFICATION_KEYS, ScaffoldNote, SchemaLimits
from ..versions import MethodVersion
from .judged import JudgedItem, ViewVerdicts
from .scoring import SCORED_LABELS, Scores

if TYPE_CHECKING:
    from ...records import Record

# (items with ids, notes on what was dropped or merged)
AssembledView = tuple[tuple[Any, ...], list[ScaffoldNote]]
@dataclass(frozen=True)
class ReadingRules:
    """How a method version that reads its verdicts (7) asks about a view: one reading per item, whose
    answer is `{"<field>": true}` or `{"<field>": false}`; the verdict is the judge's P(true) there."""

    field: str  # the verdict's key: "inferred"
    # The items read, each a dict with its "id" that the template renders as `item`, in scaffold order:
    # only those some metric counts (a fact labelled "other" is not read; an entity attribute always is).
    items: Callable[[Sequence[Any]], list[dict[str, Any]]]
    evidence: bool = False  # a kept item's summary sentences are read after its verdict (Fact Focus)


@dataclass(frozen=True)
class ViewSpec:
    name: str  # the key of its items in a scaffold, and of its tasks: extract_<name>, align_<name>
    noun: str  # "fact": in messages such as "fact alignment failed"
    title: str  # for tables
    item_model: type[BaseModel]  # one stored item (Fact, KeyQuestion, Entity)
    extraction_model: Callable[[SchemaLimits, MethodVersion], type[BaseModel]]
    item_counts: Callable[[SchemaLimits], tuple[int, int]]  # (min, max) the extraction prompt asks for
    assemble: Callable[[Mapping[str, Any]], AssembledView]
    # The callables below take the view's items (a scaffold's `items(name)`), in scaffold order.
    judged: Callable[[Sequence[Any]], list[JudgedItem]]  # every item that gets a verdict
    prompt_items: Callable[[Sequence[Any]], list[dict[str, Any]]]  # what the alignment prompt lists
    alignment_model: Callable[[Sequence[Any], int, SchemaLimits, MethodVersion], type[BaseModel]]
    read: Callable[[Mapping[str, Any]], ViewVerdicts]
    # The metrics its verdicts feed (key -> display name); the first is its headline score, shown
    # beside the other views' headlines.
    metrics: Mapping[str, str]
    score: Callable[[Scores, Sequence[JudgedItem], ViewVerdicts, int], None]  # (out, judged, verdicts, sentences)
    verdict_field: str | None = None  # the verdict word ("inferred") whose probability is P(kept)
    drill_labels: tuple[str, ...] = ("main point",)  # the items the report's drill-down lists
    counted_labels: tuple[str, ...] = SCORED_LABELS  # the labels whose verdicts some metric counts
    templates: Path | None = None  # where its prompt templates are; None: the package's prompts/
    reading: ReadingRules | None = None  # how method version 7 reads its verdicts; None: it cannot

    @property
    def extract_task(self) -> str:
        return f"extract_{self.name}"

    @property
    def align_task(self) -> str:
        return f"align_{self.name}"

    @property
    def tasks(self) -> tuple[str, str]:
        return self.extract_task, self.align_task

    def read_record(self, record: Record) -> ViewVerdicts | None:
        """The verdicts of one judgment record of this view, with the items whose verdict failed; None
        when its output failed as a whole."""
        if record.parsed is None:
            return None
        return dataclasses.replace(self.read(record.parsed), failed=dict(record.failed_items or {}))


def first_of(verdict: Mapping[str, Any], keys: tuple[str, ...], default: Any = None) -> Any:
    """The value under whichever of a method version's names for one field the verdict uses."""
    return next((verdict[k] for k in keys if k in verdict), default)


def justifications(parsed: Mapping[str, Any]) -> dict[str, str]:
    return {i: first_of(v, JUSTIFICATION_KEYS, "") for i, v in parsed.items()}


def read_cited(verdict_field: str) -> Callable[[Mapping[str, Any]], ViewVerdicts]:
    """The reader of verdicts that cite summary sentences under `verdict_field` (facts, questions)."""
    def read(parsed: Mapping[str, Any]) -> ViewVerdicts:
        cited = {i: first_of(v, CITED_KEYS) for i, v in parsed.items()}
        # Compact verdicts have no verdict word: citing a sentence is the verdict.
        return ViewVerdicts(kept={i: v.get(verdict_field, bool(cited[i])) for i, v in parsed.items()},
                            cited=cited, justification=justifications(parsed))
    return read
