"""Method version 1 vs 2, side by side on the embedded model, in one invocation.

    .venv/bin/python benchmarks/method_versions.py [--out benchmarks/results/method_versions_cpu]
                                                   [--only grammar|pipeline] [--timeout 900]

1. grammar: do the grammar engines accept version 2's alignment schemas, where verdict and
   evidence must agree (`anyOf` of an inferred shape citing 1..k sentences and a not-inferred
   shape citing none)? The same judgment requests (scaffolds built by the responder, so every
   variant sees identical items) go through each engine under v1 and v2 schemas: schema-valid
   outputs, seconds and output tokens, and how often v1 outputs contradict themselves (inferred
   without a cited sentence, or citing sentences while not inferred). transformers runs the first
   example document (15 requests), vLLM all three (45); each variant is its own process under a
   time limit, so an engine that hangs is reported, not waited for.
2. pipeline: `score` on examples/news.jsonl with the default judge (transformers) under v1 and v2:
   validation failures, tokens, and the per-system table.

Writes <out>.json and <out>.md.
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
ENGINES = {"transformers": ("xgrammar", "outlines_core", "llguidance"), "vllm": ("xgrammar", "guidance", "outlines")}
DOCS = {"transformers": 1, "vllm": 3}


def build_requests(path: Path, backend: str, method: int) -> None:
    """Judgment requests for the example data under one method version, written as JSON."""
    from scaffold_local.judging import Judge
    from scaffold_local.method import method_version
    from scaffold_local.runs import ModelConfig, Pipeline, load_input
    from scaffold_local.testing import ResponderBackend

    loaded = load_input(EXAMPLE)
    keep = list(loaded.documents)[: DOCS[backend]]
    judge_config = ModelConfig.load(f"smollm2-135m-{backend}")
    responder = ModelConfig(name="responder", backend="responder", model="responder", limits=judge_config.limits)
    with tempfile.TemporaryDirectory() as store:
        scaffolds = Pipeline(responder, Path(store), backend_factory=ResponderBackend, method=method).extract(
            [loaded.documents[d] for d in keep]).scaffolds
    judge = Judge(judge_config, method_version(method))
    planned = [p for c in sorted(loaded.candidates, key=lambda c: c.doc_id) if c.doc_id in keep
               for p in judge.plan(scaffolds[c.doc_id], loaded.documents[c.doc_id], c)]
    path.write_text(json.dumps([{"request": p.request.model_dump(), "task": p.task} for p in planned]))


def _self_contradictions(text: str | None, task: str) -> int:
    """Verdicts whose evidence disagrees with them (what v2's schema makes impossible)."""
    verdict = {"align_facts": "inferred", "align_questions": "answered"}.get(task)
    try:
        parsed = json.loads(text or "")
    except ValueError:
        return 0
    if verdict is None or not isinstance(parsed, dict):
        return 0
    return sum(1 for v in parsed.values() if isinstance(v, dict) and bool(v.get(verdict)) != bool(v.get("sentence_ids")))


def run_variant(requests_path: Path, backend_name: str, engine: str) -> dict:
    """Child process: one engine, one method version's requests."""
    import jsonschema

    from scaffold_local.backends import Request, create_backend
    from scaffold_local.runs import ModelConfig

    config = ModelConfig.load(f"smollm2-135m-{backend_name}").model_copy(update={"structured_outputs": engine})
    rows = json.loads(requests_path.read_text())
    requests = [Request.model_validate(r["request"]) for r in rows]
    backend = create_backend(config)
    started = time.perf_counter()
    results = backend.generate(requests)
    seconds = time.perf_counter() - started
    backend.close()
    valid = contradictions = 0
    for row, request, result in zip(rows, requests, results):
        try:
            jsonschema.validate(json.loads(result.text or ""), request.json_schema)
            valid += 1
        except (ValueError, jsonschema.ValidationError):
            pass
        contradictions += _self_contradictions(result.text, row["task"])
    output = sum(r.usage.completion_tokens for r in results if r.usage)
    return {"requests": len(results), "schema_valid": valid, "seconds": round(seconds, 1), "output_tokens": output,
            "output_tokens_per_s": round(output / seconds, 1) if seconds else None,
            "self_contradicting_verdicts": contradictions,
            "finish_reasons": {k: sum(r.finish_reason == k for r in results) for k in ("stop", "length", "error")},
            "error_samples": sorted({(r.error or "")[:200] for r in results if r.error})[:2]}


def grammar(timeout: int) -> dict:
    report: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend, engines in ENGINES.items():
            for method in (1, 2):
                requests_path = Path(tmp) / f"{backend}-v{method}.json"
                build_requests(requests_path, backend, method)
                for engine in engines:
                    name = f"{backend}/{engine}/v{method}"
                    command = [sys.executable, __file__, "--variant", f"{backend}/{engine}",
                               "--requests", str(requests_path)]
                    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                             start_new_session=True)
                    try:
                        stdout, stderr = child.communicate(timeout=timeout)
                        line = next((line for line in stdout.splitlines() if line.startswith("RESULT ")), None)
                        report[name] = json.loads(line[7:]) if line else {"error": stderr[-600:]}
                    except subprocess.TimeoutExpired:
                        os.killpg(child.pid, signal.SIGKILL)
                        child.communicate()
                        report[name] = {"error": f"did not finish within {timeout} s"}
                    print(name, json.dumps(report[name]), flush=True)
    return report


