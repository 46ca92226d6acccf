"""Each backend's engine settings (the `[engine]` table of a model config), as typed models.

They are validated when a config loads, before any engine or model is touched: a misspelt key is
an error naming the key and the file. Kept apart from the backends so that validating a config
never imports an engine module.
"""

from __future__ import annotations

import difflib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class VllmOptions(BaseModel):
    """Engine settings passed to `vllm.LLM`; see the vLLM docs for each."""

    model_config = ConfigDict(extra="forbid")
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


class RayOptions(VllmOptions):
    """vLLM replicas on a Ray cluster through Ray Data's LLM processor: the vLLM settings above for
    every replica, plus where and how many."""

    address: str | None = Field(None, description='Ray cluster address ("auto": the cluster this machine belongs '
                                                  'to); None starts a local Ray on this machine')
    replicas: int = Field(2, ge=1, description="vLLM engines; each gets whole documents, so a scaffold's requests "
                                               "share one engine's prefix cache")
    gpus_per_replica: float = Field(0, ge=0, description="0 on CPU; 1 (or tensor_parallel_size) on GPUs")
    cpus_per_replica: int = Field(1, ge=1, description="CPU cores per replica (its OpenMP threads on the CPU build)")


RAY_ONLY_OPTIONS = frozenset(RayOptions.model_fields) - frozenset(VllmOptions.model_fields)


class TransformersOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    device: str = "auto"  # "cpu", "cuda", "cuda:1", or "auto"
    batch_size: int = 8
    threads: int | None = None  # CPU threads for torch; None keeps torch's default


class LlamaCppOptions(BaseModel):
    """llama.cpp in process; one request's context is the config's max_model_len."""

    model_config = ConfigDict(extra="forbid")
    threads: int | None = Field(None, ge=1, description="CPU threads; None: every core this process may use")
    batch_size: int = Field(512, ge=8, description="tokens per forward pass (llama.cpp's n_batch)")
    parallel: int = Field(16, ge=1, le=256, description="requests decoded together, one token each per forward pass")
    kv_tokens: int = Field(16384, ge=512, description="KV-cache cells shared by the requests decoded together (a "
                                                       "prompt prefix they share is stored once)")

    @model_validator(mode="after")
    def _fits_a_batch(self) -> LlamaCppOptions:
        if self.parallel > self.batch_size:
            raise ValueError(f"parallel ({self.parallel}) cannot exceed batch_size ({self.batch_size}): every step "
                             "decodes one token of each request in one batch")
        return self


class OpenAIOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base_url: str = Field(description="e.g. http://127.0.0.1:8000/v1")
    api_key_env: str | None = Field(None, description="name of the environment variable holding the API key")
    concurrency: int = Field(8, ge=1)
    timeout_s: float = Field(300, gt=0, description="per request, reading included")
    connect_timeout_s: float = Field(10, gt=0)
    max_retries: int = Field(4, ge=0)
    backoff_s: float = Field(1.0, ge=0, description="first retry delay; doubles each retry, with jitter")
    response_format: Literal["json_schema", "json_object"] = "json_schema"
    extra_body: dict[str, Any] = Field(default_factory=dict, description="merged into every request body")


class ResponderOptions(BaseModel):
    """The test double's one setting: a pause per engine call, so tests can overlap two runs."""

    model_config = ConfigDict(extra="forbid")
    delay_s: float = Field(0.0, ge=0, description="seconds to sleep in each generate call")


ENGINE_OPTIONS: dict[str, type[BaseModel]] = {
    "vllm": VllmOptions, "ray": RayOptions, "transformers": TransformersOptions, "llama-cpp": LlamaCppOptions,
    "openai": OpenAIOptions,
    "responder": ResponderOptions,
}


def check_engine_options(backend: str, engine: dict[str, Any]) -> None:
    """Raise ValueError naming each bad `[engine]` key (with the nearest valid name for a typo)."""
    options = ENGINE_OPTIONS[backend]
    try:
        options.model_validate(engine)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = ".".join(str(part) for part in error["loc"])
            hint = ""
            if error["type"] == "extra_forbidden":
                close = difflib.get_close_matches(str(error["loc"][0]), list(options.model_fields), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(options.model_fields)})"
            problems.append(f"[engine] {key}: {error['msg']}{hint}")
        raise ValueError(f"invalid {backend} engine settings: " + "; ".join(problems)) from None
