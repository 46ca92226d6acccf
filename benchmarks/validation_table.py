"""The README's validation table, generated from decision 0001's results (benchmarks/results/default_method_cpu.json)
so that its numbers are stated once: for the default judge under its default method version, per human-labelled
set, the balanced accuracy of this judge, of word overlap and of people, with the sample and 95% intervals that
resample documents.

    .venv/bin/python benchmarks/validation_table.py [--results benchmarks/results/default_method_cpu.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `scaffold_local` importable from a checkout

from scaffold_local.method.versions import method_version  # noqa: E402
from scaffold_local.runs import ModelConfig  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "default_method_cpu.json"
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


def validation_table(result: dict[str, Any], version: int) -> str:
    """The table for `version` (one of the versions the results compare), one row per set in the results' order."""
    name = f"version {version}"
    if name not in result["versions"]:
        raise SystemExit(f"the results compare {', '.join(result['versions'])}, not {name}")
    lines = ["| what people judged (balanced accuracy) | sample | this judge | word overlap | people |",
             "| --- | --- | --- | --- | --- |"]
    for data_set, row in result["table"].items():
        sample = f"{row['documents']} documents, {row['items']} {UNITS[data_set]}"
        lines.append(f"| {JUDGED[data_set]} | {sample} | {cell(row[name])} | {cell(row['word overlap'])} | "
                     f"{cell(row.get('human ceiling'))} |")
    return "\n".join(lines)


def default_version() -> int:
    """The method version the default judge runs unless asked otherwise."""
    return method_version(ModelConfig.load(None).method_version).number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    print(validation_table(json.loads(args.results.read_text(encoding="utf-8")), default_version()))


if __name__ == "__main__":
    main()
