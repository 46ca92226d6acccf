"""A config's `model` as a local folder of weights: a path (environment variables expanded), or
the embedded model, converted once from its GGUF file into a safetensors folder that vLLM and
transformers both load. Nothing is ever downloaded (air-gapped use)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import ModelFolderError
from .embedded import EMBEDDED_PREFIX, cache_root, embedded_model, locate_gguf

log = logging.getLogger(__name__)


def resolve_model_path(model: str) -> Path:
    """A config's `model` as a local folder: an embedded model (converted on first use) or a path
    (environment variables such as $SCAFFOLD_LOCAL_MODELS are expanded)."""
    if model.startswith(EMBEDDED_PREFIX):
        return ensure_converted(model.removeprefix(EMBEDDED_PREFIX))
    path = Path(os.path.expandvars(model)).expanduser()
    if not path.is_dir():
        unset = " (an environment variable in it is not set)" if "$" in str(path) else ""
        raise ModelFolderError(
            f"model folder {path} not found{unset}. scaffold_local loads weights from local folders only "
            "(air-gapped use): copy the model folder there, or point `model` in the config at it"
        )
    return path


def ensure_converted(name: str) -> Path:
    """The embedded model as a safetensors folder, converted once from its verified GGUF file."""
    model = embedded_model(name)
    target = cache_root() / "models" / f"{name}-{model.version}"
    if (target / "model.safetensors").is_file() or (target / "model.safetensors.index.json").is_file():
        return target
    gguf = locate_gguf(name)
    log.warning("converting the embedded model %s to safetensors, once (%s): %s", name,
                "about 30 s" if model.size < 200_000_000 else "a few minutes", target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        convert_gguf_to_safetensors(gguf, staging)
        try:
            os.replace(staging, target)
        except OSError:
            if not any(target.glob("model*.safetensors*")):  # lost a race to another process: fine
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
