"""GPU throughput of a full scoring run, and how close decoding came to the memory-bandwidth limit.

One command on a machine with a GPU, vLLM and a local 8B-class checkpoint (no hub access needed):

    python benchmarks/gpu_throughput.py --model /models/Llama-3.1-8B-Instruct \
        [--config llama-3.1-8b-instruct-vllm] [--documents 32] [--summaries 16] [--bandwidth-tbs 4.8] \
        [--method-versions 6,7]

It writes a fixed generated workload (benchmarks/workload.py: medium news-like documents, n
summaries each, seeded), scores it with `scaffold-local`'s pipeline on vLLM (extraction and every
judgment, into a temporary store), and prints output tok/s, summaries/s and the fraction of the
memory-bandwidth limit reached. With several method versions, each scores the same workload on an
engine of its own, one after the other: version 6 writes its verdicts, version 7 reads them (one
prompt per verdict ending at the answer, one sampled token that is never fed back, every shared part
from vLLM's prefix cache), so the rows give the price of a judgment on a GPU both ways: seconds per
summary, prompt tokens computed (not from the prefix cache) and tokens generated per summary.

The limit. Decoding is bound by memory traffic: every engine step reads all weights once, and every
running sequence reads its KV cache up to its current length. Over the run,

    bytes  = steps x W  +  kv x sum over requests of (P x O + O^2 / 2)
    t_min  = bytes / B          fraction = t_min / t_measured

W: bytes of weights (the checkpoint's safetensors files); kv: KV bytes per token
= 2 x layers x kv_heads x head_dim x bytes per element; P, O: a request's prompt and output tokens;
steps: engine steps (vLLM's `vllm:iteration_tokens_total` histogram count); B: the GPU's memory
bandwidth (a table of common GPUs, or --bandwidth-tbs). Prefill time and the scheduler's own time
are in t_measured too, so the fraction is a lower bound on decoding's efficiency. On one H200
(4.8 TB/s) an 8B bf16 model (W = 16 GB) is capped near 300 tok/s at batch 1 and about 10-12k tok/s
at large batches with 3k-token contexts (../shared/design/ENVIRONMENT.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import generated  # noqa: E402

# Peak memory bandwidth, TB/s (vendor data sheets), matched against torch's device name.
BANDWIDTH_TBS = {"H200": 4.8, "H100 SXM": 3.35, "H100 NVL": 3.9, "H100 PCIe": 2.0, "H100": 3.35, "A100-SXM4-80GB": 2.039,
                 "A100 80GB PCIe": 1.935, "A100": 1.555, "L40S": 0.864, "L4": 0.3, "A10G": 0.6, "A10": 0.6,
                 "RTX 4090": 1.008, "RTX 6000 Ada": 0.96, "B200": 8.0}


def gpu_bandwidth(override: float | None) -> tuple[str, float | None]:
    import torch

    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    if override:
        return name, override * 1e12
    found = next((tbs for key, tbs in BANDWIDTH_TBS.items() if key.lower() in name.lower()), None)
    return name, found * 1e12 if found else None


def model_bytes(model_dir: Path) -> tuple[int, int]:
    """(weight bytes, KV bytes per token) of a local Hugging Face checkpoint."""
    config = json.loads((model_dir / "config.json").read_text())
    weights = sum(p.stat().st_size for p in model_dir.glob("*.safetensors"))
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    kv_heads = config.get("num_key_value_heads", heads)
    dtype_bytes = 1 if "8" in str(config.get("torch_dtype", "")) else 2
    return weights, 2 * config["num_hidden_layers"] * kv_heads * head_dim * dtype_bytes


def engine_steps(llm: Any) -> int | None:
    for metric in llm.get_metrics():
        if metric.name == "vllm:iteration_tokens_total":
            return int(metric.count)
    return None


class Recording:
    """The engine, recording every result's token counts."""

    def __init__(self, backend: Any):
        self.backend, self.tokens = backend, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def generate(self, requests: Any) -> list:
        results = self.backend.generate(requests)
        self.tokens += [(r.usage.prompt_tokens, r.usage.completion_tokens) for r in results if r.usage]
        return results


