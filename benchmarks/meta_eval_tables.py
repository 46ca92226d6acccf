"""The aggregate tables of finished `meta-eval` runs, gathered for benchmarks/results/: agreement with people and
its intervals, never the per-item rows (they would repeat the human labels, which stay in their own folder).

    .venv/bin/python benchmarks/meta_eval_tables.py <meta-eval --out folder>... [--out benchmarks/results/meta_eval_cpu]
        [--command "the meta-eval commands that filled the folders"]

Writes <out>.json (each task's sample, counts, summary lines and aggregate tables) and <out>.md.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PER_ITEM = {"per_summary", "f_per_summary", "fc_per_summary", "per_document", "pairs"}  # rows that hold labels


def gather(*folders: Path) -> list[dict[str, Any]]:
    runs = []
    for path in [path for folder in folders for path in sorted(folder.glob("*.json"))]:
        run = json.loads(path.read_text(encoding="utf-8"))
        run["tables"] = {name: rows for name, rows in run["tables"].items() if name not in PER_ITEM}
        run["summary"] = [line for line in run["summary"] if not line.startswith("run folder:")]  # a local path
        runs.append(run)
    if not runs:
        raise SystemExit(f"{', '.join(map(str, folders))} hold no meta-eval results (<task>.json)")
    return runs


def markdown(runs: list[dict[str, Any]], commands: list[str], notes: Sequence[str] = ()) -> str:
    judges = ", ".join(sorted({run["judge"] for run in runs}))
    lines = [f"# Meta-evaluation on a CPU: {judges} against people", ""]
    lines += ["```bash", *commands, "```", ""] if commands else []
    lines += [*(f"- {note}" for note in notes), ""] if notes else []
    for run in runs:
        sample = run["sample"]
        drawn = ", ".join(f"{k} {v}" for k, v in sample.items() if v is not None)
        which = [f"{sample['split']} split"] if sample.get("split") else []
        which += [f"method version {sample['method_version']}"] if sample.get("method_version") else []
        lines += [f"## {run['task']}" + (f" ({', '.join(which)})" if which else ""), "",
                  f"judge {run['judge']}: {run['documents']} documents, {run['items']} items, "
                  f"{run['failed']} failed ({drawn})", ""]
        lines += [f"- {line}" for line in run["summary"]] + [""]
        lines += _cost(run.get("cost"))
        for name, rows in run["tables"].items():
            if rows:
                columns = list(rows[0])
                lines += [f"**{name}**", "", "| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
                lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in rows] + [""]
    return "\n".join(lines)


def _cost(cost: dict[str, Any] | None) -> list[str]:
    """What the run took, and what it said it would take before it sent anything (results from before costs were
    recorded have none)."""
    if not cost:
        return []
    machine = f" ({cost['machine']})" if cost.get("machine") else ""
    lines = [f"Took {_minutes(cost['seconds'])} on this machine{machine}, {_minutes(cost['engine_seconds'])} of it in "
             "the engine."]
    if cost.get("estimates_said"):
        lines += ["Said before sending:", "", *[f"> {line}" for line in cost["estimates_said"]]]
    return [*lines, ""]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+", help="meta-eval --out folders")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "meta_eval_cpu")
    parser.add_argument("--command", action="append", default=[], help="a command that filled the folder (repeatable)")
    parser.add_argument("--note", action="append", default=[], help="what a reader should know of these runs (repeatable)")
    args = parser.parse_args()
    runs = gather(*args.folders)
    args.out.with_suffix(".json").write_text(json.dumps({"commands": args.command, "notes": args.note, "runs": runs},
                                                        indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(runs, args.command, args.note) + "\n")
    print(f"wrote {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
