"""Judge model configuration: one TOML file per judge model and engine setting (model_configs/)."""

from __future__ import annotations

import difflib
import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..backends import EngineOptions, backend_class, backend_names
from ..errors import ConfigError, UsageError
from ..method.schemas import SchemaLimits
from ..method.versions import method_version

DEFAULT_MODEL = "qwen2.5-coder-1.5b-llama-cpp"  # the CPU judge; SmolLM2-135M by name, for fast tests
# The kinds of judgment a threshold may apply to: each view's verdicts and the sentence check's.
THRESHOLD_KINDS = ("facts", "questions", "entities", "faithfulness", "main")


def resource_dir(name: str) -> Path:
    """prompts/ or model_configs/: bundled inside an installed wheel, at the repository root otherwise."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "_bundled" / name, package.parent / name):
        if candidate.is_dir():
            return candidate
    raise ConfigError(f"cannot find the {name}/ folder next to {package}")


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
    backend: str = Field(description="a registered backend (backends/__init__.py)")
    model: str = Field(description="local model folder, 'embedded:smollm2-135m-instruct', or a served model name (openai)")
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
    verdict_confidence: bool = Field(False, description="record P(kept) of each fact and question verdict from "
                                                        "the engine's token probabilities")
    method_version: int | None = Field(None, description="the method version this judge runs unless one is asked "
                                                         "for (None: the package default)")
    thresholds: dict[int, dict[str, float]] = Field(
        default_factory=dict, description="by method version, by kind of judgment (facts, questions, entities, "
                                          "faithfulness): an item counts as kept (a sentence as supported) when its "
                                          "P >= this, instead of the judge's greedy word; calibrated by `meta-eval` on "
                                          "the human labels of dev documents, under that method version only")
    engine: dict[str, Any] = Field(default_factory=dict, description="backend-specific settings")

    @model_validator(mode="before")
    @classmethod
    def _one_threshold(cls, data: Any) -> Any:
        """`decision_threshold` (before thresholds per kind): facts and questions under `method_version`."""
        if isinstance(data, dict) and "decision_threshold" in data:
            data = dict(data)
            threshold = data.pop("decision_threshold")
            if not data.get("method_version"):
                raise ValueError("decision_threshold needs the method_version it was calibrated under")
            data["thresholds"] = {data["method_version"]: {"facts": threshold, "questions": threshold},
                                  **data.get("thresholds", {})}
        return data

    @field_validator("name")
    @classmethod
    def _one_folder_name(cls, name: str) -> str:
        # The name becomes part of file and folder names in the store (run ids, judge checks, reports).
        if name.strip() in ("", ".", "..") or any(c in name for c in ("/", "\\", "\0")):
            raise ValueError(f"name {name!r} must be usable as a folder name: not empty, '.' or '..', "
                             "and without '/', '\\' or NUL")
        return name

    @field_validator("backend")
    @classmethod
    def _registered(cls, backend: str) -> str:
        if backend not in backend_names():
            raise ValueError(f"unknown backend {backend!r} (known: {', '.join(backend_names())})")
        return backend

    @model_validator(mode="after")
    def _engine_settings(self) -> ModelConfig:
        check_engine_options(self.backend, backend_class(self.backend).engine_options, self.engine)  # before any engine
        for number, kinds in self.thresholds.items():
            try:
                method = method_version(number)
            except UsageError as exc:
                raise ValueError(f"thresholds.{number}: {exc}") from None
            if (note := method.not_a_confidence) is not None:
                raise ValueError(f"thresholds under method version {number} need P(kept) to be a confidence, but {note}")
            if not method.reads_verdicts and not self.verdict_confidence:
                raise ValueError(f"thresholds under method version {number} need verdict_confidence = true (they apply "
                                 "to P(kept), which that version reads from the tokens it writes)")
            if unknown := sorted(set(kinds) - set(THRESHOLD_KINDS)):
                raise ValueError(f"thresholds.{number}: unknown kind {', '.join(unknown)} "
                                 f"(known: {', '.join(THRESHOLD_KINDS)})")
            if bad := [f"{k} = {v}" for k, v in kinds.items() if not 0 < v < 1]:
                raise ValueError(f"thresholds.{number}: {', '.join(bad)}: a threshold is a probability strictly "
                                 "between 0 and 1")
        return self

    def fingerprint(self) -> str:
        """Hash of everything that shapes the judge's outputs: the key for cached scaffolds."""
        # verdict_confidence is left out: the requests that ask for probabilities carry it in their sampling.
        # method_version and thresholds are left out too: the method is in every prompt and schema, and a
        # threshold reads outputs without changing them (the run identity records it).
        payload = self.model_dump(exclude={"name", "description", "engine", "limits", "budget", "requests_per_call",
                                           "verdict_confidence", "method_version", "thresholds"})
        backend = backend_class(self.backend)
        payload["engine"] = {k: v for k, v in self.engine.items() if k not in backend.engine_options.throughput_only}
        payload["backend"] = backend.same_outputs_as or self.backend
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    @classmethod
    def load(cls, name_or_path: str | None = None) -> ModelConfig:
        """A config by name (a file in model_configs/) or by path to a TOML file."""
        data, path = _read_toml(name_or_path or DEFAULT_MODEL)
        data.setdefault("name", path.stem)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = [(".".join(map(str, e["loc"])) + ": " if e["loc"] else "") + e["msg"].removeprefix("Value error, ")
                        for e in exc.errors()]
            raise ConfigError(f"{path}: invalid model config: " + "; ".join(problems)) from None


# Tables merged key by key under `extends`; every other key (the engine table included) replaces.
_MERGED_TABLES = ("limits", "budget", "thresholds")  # thresholds: merged by method version


def _read_toml(name_or_path: str, seen: tuple[Path, ...] = ()) -> tuple[dict[str, Any], Path]:
    """Read a config file; `extends = "other-config"` starts from another config's values."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = resource_dir("model_configs") / f"{path}.toml"
    if not path.is_file():
        shipped = sorted(p.stem for p in resource_dir("model_configs").glob("*.toml"))
        close = difflib.get_close_matches(str(name_or_path), shipped, n=1, cutoff=0.8)
        raise ConfigError(f"model config {name_or_path!r} not found" + (f": did you mean {close[0]!r}?" if close else ""),
                          hint=f"`scaffold-local models` lists the judges ({', '.join(shipped)}); -m also takes a "
                               "path to a .toml")
    if path.resolve() in seen:
        raise ConfigError(f"{path}: `extends` loops back to itself")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    base_name = data.pop("extends", None)
    if base_name is None:
        return data, path
    base, _ = _read_toml(base_name, (*seen, path.resolve()))
    base.pop("name", None)
    merged = {**base, **data}
    for table in _MERGED_TABLES:
        merged[table] = {**base.get(table, {}), **data.get(table, {})}
    return merged, path


def available_configs() -> list[ModelConfig]:
    return [ModelConfig.load(str(p)) for p in sorted(resource_dir("model_configs").glob("*.toml"))]


def check_engine_options(backend: str, options: type[EngineOptions], engine: dict[str, Any]) -> None:
    """Raise ValueError naming each bad `[engine]` key (with the nearest valid name for a typo)."""
    try:
        options.model_validate(engine)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = ".".join(str(part) for part in error["loc"])
            hint = ""
            if error["type"] == "extra_forbidden":
                close = difflib.get_close_matches(str(error["loc"][0]), list(options.model_fields), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(options.model_fields)})"
            problems.append(f"[engine] {key}: {error['msg']}{hint}")
        raise ValueError(f"invalid {backend} engine settings: " + "; ".join(problems)) from None
