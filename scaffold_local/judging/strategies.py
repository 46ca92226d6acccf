"""How each judgment kind is asked and read back, chosen once when a judge is bound to its method version.

A kind is *written* (the judge writes its verdicts as JSON under a schema: written_verdicts.py) or *read* (each
verdict read at its answer position: read_verdicts.py). `Judge.strategies` holds one per kind (a view, the sentence
check, the direct score): planning a summary's requests and turning its records into metric inputs ask the kind's
strategy, never the method version again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..data.inputs import Candidate, Document
from ..method.scaffold import Scaffold
from ..method.views import ViewVerdicts
from ..method.views import direct_score as direct_score_view
from ..method.views import sentences as sentence_check
from ..records import Record
from .judge_setup import JudgeSetup
from .planned import PlannedRequest
from .read_verdicts import SUPPORTED, VerdictReader, grades
from .read_verdicts import category as read_category
from .written_verdicts import plan_written


class WrittenJudgment:
    """Verdicts the judge writes, as the output states them."""

    def __init__(self, judge: JudgeSetup):
        self.judge = judge

    def plan(self, scaffold: Scaffold | None, document: Document, candidate: Candidate, task: str,
             sentences: list[str]) -> list[PlannedRequest]:
        return plan_written(self.judge, scaffold, document, candidate, task, sentences)

    def view_verdicts(self, view: str, record: Record) -> tuple[ViewVerdicts, Mapping[str, Any] | None]:
        """The view's verdicts as written, and no readings (a written verdict cites as its output says)."""
        return _as_written(self.judge, view, record), None

    def sentence_verdicts(self, record: Record, n_sentences: int, weighted: bool) -> list[float | None]:
        """Each sentence faithful (1) or not (0) as written; None where its verdict failed."""
        faithful = sentence_check.read_faithful(record.parsed or {}, record.failed_items or {}, n_sentences)
        return [None if ok is None else float(ok) for ok in faithful]

    def direct_score(self, parsed: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
        return direct_score_view.read_grades(parsed), ""

    def category(self, verdict: Mapping[str, Any]) -> str | None:
        """An unsupported sentence's error category, as written."""
        return verdict.get("category")


class ReadJudgment:
    """Verdicts read from the judge's next-token probabilities, counted at the judge's thresholds."""

    def __init__(self, judge: JudgeSetup, reader: VerdictReader):
        self.judge, self.reader = judge, reader

    def plan(self, scaffold: Scaffold | None, document: Document, candidate: Candidate, task: str,
             sentences: list[str]) -> list[PlannedRequest]:
        return self.reader.plan(scaffold, document, candidate, task, sentences)

    def view_verdicts(self, view: str, record: Record) -> tuple[ViewVerdicts, Mapping[str, Any] | None]:
        """The view's verdicts at the likeliest answer (the thresholds then decide them from P), and the readings,
        whose cited sentences count where an item is kept."""
        parsed = record.parsed
        if parsed is None:
            return _as_written(self.judge, view, record), None
        field = self.judge.views[view].reading.field  # type: ignore[union-attr]  # read only where it has one
        return ViewVerdicts(kept={i: v[field] for i, v in parsed.items() if field in v},
                            failed=dict(record.failed_items or {})), parsed

    def sentence_verdicts(self, record: Record, n_sentences: int, weighted: bool) -> list[float | None]:
        """Each sentence faithful (1) or not (0) at the judge's threshold, or P(supported) when `weighted`; None where
        its verdict failed."""
        parsed, failed = record.parsed or {}, record.failed_items or {}
        threshold, confidence = self.judge.thresholds.get(sentence_check.KIND), record.confidence or {}
        out: list[float | None] = []
        for i in range(1, n_sentences + 1):
            item = f"S{i}"
            if item in failed or item not in confidence:
                out.append(None)
            elif weighted:
                out.append(confidence[item])
            else:
                out.append(float(confidence[item] >= threshold if threshold is not None else parsed[item][SUPPORTED]))
        return out

    def direct_score(self, parsed: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
        return grades(parsed)

    def category(self, verdict: Mapping[str, Any]) -> str | None:
        """An unsupported sentence's likeliest error category, where it was read."""
        return read_category(verdict)


def _as_written(judge: JudgeSetup, view: str, record: Record) -> ViewVerdicts:
    """The view's verdicts as its record states them (none where it holds none)."""
    return judge.views[view].read_record(record) or ViewVerdicts(kept={})


JudgmentStrategy = WrittenJudgment | ReadJudgment
