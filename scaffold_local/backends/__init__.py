"""Backends behind one batch-first protocol. Each engine lives in its own module and is imported
only when a config selects it, so `import scaffold_local` never pulls torch or an HTTP client."""

from __future__ import annotations

import importlib

from ..config import ModelConfig
from .base import Backend, BackendError, Message, Request, Result, Sampling, Usage

_REGISTRY = {
    "transformers": "scaffold_local.backends.transformers:TransformersBackend",
    "vllm": "scaffold_local.backends.vllm:VllmBackend",
    "ray": "scaffold_local.backends.ray_data:RayDataBackend",
    "llama-cpp": "scaffold_local.backends.llama_cpp:LlamaCppBackend",
    "openai": "scaffold_local.backends.openai:OpenAIBackend",
    "responder": "scaffold_local.backends.responder:ResponderBackend",
}


def create_backend(config: ModelConfig) -> Backend:
    if config.backend not in _REGISTRY:
        raise BackendError(f"unknown backend {config.backend!r} (known: {', '.join(_REGISTRY)})", backend=config.backend)
    module_name, class_name = _REGISTRY[config.backend].split(":")
    return getattr(importlib.import_module(module_name), class_name)(config)


__all__ = ["Backend", "BackendError", "Message", "Request", "Result", "Sampling", "Usage", "create_backend"]
