"""Tables and evidence for people, files for machines: per-system means, per-summary scores, and
for one summary the item-level verdicts with the judge's sentence ids and justifications."""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from .metrics import METRICS, SummaryScores, SystemScores
from .store import RunStore, ScaffoldStore
from .tasks import KIND_OF_TASK, Record


def write_tables(run_dir: Path, summaries: Sequence[SummaryScores], systems: Sequence[SystemScores]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {"doc_id": s.doc_id, "system": s.system, "n_sentences": s.n_sentences, **s.values,
         "undefined": json.dumps(s.undefined, ensure_ascii=False)}
        for s in summaries
    ]
    columns = ["doc_id", "system", "n_sentences", *METRICS, "undefined"]
    schema = pa.schema([("doc_id", pa.string()), ("system", pa.string()), ("n_sentences", pa.int64()),
                        *[(k, pa.float64()) for k in METRICS], ("undefined", pa.string())])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), run_dir / "summaries.parquet")
    _write_csv(run_dir / "summaries.csv", columns, rows)

    system_rows = []
    for s in systems:
        row: dict[str, Any] = {"system": s.system, "n_summaries": s.n_summaries}
        for key, m in s.metrics.items():
            row[key] = m.mean
            row[f"{key}_n"] = m.n
            row[f"{key}_excluded"] = m.excluded
        system_rows.append(row)
    system_columns = ["system", "n_summaries", *[c for k in METRICS for c in (k, f"{k}_n", f"{k}_excluded")]]
    _write_csv(run_dir / "systems.csv", system_columns, system_rows)


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _is_direct_score(key: str) -> bool:
    return key == "ds" or key.startswith("ds_")


def _fmt(value: float | None, key: str, ds_scale: int = 10) -> str:
    """Direct scores on their 1-10 scale (2 decimals), or on the paper's 0-1 scale (DS/10) when
    `ds_scale` is 1; every other metric is a share (3 decimals)."""
    if value is None:
        return "–"
    if _is_direct_score(key):
        return f"{value:.2f}" if ds_scale == 10 else f"{value / 10:.3f}"
    return f"{value:.3f}"


def _name(key: str, ds_scale: int) -> str:
    return METRICS[key] + (" /10" if ds_scale == 1 and _is_direct_score(key) else "")


def systems_table(systems: Sequence[SystemScores], title: str = "Per-system means", ds_scale: int = 10) -> Table:
    """Metrics as rows, systems as columns; "(k excl.)" marks means that left out k summaries."""
    table = Table(title=title, title_justify="left", min_width=len(title))  # the title on one line
    table.add_column("metric", style="bold")
    for s in systems:
        table.add_column(f"{s.system}\n(n={s.n_summaries})", justify="right")
    for key in METRICS:
        cells = []
        for s in systems:
            m = s.metrics[key]
            cell = _fmt(m.mean, key, ds_scale) + (f" ({m.excluded} excl.)" if m.excluded else "")
            cells.append(cell)
        table.add_row(_name(key, ds_scale), *cells)
    return table


# ---------------------------------------------------------------- reading a finished run


@dataclass
class FinishedRun:
    store: RunStore
    spec: dict[str, Any]
    systems: list[SystemScores]
    summaries: list[SummaryScores]
    candidates: list[dict[str, Any]]

    @classmethod
    def load(cls, run_dir: Path) -> "FinishedRun":
        run_dir = Path(run_dir)
        if not (run_dir / "systems.json").is_file():
            raise FileNotFoundError(f"{run_dir} is not a finished run folder (no systems.json)")
        store = RunStore(run_dir.parent.parent, run_dir.name)
        read_lines = lambda name: [json.loads(l) for l in (run_dir / name).read_text(encoding="utf-8").splitlines() if l]  # noqa: E731
        return cls(
            store=store,
            spec=store.read_spec(),
            systems=[SystemScores.model_validate(s) for s in json.loads((run_dir / "systems.json").read_text(encoding="utf-8"))],
            summaries=[SummaryScores.model_validate(s) for s in read_lines("summaries.jsonl")],
            candidates=read_lines("candidates.jsonl"),
        )

    @property
    def method_version(self) -> int:
        """The method version that made the run (runs from before versions were recorded: from the
        schema version, which was 1)."""
        return int(self.spec.get("method", {}).get("number") or self.spec.get("schemas", {}).get("version", 1))

    def scaffold_notes(self) -> Counter[str]:
        """How many dropped duplicates and merged entities the run's scaffolds record, by action."""
        scaffolds = ScaffoldStore(self.store.dir.parent.parent)
        keys = {c["scaffold_key"] for c in self.candidates if c.get("scaffold_key")}
        return Counter(note.action for key in keys if (stored := scaffolds.get(key)) for note in stored.scaffold.notes)

    def candidate(self, key: str) -> dict[str, Any]:
        for c in self.candidates:
            if f"{c['doc_id']}/{c['system']}" == key:
                return c
        known = ", ".join(f"{c['doc_id']}/{c['system']}" for c in self.candidates[:8])
        raise KeyError(f"no summary {key!r} in this run (e.g. {known})")

    def records_for(self, doc_id: str, system: str) -> dict[str, Record]:
        """The newest finished record of each judgment for one summary."""
        records: dict[str, Record] = {}
        for record in self.store.load_records().values():
            if record.doc_id == doc_id and record.system == system:
                records[KIND_OF_TASK[record.task]] = record
        return records


