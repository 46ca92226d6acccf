"""Side-by-side throughput of the transformers backend, measured in one process on the same requests.

    .venv/bin/python benchmarks/transformers_backend.py [--docs N] [--engines xgrammar,outlines_core]

1. batching: every judgment request of the example data as one batched call vs one request at a
   time (greedy, so both produce the same outputs; equal output lengths make the ratio fair);
2. grammar engines: the same batch under each outlines grammar engine (valid-output rate, time).

Numbers depend on the machine; the ratios measured side by side are what to compare.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from scaffold_local.backends import BackendError, create_backend
from scaffold_local.config import ModelConfig
from scaffold_local.data import load_input
from scaffold_local.pipeline import Pipeline
from scaffold_local.schemas import OutputError, parse_output

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "news.jsonl"


def judgment_requests(config: ModelConfig, docs: int):
    loaded = load_input(EXAMPLE)
    keep = list(loaded.documents)[:docs]
    loaded.candidates = [c for c in loaded.candidates if c.doc_id in keep]
    with tempfile.TemporaryDirectory() as store:
        pipeline = Pipeline(config, Path(store))
        scaffolds = pipeline.extract([loaded.documents[d] for d in keep]).scaffolds
        planned = [p for c in loaded.candidates
                   for p in pipeline.judge.judgment_requests(scaffolds[c.doc_id], loaded.documents[c.doc_id], c)]
        pipeline.close()
    return planned


def timed(backend, requests):
    started = time.perf_counter()
    results = backend.generate(requests)
    return results, time.perf_counter() - started


def summarize(planned, results, seconds):
    tokens = sum(r.usage.completion_tokens for r in results if r.usage)
    valid = 0
    for p, r in zip(planned, results):
        try:
            parse_output(p.model, r.text)
            valid += 1
        except OutputError:
            pass
    return {"requests": len(results), "seconds": round(seconds, 1), "output_tokens": tokens,
            "tokens_per_s": round(tokens / seconds, 1), "valid": valid}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1, help="example documents to use (3 summaries each)")
    parser.add_argument("--engines", default="xgrammar,outlines_core,llguidance")
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    args = parser.parse_args()

    config = ModelConfig.load("smollm2-135m-transformers")
    planned = judgment_requests(config, args.docs)
    requests = [p.request for p in planned]
    report: dict = {"requests": len(requests), "model": config.model}

    backend = create_backend(config)
    batched, batched_s = timed(backend, requests)
    one_by_one_s = 0.0
    single = []
    for request in requests:
        result, seconds = timed(backend, [request])
        single.extend(result)
        one_by_one_s += seconds
    backend.close()
    report["batching"] = {
        "batched": summarize(planned, batched, batched_s),
        "one_at_a_time": summarize(planned, single, one_by_one_s),
        "same_outputs": sum(a.text == b.text for a, b in zip(batched, single)),
        "speedup": round(one_by_one_s / batched_s, 2),
    }
    print(json.dumps(report["batching"], indent=1))

    report["grammar_engines"] = {}
    for engine in args.engines.split(","):
        engine_config = config.model_copy(update={"structured_outputs": engine})
        try:
            backend = create_backend(engine_config)
        except BackendError as exc:
            report["grammar_engines"][engine] = {"error": str(exc)}
            print(engine, "unavailable:", exc)
            continue
        results, seconds = timed(backend, requests)
        backend.close()
        report["grammar_engines"][engine] = summarize(planned, results, seconds)
        print(engine, json.dumps(report["grammar_engines"][engine]))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
