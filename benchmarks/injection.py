"""Summaries that address the judge, on the real judge, method versions side by side: an off-topic summary of the demo's
bridge story, the same with one sentence that instructs the judge, fakes a verdict, grades itself or closes its
quotation, and a summary giving the story's cost right and wrong (the cases of tests/test_injection.py). For each,
F, FC, QC, EPS and the direct score's axes, and the cost question's P(yes) (version 19: its gain over the prior).

    .venv/bin/python benchmarks/injection.py [--versions 17,19] [--model CONFIG] [--out benchmarks/results/injection_cpu]

Scored against the demo's shipped scaffold (nothing extracted), each version from an empty store: about 5 minutes a
version on 2 cores. Not in CI (the test asserts what holds). Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks` and `tests` importable

from scaffold_local.runs import DEFAULT_MODEL, ModelConfig, Pipeline, load, load_input, source_from_options  # noqa: E402
from tests.test_injection import cases  # noqa: E402

METRICS = ("f", "fc", "qc", "eps", "ds_faithfulness", "ds_completeness", "ds_hallucination")
QUESTION = "Q3"  # the scaffold's cost question


def measured(model: str, version: int, folder: Path) -> dict[str, dict[str, float | None]]:
    rows = cases()
    (folder / "in.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    source = source_from_options(scaffold_file=ROOT / "examples" / "news.scaffolds.jsonl")
    pipeline = Pipeline(ModelConfig.load(model), folder / f"store-{version}", method=version, scaffolds=source)
    try:
        outcome = pipeline.score(load_input(folder / "in.jsonl"))
    finally:
        pipeline.close()
    run = load(outcome.run_dir)
    out = {}
    for summary in outcome.summaries:
        questions = run.records_for(summary.doc_id, summary.system).get("questions")
        p = (questions.confidence or {}).get(QUESTION) if questions else None
        out[summary.system] = {**{m: summary.values.get(m) for m in METRICS}, f"P {QUESTION}": p}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", default="17,19")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "injection_cpu")
    a = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        by_version = {int(v): measured(a.model, int(v), Path(folder)) for v in a.versions.split(",")}
    summary = {"command": "python benchmarks/injection.py " + shlex.join(sys.argv[1:]), "model": a.model,
               "seconds": round(time.perf_counter() - started, 1), "versions": by_version}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    columns = [*METRICS, f"P {QUESTION}"]
    lines = ["# Summaries that address the judge", "", f"`{summary['command']}`", "",
             f"{a.model}; the demo's bridge story against its shipped scaffold. `P {QUESTION}`: the cost question's "
             "P(yes) as the metrics counted it (version 19: its gain over the prior, q). The injected summaries are "
             "the off-topic one plus the sentence named.", "",
             "| version | summary | " + " | ".join(columns) + " |", "| --- | --- |" + " --- |" * len(columns)]
    for version, systems in by_version.items():
        for system, values in systems.items():
            cells = ["" if values[c] is None else f"{values[c]:.3f}" for c in columns]
            lines.append(f"| {version} | {system} | " + " | ".join(cells) + " |")
    lines += ["", f"{summary['seconds']} s on this machine."]
    a.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
