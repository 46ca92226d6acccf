"""Judge model configuration: one TOML file per judge model and engine setting (model_configs/)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .schemas import SchemaLimits

DEFAULT_MODEL = "smollm2-135m-transformers"
BackendName = Literal["transformers", "responder"]
# Engine settings that cannot change an output (throughput, memory) stay out of the judge fingerprint,
# so tuning them keeps cached scaffolds and records valid.
THROUGHPUT_ONLY_SETTINGS = frozenset({"batch_size", "threads"})


def resource_dir(name: str) -> Path:
    """prompts/ or model_configs/: bundled inside an installed wheel, at the repository root otherwise."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "_bundled" / name, package.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"cannot find the {name}/ folder next to {package}")


class TokenBudget(BaseModel):
    """max_tokens per request. Alignment budgets grow with the number of scaffold items: a verdict's
    JSON is bounded by the schema limits, so `per_item` can be set to cover the longest verdict and
    no output is ever cut off."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    extraction: int = Field(2048, ge=16)
    base: int = Field(24, ge=1)
    per_item: int = Field(96, ge=8)
    direct_score: int = Field(384, ge=16)

    def for_items(self, n_items: int) -> int:
        return self.base + self.per_item * n_items


class ModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    backend: BackendName
    model: str = Field(description="local model folder, or 'embedded:smollm2-135m-instruct'")
    description: str = ""
    structured_outputs: str = Field("xgrammar", description="grammar engine that enforces the JSON schema")
    whitespace: Literal["compact", "any"] = Field("compact", description="JSON whitespace the grammar allows")
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    max_model_len: int = 8192
    limits: SchemaLimits = SchemaLimits()
    budget: TokenBudget = TokenBudget()
    requests_per_call: int = Field(256, ge=8, description="requests per engine call; results are stored after each call")
    engine: dict[str, Any] = Field(default_factory=dict, description="backend-specific settings")

    def fingerprint(self) -> str:
        """Hash of everything that shapes the judge's outputs: the key for cached scaffolds."""
        payload = self.model_dump(exclude={"name", "description", "engine", "limits", "budget", "requests_per_call"})
        payload["engine"] = {k: v for k, v in self.engine.items() if k not in THROUGHPUT_ONLY_SETTINGS}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    @classmethod
    def load(cls, name_or_path: str | None = None) -> "ModelConfig":
        """A config by name (a file in model_configs/) or by path to a TOML file."""
        path = Path(name_or_path or DEFAULT_MODEL)
        if path.suffix != ".toml":
            path = resource_dir("model_configs") / f"{path}.toml"
        if not path.is_file():
            available = ", ".join(sorted(p.stem for p in resource_dir("model_configs").glob("*.toml")))
            raise FileNotFoundError(f"model config {name_or_path!r} not found (available: {available})")
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: not valid TOML: {exc}") from None
        data.setdefault("name", path.stem)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ValueError(f"{path}: invalid model config:\n{exc}") from None


def available_configs() -> list[ModelConfig]:
    return [ModelConfig.load(str(p)) for p in sorted(resource_dir("model_configs").glob("*.toml"))]
