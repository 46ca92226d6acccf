"""The verdicts a run's metrics counted, item by item: what `show --summary` and the report print, so
that what a reader sees on screen is what the numbers used (the threshold applied, P(kept) shown)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..judging.read_verdicts import CATEGORY
from ..judging.readings import resolved
from ..method.views import ViewSpec, ViewVerdicts, direct_score
from ..method.views import sentences as sentence_check
from ..records import Record
from ..runs.run import Run
from .judge_text import shown

# A P(kept) this close to the threshold is a coin toss for this judge: flagged wherever it is shown.
NEAR_THRESHOLD = 0.05

Status = Literal["kept", "missed", "failed", "not counted", "not asked"]
SentenceStatus = Literal["supported", "unsupported", "failed", "not judged"]


@dataclass(frozen=True)
class CountedItem:
    """One scaffold item's verdict for one summary, as the metrics counted it."""

    view: str
    id: str
    label: str
    text: str  # "<entity>: <attribute>" for an attribute
    status: Status  # "not counted": labelled so that no metric reads it; "not asked": not sent at all
    p: float | None = None  # P(kept) where the judge's probability was recorded
    threshold: float | None = None  # the P the metrics count as kept, where one applies
    cited: tuple[int, ...] = ()  # summary sentences (1-based)
    justification: str = ""
    expected_answer: str | None = None  # a key question's

    @property
    def near_threshold(self) -> bool:
        return self.p is not None and self.threshold is not None and abs(self.p - self.threshold) < NEAR_THRESHOLD


@dataclass(frozen=True)
class SentenceVerdict:
    """One summary sentence's faithfulness as F counted it."""

    number: int
    text: str
    status: SentenceStatus
    p: float | None = None  # P(supported), where read
    threshold: float | None = None
    category: str | None = None  # the error category the judge gave (FineSurE's)
    reason: str = ""

    @property
    def near_threshold(self) -> bool:
        return self.p is not None and self.threshold is not None and abs(self.p - self.threshold) < NEAR_THRESHOLD


@dataclass
class SummaryEvidence:
    doc_id: str
    system: str
    sentences: list[str]
    items: list[CountedItem] = field(default_factory=list)
    view_failures: dict[str, str] = field(default_factory=dict)  # view -> why it has no verdicts
    sentence_verdicts: list[SentenceVerdict] = field(default_factory=list)
    sentence_failure: str | None = None
    direct_score_rationale: str = ""
    direct_score_failure: str | None = None


def _counted_item(spec: ViewSpec, item: Any, verdicts: ViewVerdicts, record: Record, threshold: float | None,
                  expected_answer: str | None, told: set[str], sentences: list[str], reads: bool) -> CountedItem:
    """One item's verdict as its scores counted it: kept, missed, failed, not asked or not counted, with its P, the
    threshold that decided it, the sentences it cites and the judge's justification (an entity's shown once)."""
    counted = item.label in spec.counted_labels
    status: Status
    if verdicts.failure(item.id):
        status = "failed"
    elif not counted:  # a version that reads its verdicts does not ask about such items
        status = "not asked" if item.id not in verdicts.kept and reads else "not counted"
    else:  # an item without a verdict of its own is missed (an entity's verdict lists only kept attributes)
        status = "kept" if verdicts.kept.get(item.id, 0) >= 0.5 else "missed"
    p = (record.confidence or {}).get(item.id)
    text = f"{item.owner}: {item.text}" if item.owner else item.text
    cited = tuple(verdicts.cited.get(item.id, ()))
    written = verdicts.justification.get(item.id)
    if written is None and (owner := item.id.split(".")[0]) != item.id and owner not in told:
        written = verdicts.justification.get(owner)  # the entity's, shown once
        told.add(owner)
    justification = shown(written or "", f"{text} {' '.join(sentences)}")
    item_threshold = threshold if p is not None else None
    if status == "missed" and cited and item_threshold is not None:  # the written answer said kept
        justification = (f"the judge's written answer cited sentence {', '.join(map(str, cited))} as keeping "
                         f"it; P(kept) {p:.3f} is below the threshold {item_threshold:.3f}, which decides")
        cited = ()
    return CountedItem(view=spec.name, id=item.id, label=item.label, text=text, status=status, p=p,
                       threshold=item_threshold, cited=cited, justification=verdicts.failure(item.id) or justification,
                       expected_answer=expected_answer)


def summary_evidence(run: Run, candidate: Mapping[str, Any]) -> SummaryEvidence:
    """Every verdict of one summary (a row of `run.candidates`) exactly as its scores counted it."""
    doc_id, system = candidate["doc_id"], candidate["system"]
    evidence = SummaryEvidence(doc_id, system, list(candidate["sentences"]))
    scaffold = run.scaffold(candidate["scaffold_key"]) if candidate.get("scaffold_key") else None
    records = run.records_for(doc_id, system)
    judge = run.judge
    for spec, items in scaffold.each_view() if scaffold is not None else ():
        if not items or not spec.prompt_items(items):
            continue
        record = records.get(spec.name)
        if record is None or record.parsed is None:
            evidence.view_failures[spec.name] = _why_absent(record)
            continue
        verdicts = run.verdicts(spec.name, record)
        threshold = None if run.spec.weighted_verdicts else judge.thresholds.get(spec.name)
        expected = {i.id: getattr(i, "expected_answer", None) for i in items}
        told: set[str] = set()  # entities whose one justification is already shown (on their first attribute)
        evidence.items += [_counted_item(spec, item, verdicts, record, threshold, expected.get(item.id), told,
                                         evidence.sentences, run.spec.reads_verdicts) for item in spec.judged(items)]
    _sentence_verdicts(run, evidence, records.get(sentence_check.KIND))
    ds = records.get(direct_score.KIND)
    if ds is None or ds.parsed is None:
        evidence.direct_score_failure = _why_absent(ds)
    else:
        evidence.direct_score_rationale = shown(str(ds.parsed.get("rationale", "")), " ".join(evidence.sentences))
    return evidence


def _sentence_verdicts(run: Run, evidence: SummaryEvidence, record: Record | None) -> None:
    if record is None or record.parsed is None:
        evidence.sentence_failure = _why_absent(record)
        return
    judge = run.judge
    counted = judge.sentence_verdicts(record, len(evidence.sentences), run.spec.weighted_verdicts)
    threshold = None if run.spec.weighted_verdicts else judge.thresholds.get(sentence_check.KIND)
    failed = record.failed_items or {}
    for number, (text, faithful) in enumerate(zip(evidence.sentences, counted, strict=True), 1):
        item = f"S{number}"
        verdict = record.parsed.get(item) or {}
        p = (record.confidence or {}).get(item)
        category = verdict.get(CATEGORY)
        if isinstance(category, dict):  # read, not written (method version 7): the likeliest category
            category = resolved(verdict, CATEGORY).best() if faithful is not None and faithful < 0.5 else None
        status: SentenceStatus = "failed" if item in failed else "not judged" if faithful is None else (
            "supported" if faithful >= 0.5 else "unsupported")
        evidence.sentence_verdicts.append(SentenceVerdict(
            number, text, status, p, threshold if p is not None else None, category,
            failed.get(item) or shown(str(verdict.get("reason") or verdict.get("why") or ""), text)))


def _why_absent(record: Record | None) -> str:
    return "not judged" if record is None else record.validation_error or record.error or "no output"
