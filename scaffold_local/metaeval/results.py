"""A meta-evaluation's result: its tables (written as JSON and CSV) and a short text summary.

The agreement table has one row per (source, measure); `reference` says what the source is scored
against (`agreement.OTHERS`: each annotator held out in turn against the majority of the others,
the human ceiling's references, with `tied_references_dropped` counting the references a tie among
the others left out; `agreement.ALL`: the dataset's majority of all annotators, where that count is
null). Sources: "human ceiling: annotator vs <OTHERS>", and "<scorer> vs <reference>" for the judge
and the word-overlap baseline under each reference."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.store.score_tables import write_csv
from .agreement import ALL, OTHERS, Estimate, HumanReferences


@dataclass
class MetaEvalResult:
    task: str
    judge: str
    documents: int
    items: int  # items compared with human labels
    failed: int  # items whose judge output failed (kept in the store with its raw text, never counted)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    summary: list[str] = field(default_factory=list)
    sample: dict[str, Any] = field(default_factory=dict)  # split, limit, per_document, seed, method, threshold
    cost: dict[str, Any] = field(default_factory=dict)  # seconds, engine seconds, the estimates said before sending

    def agreement_rows(self, source: str, estimates: dict[str, Estimate], items: int, reference: str,
                       tied_references_dropped: int | None = None) -> None:
        """One row per agreement measure, for `source` (the judge, the human ceiling, a baseline) against `reference`."""
        rows = self.tables.setdefault("agreement", [])
        for measure, e in estimates.items():
            rows.append({"source": source, "reference": reference, "measure": measure, "value": e.value,
                         "low95": e.low, "high95": e.high, "items": items,
                         "tied_references_dropped": tied_references_dropped})

    def human_agreement(self, subject: str, humans: HumanReferences, decisions: dict[str, Sequence[int]],
                        seed: int) -> None:
        """The agreement table and its summary lines: the human ceiling, and each scorer's per-item
        `decisions` against the ceiling's own references (comparable with it) and against the
        majority of all annotators. Items labelled by one annotator have no reference of the ceiling's kind:
        where no item has two, only the comparison with the labels is made, and the summary says why."""
        if not humans.reference:
            against_all = {name: humans.against_all(d, seed) for name, d in decisions.items()}
            for name in decisions:
                self.agreement_rows(f"{name} vs {ALL}", against_all[name], len(humans.majority), ALL)
            self.summary.append(f"{subject}: human ceiling not computable (one annotator per item: no annotator can "
                                "be held out against the others)")
            for measure, label in (("balanced_accuracy", "balanced accuracy"), ("cohen_kappa", "Cohen's kappa")):
                self.summary.append(f"{subject}, {label} vs the labels ({len(humans.majority)} items): "
                                    + "; ".join(f"{name}: {e[measure]}" for name, e in against_all.items()))
            return
        pairs = len(humans.reference)
        ceiling = humans.ceiling(seed)
        self.agreement_rows(f"human ceiling: annotator vs {OTHERS}", ceiling, pairs, OTHERS, humans.ties)
        against_others = {name: humans.against_others(d, seed) for name, d in decisions.items()}
        against_all = {name: humans.against_all(d, seed) for name, d in decisions.items()}
        for name in decisions:
            self.agreement_rows(f"{name} vs {OTHERS}", against_others[name], pairs, OTHERS, humans.ties)
            self.agreement_rows(f"{name} vs {ALL}", against_all[name], len(humans.majority), ALL)
        for measure, label in (("balanced_accuracy", "balanced accuracy"), ("cohen_kappa", "Cohen's kappa")):
            self.summary.append(
                f"{subject}, {label} vs the {OTHERS} (the human ceiling's references: {pairs} (annotator, item) "
                f"pairs, {humans.ties} dropped as the others tied): "
                + "; ".join(f"{name}: {e[measure]}" for name, e in against_others.items())
                + f"; human ceiling: {ceiling[measure]}")
            self.summary.append(f"{subject}, {label} vs the {ALL} ({len(humans.majority)} items): "
                                + "; ".join(f"{name}: {e[measure]}" for name, e in against_all.items()))

    def headline(self) -> str:
        drawn = ", ".join(f"{k} {v}" for k, v in self.sample.items() if v is not None)
        return (f"{self.task}: judge {self.judge}, {self.documents} documents, {self.items} items, {self.failed} failed"
                + (f" ({drawn})" if drawn else ""))


def _clean(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def write(result: MetaEvalResult, out_dir: Path) -> Path:
    """<out>/<task>.json (every table), <task>.<table>.csv, and <task>.txt (the summary)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = {name: [{k: _clean(v) for k, v in row.items()} for row in rows] for name, rows in result.tables.items()}
    payload = {"task": result.task, "judge": result.judge, "documents": result.documents, "items": result.items,
               "failed": result.failed, "sample": result.sample, "cost": result.cost, "tables": tables,
               "summary": result.summary}
    (out_dir / f"{result.task}.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
    for name, rows in tables.items():
        write_csv(out_dir / f"{result.task}.{name}.csv", rows)
    text = out_dir / f"{result.task}.txt"
    text.write_text("\n".join([result.headline(), *result.summary]) + "\n", encoding="utf-8")
    return text