def evidence(run: FinishedRun, key: str, ds_scale: int = 10) -> Group:
    """Item-level evidence for one summary: each scaffold item kept or missed, with sentence ids
    and the judge's justification."""
    candidate = run.candidate(key)
    parts: list[Any] = [Text(f"{key}  (input record {candidate['record']})", style="bold")]
    for i, sentence in enumerate(candidate["sentences"], 1):
        parts.append(Text(f"  [{i}] {sentence}"))
    if candidate.get("failed"):
        parts.append(Text(f"not judged: {candidate['failed']}", style="red"))
        return Group(*parts)
    stored = ScaffoldStore(run.store.dir.parent.parent).get(candidate["scaffold_key"])
    if stored is None:
        parts.append(Text("scaffold not found in the store", style="red"))
        return Group(*parts)
    scaffold = stored.scaffold
    records = run.records_for(candidate["doc_id"], candidate["system"])
    scores = next(s for s in run.summaries if s.doc_id == candidate["doc_id"] and s.system == candidate["system"])
    parts.append(Text("scores: " + "  ".join(f"{_name(k, ds_scale)}={_fmt(v, k, ds_scale)}"
                                            for k, v in scores.values.items())))

    def verdict_table(title: str, items: Sequence[Any], kind: str, verdict_key: str, text_of: Any) -> None:
        record = records.get(kind)
        table = Table(title=title, title_justify="left", show_lines=False)
        for column in ("id", "label", "kept", "sentences", "item", "justification"):
            table.add_column(column, overflow="fold")
        if record is None or record.parsed is None:
            reason = "not judged" if record is None else record.validation_error
            parts.append(Text(f"{title}: no verdicts ({reason})", style="yellow"))
            return
        for item in sorted(items, key=lambda x: {"main point": 0, "supporting detail": 1}.get(x.label, 2)):
            v = record.parsed.get(item.id, {})
            kept = v.get(verdict_key)
            table.add_row(item.id, item.label, Text("kept" if kept else "missed", style="green" if kept else "red"),
                          ",".join(map(str, v.get("sentence_ids", []))), text_of(item), v.get("justification", ""))
        parts.append(table)

    if scaffold.facts:
        verdict_table("Facts", scaffold.facts, "facts", "inferred", lambda f: f.text)
    if scaffold.questions:
        verdict_table("Key questions", scaffold.questions, "questions", "answered", lambda q: q.question)
    entities = records.get("entities")
    if scaffold.entities and entities is not None and entities.parsed is not None:
        table = Table(title="Entity attributes", title_justify="left")
        for column in ("id", "entity", "label", "kept", "attribute"):
            table.add_column(column, overflow="fold")
        preserved = {a for v in entities.parsed.values() for a in v["preserved_attribute_ids"]}
        for e in scaffold.entities:
            for a in e.attributes:
                kept = a.id in preserved
                table.add_row(a.id, e.name, a.label, Text("kept" if kept else "missed", style="green" if kept else "red"), a.text)
        parts.append(table)
    for name, reason in scaffold.failures.items():
        parts.append(Text(f"scaffold {name}: extraction failed: {reason}", style="yellow"))
    for note in scaffold.notes:
        parts.append(Text(f"scaffold {note.view}: {note.action}: {note.detail}", style="dim"))
    return Group(*parts)
