"""The README's validation table, generated from the decisions' results (benchmarks/results/default_method*_cpu.json)
so that its numbers are stated once: for the default judge under its default method version, per human-labelled
set, the balanced accuracy of this judge, of word overlap and of people, with the sample and 95% intervals that
resample documents. Each set's row comes from the newest decision that measured it under that version, or under the
version whose requests it sends (`judges_like`: version 16 sends version 15's), said in the row.

    .venv/bin/python benchmarks/validation_table.py [--results NEWEST.json OLDER.json ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `scaffold_local` importable from a checkout

from scaffold_local.method import method_version  # noqa: E402
from scaffold_local.runs import ModelConfig  # noqa: E402

# the decisions' results, newest first
RESULTS = (ROOT / "benchmarks" / "results" / "default_method_17_all_cpu.json",
           ROOT / "benchmarks" / "results" / "default_method_17_cpu.json",
           ROOT / "benchmarks" / "results" / "default_method_16_cpu.json",
           ROOT / "benchmarks" / "results" / "default_method_cpu.json")
# what people judged in each set, as the table says it
JUDGED = {
    "REALSumm": "a key fact is in the summary (REALSumm)",
    "FRANK": "a summary sentence holds an error (FRANK; CNN/DM and XSum pooled)",
    "SummEdits": "the summary is inconsistent (SummEdits; mean of its domains)",
    "AggreFact": "the summary holds an error people marked (AggreFact; CNN/DM and XSum pooled)",
}
UNITS = {"REALSumm": "key facts", "FRANK": "sentences", "SummEdits": "summaries", "AggreFact": "summaries"}


def cell(entry: dict[str, Any] | None) -> str:
    if not entry or entry.get("value") is None:
        return "-"
    interval = f" [{entry['low95']:.3f}, {entry['high95']:.3f}]" if entry.get("low95") is not None else ""
    return f"{entry['value']:.3f}{interval}"


def validation_table(results: list[dict[str, Any]], version: int, same_requests: int | None = None) -> str:
    """The table for `version`, one row per set, each from the first of `results` (newest first) that compares
    `version` on it, else `same_requests` (the version whose requests `version` sends, read the same)."""
    names = [f"version {v}" for v in (version, same_requests) if v is not None]
    rows: dict[str, tuple[dict[str, Any], str]] = {}
    for result in results:
        for data_set, row in result["table"].items():
            name = next((n for n in names if n in result["versions"]), None)
            if name and data_set not in rows:
                rows[data_set] = row, name
    if not rows:
        raise SystemExit(f"no results compare {' or '.join(names)}")
    lines = ["| what people judged (balanced accuracy) | sample | this judge | word overlap | people |",
             "| --- | --- | --- | --- | --- |"]
    for data_set, (row, name) in rows.items():
        sample = f"{row['documents']} documents, {row['items']} {UNITS[data_set]}"
        if name != names[0]:
            sample += f" ({name}'s run: the same requests)"
        lines.append(f"| {JUDGED[data_set]} | {sample} | {cell(row[name])} | {cell(row['word overlap'])} | "
                     f"{cell(row.get('human ceiling'))} |")
    return "\n".join(lines)


def default_version() -> tuple[int, int | None]:
    """The method version the default judge runs unless asked otherwise, and the version whose requests it sends."""
    method = method_version(ModelConfig.load(None).method_version)
    return method.number, method.judges_like


def read_results(paths: tuple[Path, ...] = RESULTS) -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in paths]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, nargs="+", default=list(RESULTS))
    args = parser.parse_args()
    print(validation_table(read_results(tuple(args.results)), *default_version()))


if __name__ == "__main__":
    main()
