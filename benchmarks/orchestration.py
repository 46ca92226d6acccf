"""The package's own time per request: a workload scored through the zero-cost responder backend,
so every second measured is planning, prompt rendering, schema building, cache lookups, recording,
metrics and output tables, not an engine.

    .venv/bin/python benchmarks/orchestration.py [--docs 500] [--systems 8] [--out benchmarks/results/orchestration_cpu]

Three timings in one invocation on one generated workload (seeded: the same documents and summaries
every time): the first run (every request answered by the responder), a rerun of the finished run
in the same process (nothing sent), and the same rerun as a user types it (`scaffold-local score`
in a fresh process: imports and start-up included). Writes JSON and Markdown.

To compare with an earlier commit, run this file with that commit's package first on the path:
`git worktree add /tmp/old <commit> && PYTHONPATH=/tmp/old .venv/bin/python benchmarks/orchestration.py`.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESPONDER = Path(__file__).resolve().parent.parent / "tests" / "configs" / "responder.toml"
WORDS = ("alpha beta gamma delta factory river council budget school report vote storm harbor train museum "
         "price growth rate energy wind solar farm bridge road tax plan").split()


def workload(path: Path, docs: int, systems: int, seed: int = 0) -> Path:
    """`docs` documents of 12 sentences, each summarised by `systems` systems picking 3 of its sentences."""
    rng = random.Random(seed)

    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."

    with path.open("w", encoding="utf-8") as out:
        for d in range(docs):
            sentences = [sentence() for _ in range(12)]
            for s in range(systems):
                out.write(json.dumps({"doc_id": f"d{d}", "document": " ".join(sentences), "system": f"s{s}",
                                      "summary": " ".join(rng.sample(sentences, 3))}) + "\n")
    return path


def measure(docs: int, systems: int) -> dict:
    import scaffold_local
    from scaffold_local.runs import ModelConfig, Pipeline, load_input

    config = ModelConfig.load(str(RESPONDER))
    with tempfile.TemporaryDirectory() as tmp:
        data, store = workload(Path(tmp) / "workload.jsonl", docs, systems), Path(tmp) / "store"
        timings = {}
        for label in ("first_run", "rerun_in_process"):
            start = time.perf_counter()
            outcome = Pipeline(config, store).score(load_input(data))
            timings[label] = time.perf_counter() - start
            requests = outcome.requests_sent + outcome.requests_reused + len(outcome.extraction.records)
            if label == "first_run":
                timings["requests"], timings["sent_first"] = requests, outcome.requests_sent
                timings["responder"] = outcome.usage.engine_seconds  # inside generate: the responder's own work
            else:
                timings["sent_rerun"] = outcome.requests_sent
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "scaffold_local.cli", "score", str(data), "-m", str(RESPONDER),
                        "--store", str(store)], check=True, capture_output=True)
        timings["rerun_cli"] = time.perf_counter() - start
    summaries, requests = docs * systems, timings["requests"]
    return {
        "package": str(Path(scaffold_local.__file__).parent), "documents": docs, "summaries": summaries,
        "requests": requests, "sent_first": timings["sent_first"], "sent_rerun": timings["sent_rerun"],
        "first_run_s": round(timings["first_run"], 2),
        "first_run_ms_per_request": round(timings["first_run"] / requests * 1e3, 3),
        "first_run_responder_s": round(timings["responder"], 2),
        "first_run_package_ms_per_request": round((timings["first_run"] - timings["responder"]) / requests * 1e3, 3),
        "rerun_in_process_s": round(timings["rerun_in_process"], 2),
        "rerun_ms_per_summary": round(timings["rerun_in_process"] / summaries * 1e3, 3),
        "rerun_cli_s": round(timings["rerun_cli"], 2),
    }


def markdown(result: dict) -> str:
    rows = [("summaries (documents x systems)", f"{result['summaries']} ({result['documents']} x "
             f"{result['summaries'] // result['documents']})"),
            ("requests (judgments + extractions)", result["requests"]),
            ("first run, s", result["first_run_s"]), ("first run, ms per request", result["first_run_ms_per_request"]),
            ("first run, of which inside the responder, s", result["first_run_responder_s"]),
            ("first run, package's own ms per request", result["first_run_package_ms_per_request"]),
            ("rerun in process, s (requests sent)", f"{result['rerun_in_process_s']} ({result['sent_rerun']})"),
            ("rerun, ms per summary", result["rerun_ms_per_summary"]),
            ("rerun as `scaffold-local score`, s", result["rerun_cli_s"])]
    return "| measure | value |\n| --- | --- |\n" + "\n".join(f"| {k} | {v} |" for k, v in rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--systems", type=int, default=8)
    parser.add_argument("--out", type=Path, help="write <out>.json and <out>.md")
    args = parser.parse_args()
    result = measure(args.docs, args.systems)
    print(markdown(result))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
        args.out.with_suffix(".md").write_text(markdown(result))


if __name__ == "__main__":
    main()
