"""Backends behind one batch-first protocol, each one class over `BaseBackend` in its own module.
A module is imported only when a config names its backend, and imports its engine only when the
backend starts, so `import scaffold_local` never pulls torch or an HTTP client. The registry is the
one list of backends: config validation (names, [engine] tables, the fingerprint), token counting
and `create_backend` all read it. Other packages add theirs through the `scaffold_local.backends`
entry-point group (name = "module:Class"), found when a backend is first looked up, or by `register`."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from ..errors import BackendError
from .base import BaseBackend, EngineOptions
from .protocol import Backend, EngineConfig, Message, Request, Result, Sampling, Usage

# backend name -> "module:class" of the package's own engines; `register` adds others
_ENGINES: dict[str, str | type[BaseBackend]] = {
    "transformers": "scaffold_local.backends.transformers:TransformersBackend",
    "vllm": "scaffold_local.backends.vllm:VllmBackend",
    "ray": "scaffold_local.backends.ray_data:RayDataBackend",
    "llama-cpp": "scaffold_local.backends.llama_cpp:LlamaCppBackend",
    "openai": "scaffold_local.backends.openai:OpenAIBackend",
    "responder": "scaffold_local.backends.responder:ResponderBackend",
}

ENTRY_POINT_GROUP = "scaffold_local.backends"
_discovered = False


def _discover() -> None:
    """Add the installed packages' backends (entry points) once; the package's own and registered names win."""
    global _discovered
    if not _discovered:
        _discovered = True
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            _ENGINES.setdefault(entry.name, entry.value)


def register(backend: type[BaseBackend]) -> type[BaseBackend]:
    """Make a backend class available to configs under its `name` (usable as a class decorator)."""
    _ENGINES[backend.name] = backend
    return backend


def backend_names() -> tuple[str, ...]:
    _discover()
    return tuple(_ENGINES)


def backend_class(name: str) -> type[BaseBackend]:
    """The class of a backend, its module imported on first use (not its engine)."""
    _discover()
    entry = _ENGINES.get(name)
    if entry is None:
        raise BackendError(f"unknown backend {name!r} (known: {', '.join(_ENGINES)})", backend=name)
    if isinstance(entry, str):
        module_name, class_name = entry.split(":")
        try:
            entry = _ENGINES[name] = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            raise BackendError(f"backend {name!r} is declared as {entry!r}, which does not import: {exc}",
                               backend=name) from exc
    return entry


def create_backend(config: EngineConfig) -> Backend:
    return backend_class(config.backend)(config)


__all__ = ["Backend", "BackendError", "BaseBackend", "EngineOptions", "Message", "Request", "Result", "Sampling",
           "Usage", "backend_class", "backend_names", "create_backend", "register"]
