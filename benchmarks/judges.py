"""How far each CPU judge agrees with people, side by side: one table (from one invocation, or several merged).

    .venv/bin/python benchmarks/judges.py --data ../shared/eval-data [--out benchmarks/results/judges_cpu]
                                          [--only qwen2.5-coder-1.5b-llama-cpp:5] [--store /tmp/judges-store]
                                          [--tasks summeval --merge]   # one task again, the rest of the rows kept

For every row (a judge config under a method version): the built-in `check-judge`, then `meta-eval`
on the *test* half of REALSumm (key-fact presence: balanced accuracy and AUROC of P(kept)), FRANK
(sentence errors: balanced accuracy) and SummEval (system-level Spearman of FC with relevance and of
F with consistency; 10 documents, 8 systems each), each on the same seeded sample of documents for
every row, with word overlap (ROUGE-L for SummEval) and the human ceiling beside them. Formats and
thresholds are chosen on the dev half (`meta-eval ... --split dev`), never here. Every request goes through one store, so an
interrupted run resumes where it stopped and a rerun only reads. Slow (hours on 2 cores): not in CI.
Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scaffold_local.metaeval import OTHERS, OWN_SUMMARIES
from scaffold_local.provenance import cpu_info

CPU_JUDGE = "qwen2.5-coder-1.5b-llama-cpp"
ROWS = [("smollm2-135m-vllm", 2), (CPU_JUDGE, 2), (CPU_JUDGE, 3), (CPU_JUDGE, 4), (CPU_JUDGE, 5)]
SAMPLES = {  # the test half only; sized for 2 CPU cores
    "realsumm-alignment": ["--limit", "12", "--per-document", "6"],
    "frank": ["--limit", "30"],
    # 10 documents, 8 of their 16 systems each (seeded): every system's mean over about 5 summaries
    "summeval": ["--limit", "10", "--per-document", "8"],
}
CLI = [sys.executable, "-m", "scaffold_local.cli"]


def run(command: list[str], log: Path) -> float:
    """Run one command, its output appended to the log; seconds taken (raises on failure)."""
    started = time.perf_counter()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {shlex.join(command)}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "200"})
    if done.returncode != 0:
        raise RuntimeError(f"failed ({done.returncode}): {shlex.join(command)}; see {log}")
    return round(time.perf_counter() - started, 1)


TASKS = ("check-judge", *SAMPLES)
RESULTS = {  # task: (key in a row, the meta-eval result file it is read from)
    "realsumm-alignment": ("realsumm", "realsumm-alignment.json"),
    "frank": ("frank", "frank-faithfulness.json"),
    "summeval": ("summeval", "summeval-correlation.json"),
}


def measure_row(config: str, method: int, args: argparse.Namespace, tasks: tuple[str, ...] = TASKS,
                row: dict[str, Any] | None = None) -> dict[str, Any]:
    """Measure these tasks of one row, into `row` (a kept row's other tasks stay as they were)."""
    name = f"{config}-v{method}"
    out = args.work / name
    out.mkdir(parents=True, exist_ok=True)
    log = out / "commands.log"
    common = ["-m", config, "--method-version", str(method), "--verdict-confidence", "--store", str(args.store)]
    row = dict(row or {"judge": config, "method_version": method})
    row["seconds"], row["measured_on"] = dict(row.get("seconds", {})), dict(row.get("measured_on", {}))
    for task in tasks:
        if task == "check-judge":
            row["seconds"][task] = run([*CLI, "check-judge", *common], log)
            checks = sorted((args.store / "judge-checks").glob(f"{config}-*-method-v{method}.json"))
            row["check_judge"] = json.loads(checks[-1].read_text())
        else:
            row["seconds"][task] = run([*CLI, "meta-eval", task, *common, "--data", str(args.data), "--split", "test",
                                        "--seed", str(args.seed), *SAMPLES[task], "--out", str(out)], log)
            key, file = RESULTS[task]
            row[key] = json.loads((out / file).read_text())
        row["measured_on"][task] = cpu_info()
        row.setdefault("commands", {})[task] = "python benchmarks/judges.py " + shlex.join(sys.argv[1:])
    if "summeval" in tasks:
        # The engine's own seconds for the SummEval run (extraction included), as its run folder recorded
        # them when the requests were sent: a rerun that finds everything in the store adds nothing.
        run_dir = Path(row["summeval"]["summary"][0].removeprefix("run folder: "))
        usage = json.loads((run_dir / "usage.json").read_text())
        row["engine_seconds_per_summary"] = usage["engine_seconds"] / max(1, row["summeval"]["items"])
    return row


def _agreement(result: dict, source_prefix: str, measure: str = "balanced_accuracy") -> str:
    """"new / old": against the human ceiling's own references (the majority of the other annotators, ties
    dropped), so that the judge, word overlap and the ceiling compare; then as measured before (the judge
    against the majority of all annotators, the ceiling with ties read as absent). A result written before
    the ceiling's references existed has only the second."""
    rows = [r for r in result["tables"]["agreement"] if r["source"].startswith(source_prefix) and r["measure"] == measure]
    new = next((r for r in rows if r.get("reference") == OTHERS), None)
    old = next((r for r in rows if r.get("reference") != OTHERS), None)
    return " / ".join(_estimate(r["value"], r["low95"], r["high95"]) if r else "-" for r in (new, old))


def _on_new_footing(result: dict) -> bool:
    return any(r.get("reference") == OTHERS for r in result["tables"]["agreement"])


def _estimate(value: float | None, low: float | None = None, high: float | None = None) -> str:
    if value is None:
        return "undefined"
    return f"{value:.3f}" + (f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else "")


def _spearman(result: dict, metric: str, human: str) -> str:
    # Each system's own summaries (all there was before the aggregation was named): the sample draws 8 of 16
    # systems per document, so no document has them all.
    found = next((r for r in result["tables"]["correlation"] if r.get("aggregation", OWN_SUMMARIES) == OWN_SUMMARIES
                  and (r["level"], r["metric"], r["human"]) == ("system", metric, human)), None)
    return "-" if found is None else \
        _estimate(found["spearman"], found.get("spearman_low95"), found.get("spearman_high95")) + f" (n={found['n']})"


def _auroc(result: dict) -> str:
    rows = result["tables"].get("confidence") or []
    return _estimate(rows[0]["auroc"], rows[0]["auroc_low95"], rows[0]["auroc_high95"]) if rows else "-"


def _machine(cpu: dict[str, Any] | None) -> str:
    if not cpu:
        return "a machine not recorded"
    return f"{cpu.get('model') or 'a CPU'} ({cpu['cores']} cores; {', '.join(cpu.get('features') or ['no AVX2'])})"


def markdown(rows: list[dict[str, Any]]) -> str:
    head = ["judge (method version)", "check-judge: balanced accuracy / AUROC",
            "REALSumm: balanced accuracy, vs the others' majority (the ceiling's references) / as before (vs all)",
            "REALSumm: AUROC of P(kept)", "FRANK: balanced accuracy (as REALSumm)",
            "SummEval system-level Spearman (system means over their own summaries): FC-relevance", "F-consistency",
            "engine s per summary (SummEval: full method, extraction included)"]
    commands = dict.fromkeys(c for r in rows for c in r["commands"].values())
    lines = [*(f"`{c}`" for c in commands), "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        check = r["check_judge"]
        summeval = r.get("summeval")
        sample = r["realsumm"].get("sample", {})
        thresholds = sample.get("thresholds") or (
            {"facts": sample["decision_threshold"]} if sample.get("decision_threshold") else {})  # rows before v7
        decision = ", thresholds " + ", ".join(f"{k} {v}" for k, v in thresholds.items()) if thresholds else ""
        lines.append("| " + " | ".join([
            f"{r['judge']} (v{r['method_version']}{decision})",
            f"{_estimate(check['judge_balanced_accuracy'], *check.get('judge_balanced_accuracy_interval', [None, None]))}"
            f" / {_estimate(check.get('auroc'))}",
            _agreement(r["realsumm"], "judge"), _auroc(r["realsumm"]), _agreement(r["frank"], "judge"),
            *((_spearman(summeval, "fc", "relevance"), _spearman(summeval, "f", "consistency"),
               f"{r['engine_seconds_per_summary']:.0f}") if summeval else ("not measured",) * 3),
        ]) + " |")
    if rows:
        # the baselines: from a row on the ceiling's references where there is one, then the one with the most items
        first = max((r for r in rows if "summeval" in r),
                    key=lambda r: (_on_new_footing(r["realsumm"]), r["realsumm"]["items"]))
        check = first["check_judge"]
        lines.append("| " + " | ".join([
            "word overlap (ROUGE-L for SummEval)", _estimate(check["overlap_balanced_accuracy"]) + " / -",
            _agreement(first["realsumm"], "word overlap"), "-", _agreement(first["frank"], "word overlap"),
            _spearman(first["summeval"], "rouge_l", "relevance"), _spearman(first["summeval"], "rouge_l", "consistency"),
            "-"]) + " |")
        lines.append("| " + " | ".join([
            "human ceiling (annotator vs the others' majority: ties dropped / as before, ties read as absent)", "-",
            _agreement(first["realsumm"], "human ceiling"),
            "-", _agreement(first["frank"], "human ceiling"), "not in the data", "not in the data", "-"]) + " |")
        samples = []
        for label, key in (("REALSumm", "realsumm"), ("FRANK", "frank"), ("SummEval", "summeval")):
            seen = dict.fromkeys(f"{r[key]['documents']} documents, {r[key]['items']} items" for r in rows if key in r)
            samples.append(f"{label} {' / '.join(seen)}" + (" (rows differ: see the JSON)" if len(seen) > 1 else ""))
        lines += ["", "Samples (test half, the same documents in every row): " + "; ".join(samples)
                  + ". Intervals: 95%, bootstrap over documents."]
        machines: dict[str, list[str]] = {}
        for r in rows:
            for task in r["seconds"]:  # the tasks this row measured
                machine = _machine(r.get("measured_on", {}).get(task))
                machines.setdefault(machine, []).append(f"{r['judge']} v{r['method_version']} {task}")
        lines += ["", "Measured on (engine seconds compare only within one machine): "
                  + "; ".join(f"{m}: {', '.join(names)}" for m, names in machines.items()) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="eval-data folder (realsumm/, frank/, summeval/)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/judges_cpu"))
    parser.add_argument("--store", type=Path, default=Path("scaffold_store"), help="one store for every row (resume)")
    parser.add_argument("--work", type=Path, default=Path("scaffold_store/judges"), help="each row's meta-eval tables")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", help="comma-separated config:method rows (default: every row)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the rows (and tasks) of <out>.json that this invocation does not measure again")
    parser.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated, of {', '.join(TASKS)}")
    args = parser.parse_args()
    rows = ROWS if not args.only else [(c, int(m)) for c, m in (part.split(":") for part in args.only.split(","))]
    tasks = tuple(t for t in TASKS if t in args.tasks.split(","))
    kept = {}
    if args.merge and args.out.with_suffix(".json").is_file():
        kept = {(r["judge"], r["method_version"]): r for r in json.loads(args.out.with_suffix(".json").read_text())}
    order = {row: i for i, row in enumerate(ROWS)}
    for config, method in rows:
        print(f"{config} method v{method}: {', '.join(tasks)} ...", flush=True)
        kept[(config, method)] = measure_row(config, method, args, tasks, kept.get((config, method)))
        measured = sorted(kept.values(), key=lambda r: order.get((r["judge"], r["method_version"]), len(order)))
        # written after every row, so a long invocation stopped part-way keeps what it measured
        args.out.with_suffix(".json").write_text(json.dumps(measured, indent=1))
    table = markdown(measured)
    print(table)
    args.out.with_suffix(".md").write_text(table)


if __name__ == "__main__":
    main()
