"""Running the judge check on its cases and keeping its result beside the store, where `score` and `show`
cite it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..judging.config import ModelConfig
from .cases import CASES, KINDS, PRESENT, Kind, load_cases

if TYPE_CHECKING:  # the check's statistics (scipy) load only when it runs, not on every `score`
    from ..metaeval.agreement import Estimate
    from ..runs.pipeline import Pipeline


@dataclass(frozen=True)
class CheckedItem:
    doc_id: str
    system: str
    fact: int  # 1-based, in the case's order
    kind: str
    judged_present: bool
    p_kept: float | None


@dataclass
class CheckResult:
    judge: str
    items: int
    failed: int
    judge_agreement: dict[str, Estimate]
    overlap_agreement: dict[str, Estimate]
    kept_rate: dict[str, dict[str, float]] = field(default_factory=dict)  # scorer -> kind -> share judged present
    method: int | None = None
    decision: str = "the judge's own verdict word"  # or its calibrated threshold on P(kept)
    auroc: Estimate | None = None  # of P(kept), where the judge records it
    p_kept_items: int = 0  # items with P(kept), which the AUROC ranks
    not_a_confidence: str | None = None  # what P(kept) measures where it is not a confidence (method/versions.py)
    cases: str = "built-in"  # or the file of the user's own cases, with its SHA-256
    checked: list[CheckedItem] = field(default_factory=list)  # every item's verdict, for a second look

    @property
    def no_better_than_overlap(self) -> bool:
        judge, words = self.judge_agreement["balanced_accuracy"].value, self.overlap_agreement["balanced_accuracy"].value
        return judge is None or (words is not None and judge <= words)

    def describe(self) -> dict[str, Any]:
        return {"judge": self.judge, "method_version": self.method, "items": self.items, "failed": self.failed,
                "decision": self.decision,
                "judge_balanced_accuracy": self.judge_agreement["balanced_accuracy"].value,
                "judge_balanced_accuracy_interval": [self.judge_agreement["balanced_accuracy"].low,
                                                     self.judge_agreement["balanced_accuracy"].high],
                "auroc": None if self.auroc is None else self.auroc.value,
                "p_kept_items": self.p_kept_items, "p_kept_not_a_confidence": self.not_a_confidence,
                "overlap_balanced_accuracy": self.overlap_agreement["balanced_accuracy"].value,
                "kept_rate": self.kept_rate, "no_better_than_overlap": self.no_better_than_overlap,
                "cases": self.cases, "items_checked": [asdict(item) for item in self.checked],
                "checked_at": datetime.now(UTC).isoformat(timespec="seconds")}


# A checked fact: (doc, kind, the summary's requests, fact index, system, summary, fact)
Item = tuple[str, Kind, list[Any], int, str, str, str]


def run_check(pipeline: Pipeline, cases_file: Path | None = None) -> CheckResult:
    from ..metaeval.agreement import binary_agreement
    from ..metaeval.realsumm import OVERLAP_PRESENT
    from ..method.text import overlap

    items, planned_all = _asked(pipeline, cases_file)
    records, _ = pipeline.answer(planned_all, "checking the judge")
    truth, judged, words, groups, p_kept = [], [], [], [], []
    kinds: list[str] = []
    failed = 0
    checked = []
    for doc_id, presence, planned, index, system, summary_text, fact in items:
        record = pipeline.judge.by_kind(planned, records).get("facts")
        verdicts = pipeline.judge.verdicts("facts", record) if record is not None and record.parsed is not None else None
        if record is None or verdicts is None or verdicts.failure(f"F{index}"):
            failed += 1  # this fact's verdict failed (or the whole output did): counted neither way
            continue
        truth.append(int(presence in PRESENT))
        judged.append(int(bool(verdicts.kept.get(f"F{index}"))))
        p_kept.append((record.confidence or {}).get(f"F{index}"))
        checked.append(CheckedItem(doc_id, system, index, presence, bool(judged[-1]), p_kept[-1]))
        words.append(int(overlap(fact, summary_text) >= OVERLAP_PRESENT))
        groups.append(doc_id)
        kinds.append(presence)
    result = CheckResult(pipeline.config.name, len(truth), failed, binary_agreement(truth, judged, groups),
                         binary_agreement(truth, words, groups), method=pipeline.method.number, checked=checked)
    if cases_file is not None:
        result.cases = f"{cases_file} (SHA-256 {hashlib.sha256(cases_file.read_bytes()).hexdigest()[:12]})"
    _add_decision_and_ranking(result, pipeline, truth, p_kept, groups)
    for scorer, decisions in (("judge", judged), ("word overlap", words)):
        result.kept_rate[scorer] = {kind: sum(d for d, k in zip(decisions, kinds) if k == kind) / max(1, kinds.count(kind))
                                    for kind in KINDS}
    return result


def _asked(pipeline: Pipeline, cases_file: Path | None) -> tuple[list[Item], list[Any]]:
    """Every case's facts as checked items, and every summary's fact requests."""
    from ..data.inputs import Candidate, Document
    from ..metaeval.realsumm import facts_scaffold
    from ..method.text import normalize, sha256_text

    items: list[Item] = []
    planned_all = []
    for case in load_cases(cases_file or CASES):
        text = normalize(case.document)
        document = Document(doc_id=case.doc_id, text=text, sha256=sha256_text(text))
        scaffold = facts_scaffold(document, case.facts, origin="judge-check")
        for n, summary in enumerate(case.summaries, 1):
            candidate = Candidate(record=n, doc_id=document.doc_id, system=summary.system, summary=summary.summary)
            planned = pipeline.judge.plan(scaffold, document, candidate, task="align_facts")
            planned_all += planned
            for i, (fact, kind) in enumerate(zip(case.facts, summary.presence), 1):
                items.append((document.doc_id, kind, planned, i, summary.system, summary.summary, fact))
    return items, planned_all


def _add_decision_and_ranking(result: CheckResult, pipeline: Pipeline, truth: list[int], p_kept: list[float | None],
                              groups: list[str]) -> None:
    """How the verdicts were decided, and how well P(kept) ranks the kept facts above the missed ones."""
    from ..metaeval.agreement import ranking

    threshold = pipeline.judge.thresholds.get("facts")
    if threshold is not None:
        result.decision = f"P(kept) >= {threshold:g}, the config's calibrated threshold"
    elif pipeline.method.reads_verdicts:
        result.decision = "P(kept) >= 0.5 (no calibrated threshold)"
    # P(kept) is not offered where the decision fell on a token never generated (confidence.py): ranked over the rest.
    offered = [(t, p, g) for t, p, g in zip(truth, p_kept, groups) if p is not None]
    if offered:
        labels, probabilities, documents = zip(*offered)
        result.auroc = ranking(list(labels), list(probabilities), list(documents))
        result.p_kept_items = len(offered)
        result.not_a_confidence = pipeline.method.not_a_confidence


def record_path(store: Path, config: ModelConfig, method: int, cases_file: Path | None = None) -> Path:
    """The built-in check's result, or (`cases_file`) the result on the user's own cases, kept apart."""
    own = "" if cases_file is None else f"-cases-{hashlib.sha256(cases_file.read_bytes()).hexdigest()[:12]}"
    return store / "judge-checks" / f"{config.name}-{config.fingerprint()[:12]}-method-v{method}{own}.json"


def save(store: Path, config: ModelConfig, result: CheckResult, cases_file: Path | None = None) -> Path:
    path = record_path(store, config, result.method or 0, cases_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.describe(), indent=1), encoding="utf-8")
    return path


# Below this balanced accuracy on the built-in cases a judge is not fit to decide anything (a sanity gate, not a
# selection rule: the cases were written after method version 5's first run).
SANITY_GATE = 0.80


def saved_balanced_accuracy(store: Path, config: ModelConfig, method: int) -> float | None:
    """The balanced accuracy of this judge's saved built-in check under this method version, or None where it was
    not run (or gave no valid verdict)."""
    path = record_path(store, config, method)
    return json.loads(path.read_text(encoding="utf-8"))["judge_balanced_accuracy"] if path.is_file() else None


def describe_saved(store: Path, config: ModelConfig, method: int) -> str | None:
    """The saved check of this judge under this method version in words, or None where it was not run."""
    path = record_path(store, config, method)
    if not path.is_file():
        return None
    saved = json.loads(path.read_text(encoding="utf-8"))
    ba, (low, high) = saved["judge_balanced_accuracy"], saved["judge_balanced_accuracy_interval"]
    if ba is None:
        return "no balanced accuracy (no valid verdicts)"
    return (f"balanced accuracy {ba:.3f} [{low:.3f}, {high:.3f}] on {saved['items']} built-in items "
            f"(word overlap {saved['overlap_balanced_accuracy']:.3f})")
