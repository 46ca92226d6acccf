"""A meta-evaluation's result: its tables (written as JSON and CSV) and a short text summary."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store.tables import write_csv
from .agreement import Estimate


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

    def agreement_rows(self, source: str, estimates: dict[str, Estimate], items: int) -> None:
        """One row per agreement measure, for `source` (the judge, the human ceiling, a baseline)."""
        rows = self.tables.setdefault("agreement", [])
        for measure, e in estimates.items():
            rows.append({"source": source, "measure": measure, "value": e.value, "low95": e.low, "high95": e.high,
                         "items": items})

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
               "failed": result.failed, "sample": result.sample, "tables": tables, "summary": result.summary}
    (out_dir / f"{result.task}.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
    for name, rows in tables.items():
        write_csv(out_dir / f"{result.task}.{name}.csv", rows)
    text = out_dir / f"{result.task}.txt"
    text.write_text("\n".join([result.headline(), *result.summary]) + "\n", encoding="utf-8")
    return text