def bandwidth_fraction(tokens: list[tuple[int, int]], steps: int | None, weights: int, kv_per_token: int,
                       seconds: float, bandwidth: float | None) -> dict[str, Any]:
    if steps is None or bandwidth is None:
        return {"fraction_of_bandwidth_limit": None, "why": "engine steps or GPU bandwidth unknown"}
    kv_bytes = sum(kv_per_token * (prompt * output + output * output / 2) for prompt, output in tokens)
    total = steps * weights + kv_bytes
    return {"engine_steps": steps, "weight_bytes": weights, "kv_bytes_per_token": kv_per_token,
            "bytes_read": total, "t_min_s": round(total / bandwidth, 2),
            "fraction_of_bandwidth_limit": round(total / bandwidth / seconds, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="local checkpoint folder (config.json, *.safetensors)")
    parser.add_argument("--config", default="llama-3.1-8b-instruct-vllm", help="model config to run it with")
    parser.add_argument("--documents", type=int, default=32)
    parser.add_argument("--summaries", type=int, default=16, help="summaries per document")
    parser.add_argument("--bandwidth-tbs", type=float, help="GPU memory bandwidth, TB/s (default: from the GPU's name)")
    parser.add_argument("--method-versions", default="7", help="comma-separated: each scores the workload in turn")
    parser.add_argument("--out", type=Path, help="write the result as JSON")
    args = parser.parse_args()
    results = [measure(args, int(version)) for version in args.method_versions.split(",")]
    print(json.dumps(results, indent=1))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


def measure(args: argparse.Namespace, version: int) -> dict[str, Any]:

    from scaffold_local.backends import create_backend
    from scaffold_local.runs import ModelConfig, Pipeline, load_input

    base = ModelConfig.load(args.config)
    engine = {**base.engine, "extra": {**base.engine.get("extra", {}), "disable_log_stats": False}}  # step counts
    config = base.model_copy(update={"model": str(args.model.resolve()), "engine": engine})
    workload = generated("medium", args.documents, args.summaries)
    engines: list[Recording] = []

    def keep(c: ModelConfig) -> Any:
        engines.append(Recording(create_backend(c)))
        return engines[-1]

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "workload.jsonl"
        documents = {d.doc_id: d.text for d in workload.documents}
        data.write_text("".join(json.dumps({"doc_id": c.doc_id, "document": documents[c.doc_id], "system": c.system,
                                            "summary": c.summary}) + "\n" for c in workload.candidates))
        pipeline = Pipeline(config, Path(tmp) / "store", backend_factory=keep, method=version)
        _ = pipeline.dispatch.backend  # start the engine before the clock
        started = time.perf_counter()
        outcome = pipeline.score(load_input(data))
        seconds = time.perf_counter() - started
        tokens = engines[0].tokens
        steps = engine_steps(engines[0].llm)
        pipeline.dispatch.close()

    gpu, bandwidth = gpu_bandwidth(args.bandwidth_tbs)
    weights, kv_per_token = model_bytes(args.model)
    output = sum(o for _, o in tokens)
    judgments, n = outcome.usage.judgments, workload.summaries
    return {
        "gpu": gpu, "bandwidth_bytes_per_s": bandwidth, "model": str(args.model), "config": args.config,
        "method_version": version, "workload": workload.name, "summaries": n, "requests": len(tokens),
        "seconds": round(seconds, 1), "seconds_per_summary": round(seconds / n, 3),
        "summaries_per_s": round(n / seconds, 3), "output_tokens": output, "output_tokens_per_s": round(output / seconds, 1),
        "judgment_requests_per_summary": round(judgments.requests / n, 2),
        "judgment_prompt_tokens_computed_per_summary": round(judgments.computed_prompt_tokens / n, 1),
        "judgment_tokens_generated_per_summary": round(judgments.completion_tokens / n, 1),
        "prefix_cache_hit_rate": judgments.prefix_cache_hit_rate,
        "validation_failures": outcome.validation_failures,
        **bandwidth_fraction(tokens, steps, weights, kv_per_token, seconds, bandwidth),
    }


if __name__ == "__main__":
    main()
