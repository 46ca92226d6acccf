"""The built-in judge check: can this judge tell whether a summary conveys a fact better than word
overlap can?

`cases.jsonl` (shipped with the package) holds six short documents written for this check, each
with four key facts and three summaries built so that every fact's presence is known: kept
verbatim, paraphrased (few shared words), dropped, or contradicted (many shared words, the
opposite meaning). Verbatim and paraphrased facts are present; dropped and contradicted ones are
not. Word overlap gets verbatim and dropped facts right and is fooled by the other two, so a
judge that reads meaning beats it clearly; one that does not, does not.
"""

from __future__ import annotations

import glob
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ModelConfig

if TYPE_CHECKING:  # the check's statistics (scipy) load only when it runs, not on every `score`
    from ..metaeval.agreement import Estimate
    from ..pipeline import Pipeline

CASES = Path(__file__).with_name("cases.jsonl")
PRESENT = ("verbatim", "paraphrased")
KINDS = ("verbatim", "paraphrased", "dropped", "contradicted")


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
    not_a_confidence: str | None = None  # what P(kept) measures where it is not a confidence (method.py)

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
                "checked_at": datetime.now(UTC).isoformat(timespec="seconds")}


def load_cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_check(pipeline: Pipeline) -> CheckResult:
    from ..data import Candidate, Document
    from ..metaeval.agreement import binary_agreement, ranking
    from ..metaeval.realsumm import OVERLAP_PRESENT, facts_scaffold
    from ..text import normalize, overlap, sha256_text

    items: list[tuple[str, str, list[Any], int, str, str]] = []  # (doc, kind, requests, fact index, summary, fact)
    planned_all = []
    for case in load_cases():
        text = normalize(case["document"])
        document = Document(doc_id=case["doc_id"], text=text, sha256=sha256_text(text))
        scaffold = facts_scaffold(document, case["facts"], origin="judge-check")
        for n, summary in enumerate(case["summaries"], 1):
            candidate = Candidate(record=n, doc_id=document.doc_id, system=summary["system"], summary=summary["summary"])
            planned = pipeline.judge.plan(scaffold, document, candidate, task="align_facts")
            planned_all += planned
            for i, (fact, kind) in enumerate(zip(case["facts"], summary["presence"]), 1):
                items.append((document.doc_id, kind, planned, i, summary["summary"], fact))
    records, _ = pipeline.answer(planned_all, "checking the judge")

    truth, judged, words, groups, kinds, p_kept = [], [], [], [], [], []
    failed = 0
    for doc_id, kind, planned, index, summary, fact in items:
        record = pipeline.judge.by_kind(planned, records).get("facts")
        verdicts = pipeline.judge.verdicts("facts", record) if record is not None and record.parsed is not None else None
        if record is None or verdicts is None or verdicts.failure(f"F{index}"):
            failed += 1  # this fact's verdict failed (or the whole output did): counted neither way
            continue
        truth.append(int(kind in PRESENT))
        judged.append(int(bool(verdicts.kept.get(f"F{index}"))))
        p_kept.append((record.confidence or {}).get(f"F{index}"))
        words.append(int(overlap(fact, summary) >= OVERLAP_PRESENT))
        groups.append(doc_id)
        kinds.append(kind)
    result = CheckResult(pipeline.config.name, len(truth), failed, binary_agreement(truth, judged, groups),
                         binary_agreement(truth, words, groups), method=pipeline.method.number)
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
    for scorer, decisions in (("judge", judged), ("word overlap", words)):
        result.kept_rate[scorer] = {kind: sum(d for d, k in zip(decisions, kinds) if k == kind) / max(1, kinds.count(kind))
                                    for kind in KINDS}
    return result


def record_path(store: Path, config: ModelConfig, method: int) -> Path:
    return store / "judge-checks" / f"{config.name}-{config.fingerprint()[:12]}-method-v{method}.json"


def save(store: Path, config: ModelConfig, result: CheckResult) -> Path:
    path = record_path(store, config, result.method or 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.describe(), indent=1), encoding="utf-8")
    return path


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


def first_use(store: Path, config: ModelConfig) -> bool:
    """True the first time this judge config (by fingerprint) scores in this store; remembers it."""
    if any((store / "judge-checks").glob(f"{glob.escape(config.name)}-{config.fingerprint()[:12]}*.json")):
        return False
    seen = store / "judge-checks" / "seen" / hashlib.sha256(config.fingerprint().encode()).hexdigest()[:16]
    if seen.is_file():
        return False
    seen.parent.mkdir(parents=True, exist_ok=True)
    seen.write_text(config.name, encoding="utf-8")
    return True
