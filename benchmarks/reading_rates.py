"""What a summary's readings cost on this CPU, method versions side by side in one run: the demo
(`examples/news.jsonl` against its shipped scaffolds) scored from an empty store under each version, one after the
other on the same machine, with the wall time, the engine's time, the tokens computed and the rate.

    .venv/bin/python benchmarks/reading_rates.py [--versions 16,17] [--model CONFIG] [--store-root /tmp/rates]
        [--out benchmarks/results/reading_rates_cpu]

Each version's store is kept under --store-root (`v<N>`): the run folder of the last version is the demo as `make
demo` scores it under that version. Minutes on 2 cores: not in CI. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks` importable

from scaffold_local import runs  # noqa: E402
from scaffold_local.provenance import cpu_info, package_versions  # noqa: E402
from scaffold_local.records import ScaffoldSource  # noqa: E402

DEMO = ROOT / "examples" / "news.jsonl"
SCAFFOLDS = ROOT / "examples" / "news.scaffolds.jsonl"


def score(model: str, version: int, store: Path) -> dict[str, Any]:
    """The demo from an empty store under one version: its costs, and its table's cells."""
    shutil.rmtree(store, ignore_errors=True)
    started = time.perf_counter()
    pipeline = runs.open_judge(runs.JudgeOptions(model=model, store=store, method_version=version,
                                                 scaffolds=ScaffoldSource(kind="file", reference=str(SCAFFOLDS))))
    try:
        outcome = runs.plan(pipeline, runs.load_input(DEMO), runs.RunOptions()).execute()
    finally:
        pipeline.close()
    wall = time.perf_counter() - started
    usage = outcome.usage.judgments
    computed = usage.prompt_tokens - (usage.cached_prompt_tokens or 0)
    engine = outcome.usage.engine_seconds or 0.0
    return {"version": version, "status": outcome.status, "readings": usage.requests, "failures": usage.failures,
            "wall_s": round(wall, 1), "engine_s": round(engine, 1), "prompt_tokens": usage.prompt_tokens,
            "computed_tokens": computed, "computed_per_s": round(computed / engine, 1) if engine else None,
            "generated_tokens": usage.completion_tokens, "run_dir": outcome.run_dir.name,
            "systems": {s.system: {k: m.mean for k, m in s.metrics.items()} for s in outcome.systems}}


def markdown(result: dict[str, Any]) -> str:
    rows = result["versions"]
    base = rows[0]
    lines = [f"`{result['command']}`", "",
             f"The demo ({result['summaries']} summaries, 3 documents) against its shipped scaffolds, from an empty store "
             f"under each version, one after the other on {result['machine']} ({result['cores']} cores); "
             f"judge {result['judge']}.", "",
             "| method version | readings | computed tokens | engine s | computed tokens / s | wall s | wall vs "
             f"version {base['version']} | failed |", "| --- " * 8 + "|"]
    for row in rows:
        lines.append(f"| {row['version']} | {row['readings']} | {row['computed_tokens']:,} | {row['engine_s']} | "
                     f"{row['computed_per_s']} | {row['wall_s']} | {row['wall_s'] / base['wall_s']:.2f}x | "
                     f"{sum(row['failures'].values())} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", default="16,17")
    parser.add_argument("--model", default=runs.DEFAULT_MODEL)
    parser.add_argument("--store-root", type=Path, default=Path("/tmp/reading-rates"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "reading_rates_cpu")
    a = parser.parse_args()
    rows = []
    for version in (int(v) for v in a.versions.split(",")):
        rows.append(score(a.model, version, a.store_root / f"v{version}"))
        print(f"version {version}: {rows[-1]['wall_s']} s, {rows[-1]['computed_per_s']} computed tokens/s", flush=True)
    cpu = cpu_info()
    result = {"command": "python benchmarks/reading_rates.py " + shlex.join(sys.argv[1:]), "judge": a.model,
              "machine": cpu.get("model") or "this CPU", "cores": cpu["cores"], "features": cpu.get("features"),
              "summaries": sum(1 for _ in DEMO.open()), "versions": rows,
              "packages": package_versions(("llama-cpp-python",))}
    a.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    a.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
