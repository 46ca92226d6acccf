"""A config's `model` as a local folder of weights: a path (environment variables expanded), or
the embedded model, converted once from its GGUF file into a safetensors folder that vLLM and
transformers both load. Nothing is ever downloaded (air-gapped use)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..embedded import EMBEDDED_MODELS, EMBEDDED_PREFIX, cache_root, locate_gguf


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


def convert_gguf_to_safetensors(gguf: Path, target: Path) -> None:
    """Dequantize a GGUF checkpoint into a plain safetensors folder. A GGUF-loaded model cannot be
    saved directly (it is marked quantized), so its weights go into a fresh model built from the
    same config without the quantization entry."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the dequantization notices and progress bars are noise here
    hf_logging.disable_progress_bar()
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF reader's own progress bar ignores the switch
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    fresh.load_state_dict(loaded.state_dict(), strict=True)
    fresh.save_pretrained(target)
    tokenizer.save_pretrained(target)