def pipeline() -> dict:
    from scaffold_local.runs import ModelConfig, Pipeline, load_input

    report = {}
    with tempfile.TemporaryDirectory() as store:
        for method in (1, 2):
            pipe = Pipeline(ModelConfig.load("smollm2-135m-transformers"), Path(store), method=method)
            started = time.perf_counter()
            outcome = pipe.score(load_input(EXAMPLE))
            pipe.close()
            report[f"v{method}"] = {
                "seconds": round(time.perf_counter() - started, 1),
                "validation_failures": outcome.validation_failures,
                "usage": outcome.usage.model_dump(),
                "systems": {s.system: {k: m.mean for k, m in s.metrics.items()} for s in outcome.systems},
            }
            print(f"v{method}", json.dumps(report[f"v{method}"]["usage"]), flush=True)
    return report


def markdown(report: dict) -> str:
    lines = []
    if "grammar" in report:
        lines += ["| backend / grammar engine | v1 schema-valid | v2 schema-valid | v1 self-contradicting verdicts "
                  "| v1 s (out tok) | v2 s (out tok) |", "| --- | --- | --- | --- | --- | --- |"]
        for backend, engines in ENGINES.items():
            for engine in engines:
                v1, v2 = (report["grammar"].get(f"{backend}/{engine}/v{m}", {}) for m in (1, 2))

                def cell(r: dict, key: str) -> str:
                    return str(r.get(key, "failed: " + r.get("error", "?")[:60].replace("|", "/").replace("\n", " ")))

                lines.append(f"| {backend} / {engine} | {cell(v1, 'schema_valid')}/{v1.get('requests', '?')} "
                             f"| {cell(v2, 'schema_valid')}/{v2.get('requests', '?')} "
                             f"| {v1.get('self_contradicting_verdicts', '–')} "
                             f"| {v1.get('seconds', '–')} ({v1.get('output_tokens', '–')}) "
                             f"| {v2.get('seconds', '–')} ({v2.get('output_tokens', '–')}) |")
        lines.append("")
    if "pipeline" in report:
        runs = report["pipeline"]
        lines += ["| examples/news.jsonl, smollm2-135m-transformers | v1 | v2 |", "| --- | --- | --- |"]
        for label, get in [
            ("validation failures (of 45 judgments)", lambda r: r["validation_failures"]),
            ("judgment prompt / output tokens", lambda r: f"{r['usage']['judgments']['prompt_tokens']:,} / "
                                                         f"{r['usage']['judgments']['completion_tokens']:,}"),
            ("extraction prompt / output tokens", lambda r: f"{r['usage']['extraction']['prompt_tokens']:,} / "
                                                           f"{r['usage']['extraction']['completion_tokens']:,}"),
            ("seconds", lambda r: r["seconds"]),
        ]:
            lines.append(f"| {label} | {get(runs['v1'])} | {get(runs['v2'])} |")
        systems = list(runs["v2"]["systems"])
        lines += ["", "| metric | " + " | ".join(f"{s} v1 | {s} v2" for s in systems) + " |",
                  "| --- |" + " --- |" * (2 * len(systems))]
        for metric in runs["v2"]["systems"][systems[0]]:
            cells = []
            for s in systems:
                for version in ("v1", "v2"):
                    value = runs[version]["systems"].get(s, {}).get(metric)
                    cells.append("–" if value is None else f"{value:.3f}")
            lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="write <out>.json and <out>.md")
    parser.add_argument("--only", choices=("grammar", "pipeline"))
    parser.add_argument("--timeout", type=int, default=900, help="seconds per grammar variant")
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        backend, engine = args.variant.split("/")
        print("RESULT " + json.dumps(run_variant(args.requests, backend, engine)))
        return
    report = {}
    if args.only in (None, "grammar"):
        report["grammar"] = grammar(args.timeout)
    if args.only in (None, "pipeline"):
        report["pipeline"] = pipeline()
    table = markdown(report)
    print(table)
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(report, indent=1))
        args.out.with_suffix(".md").write_text(table)


if __name__ == "__main__":
    main()
