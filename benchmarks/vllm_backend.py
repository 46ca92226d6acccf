"""Side-by-side measurements of the vLLM backend on the example data, all in one invocation.

    .venv/bin/python benchmarks/vllm_backend.py [--out benchmarks/results/vllm_backend_cpu.json]

The same judgment requests (every summary of examples/news.jsonl against deterministic scaffolds
built by the responder, so each variant sees identical prompts and schemas) go to:

1. batching: one `generate` call with all requests vs one request at a time (xgrammar);
2. structured-output backends: xgrammar, guidance (llguidance) and outlines, batched;
3. prefix caching on vs off (xgrammar, batched).

Each variant runs in its own process (a fresh engine) under a time limit, so a grammar backend
that hangs is reported as such instead of stalling the benchmark. Output lengths are reported next
to times: compare throughput at equal work, not wall time alone.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "news.jsonl"
VARIANTS = {
    "batched/xgrammar": {"structured_outputs": "xgrammar"},
    "one_at_a_time/xgrammar": {"structured_outputs": "xgrammar", "one_at_a_time": True},
    "batched/guidance": {"structured_outputs": "guidance"},
    "batched/outlines": {"structured_outputs": "outlines"},
    "batched/xgrammar/no_prefix_cache": {"structured_outputs": "xgrammar", "enable_prefix_caching": False},
}


def build_requests(path: Path) -> None:
    """Judgment requests for the example data, written as JSON (parent process, no engine)."""
    from scaffold_local.backends.responder import ResponderBackend
    from scaffold_local.config import ModelConfig
    from scaffold_local.data import load_input
    from scaffold_local.pipeline import Pipeline
    from scaffold_local.requests import Judge

    loaded = load_input(EXAMPLE)
    responder = ModelConfig(name="responder", backend="responder", model="responder",
                            limits=ModelConfig.load("smollm2-135m-vllm").limits)
    with tempfile.TemporaryDirectory() as store:
        scaffolds = Pipeline(responder, Path(store), backend_factory=ResponderBackend).extract(
            list(loaded.documents.values())).scaffolds
    judge = Judge(ModelConfig.load("smollm2-135m-vllm"))
    planned = [p for c in sorted(loaded.candidates, key=lambda c: c.doc_id)
               for p in judge.judgment_requests(scaffolds[c.doc_id], loaded.documents[c.doc_id], c)]
    path.write_text(json.dumps([{"request": p.request.model_dump(), "task": p.task} for p in planned]))


def run_variant(requests_path: Path, settings: dict) -> dict:
    """Child process: one engine, one variant; prints a JSON result."""
    from scaffold_local.backends import Request
    from scaffold_local.backends.vllm import VllmBackend
    from scaffold_local.config import ModelConfig

    base = ModelConfig.load("smollm2-135m-vllm")
    engine = {**base.engine, "enable_prefix_caching": settings.get("enable_prefix_caching", True)}
    config = base.model_copy(update={"structured_outputs": settings["structured_outputs"], "engine": engine})
    requests = [Request.model_validate(r["request"]) for r in json.loads(requests_path.read_text())]
    started = time.perf_counter()
    backend = VllmBackend(config)
    start_s = time.perf_counter() - started
    started = time.perf_counter()
    if settings.get("one_at_a_time"):
        results = [backend.generate([r])[0] for r in requests]
    else:
        results = backend.generate(requests)
    seconds = time.perf_counter() - started
    valid = 0
    for request, result in zip(requests, results):
        try:
            import jsonschema

            jsonschema.validate(json.loads(result.text or ""), request.json_schema)
            valid += 1
        except (ValueError, jsonschema.ValidationError):
            pass
    prompt = sum(r.usage.prompt_tokens for r in results if r.usage)
    cached = sum(r.usage.cached_prompt_tokens or 0 for r in results if r.usage)
    output = sum(r.usage.completion_tokens for r in results if r.usage)
    backend.close()
    return {"engine_start_s": round(start_s, 1), "seconds": round(seconds, 1), "requests": len(results),
            "valid_json": valid, "output_tokens": output, "output_tokens_per_s": round(output / seconds, 1),
            "prefix_cache_hit_rate": round(cached / prompt, 3) if prompt else None,
            "finish_reasons": {k: sum(r.finish_reason == k for r in results) for k in ("stop", "length", "error")},
            "error_samples": sorted({(r.error or "")[:200] for r in results if r.error})[:3]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per variant")
    parser.add_argument("--only", help="comma-separated variant names (default: all)")
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print("RESULT " + json.dumps(run_variant(args.requests, VARIANTS[args.variant])))
        return

    report: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        requests_path = Path(tmp) / "requests.json"
        build_requests(requests_path)
        for name in (args.only.split(",") if args.only else VARIANTS):
            command = [sys.executable, __file__, "--variant", name, "--requests", str(requests_path)]
            # Own process group, so a hung engine's worker processes are killed with it.
            child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
            try:
                stdout, stderr = child.communicate(timeout=args.timeout)
                line = next((line for line in stdout.splitlines() if line.startswith("RESULT ")), None)
                report[name] = json.loads(line[7:]) if line else {"error": stderr[-800:]}
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.communicate()
                report[name] = {"error": f"did not finish within {args.timeout} s"}
            print(name, json.dumps(report[name]), flush=True)
    batched, single = report.get("batched/xgrammar", {}), report.get("one_at_a_time/xgrammar", {})
    if "seconds" in batched and "seconds" in single:
        report["batching_speedup"] = round(single["seconds"] / batched["seconds"], 2)
        print("batching speedup:", report["batching_speedup"])
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
