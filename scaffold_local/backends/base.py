"""What every engine shares on top of the protocol (protocol.py): `BaseBackend` (the grammar check, the
missing-dependency error, token counting, declared progress and retries), an engine's `[engine]` table
(`EngineOptions`), and the helpers that turn an engine's answers into results: finish reasons, per-request errors,
context overflow, JSON validation, next-token alternatives.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from ..errors import BackendError
from ..records import FailureCategory
from .protocol import EngineConfig, Request, Result, ResultCallback, StepCallback
from .tokens import EstimatedTokens, TokenCounter


class EngineOptions(BaseModel):
    """A backend's `[engine]` table. `throughput_only`: the settings that change speed, memory or
    transport, not outputs; they stay out of the judge fingerprint, so tuning them keeps cached
    scaffolds and records valid."""

    model_config = ConfigDict(extra="forbid")
    throughput_only: ClassVar[frozenset[str]] = frozenset()


class BaseBackend:
    """One engine: a subclass sets the class attributes and implements `generate` and `describe`;
    the base gives every backend the same checks, errors and optional features. Registered by
    `backends.register` (the package's own engines are listed in backends/__init__.py)."""

    name: ClassVar[str]  # the configs' `backend`
    engine_options: ClassVar[type[EngineOptions]] = EngineOptions  # its [engine] table, checked when a config loads
    grammar_engines: ClassVar[tuple[str, ...]] = ()  # the `structured_outputs` it accepts; () accepts any
    install: ClassVar[str] = ""  # the line that installs its packages
    reports_steps: ClassVar[bool] = False  # sets `on_step` progress inside a long call
    same_outputs_as: ClassVar[str | None] = None  # a backend whose outputs it reproduces (shares its cache)

    def __init__(self, config: EngineConfig):
        self.config = config
        if self.grammar_engines and config.structured_outputs not in self.grammar_engines:
            raise BackendError(f"structured_outputs={config.structured_outputs!r} is not one of {self.grammar_engines}",
                               backend=self.name)
        self.options: Any = self.engine_options.model_validate(config.engine)
        self.on_step: StepCallback | None = None  # set by the dispatcher where `reports_steps`
        self.on_result: ResultCallback | None = None  # set by the dispatcher
        self.retries: Counter[str] = Counter()  # attempts sent again within a call, by the failed one's class

    def finished(self, index: int, result: Result) -> Result:
        """Report a request of the current call as finished (see `on_result`); returns the result."""
        if self.on_result is not None:
            self.on_result(index, result)
        return result

    def missing(self, exc: ImportError) -> BackendError:
        """The error for an engine package that is not installed, with the line that installs it."""
        return BackendError(f"missing dependency: {exc.name}", backend=self.name, hint=self.install)

    @staticmethod
    def token_counter(config: EngineConfig) -> TokenCounter:
        """How to count a prompt's tokens without starting the engine: by default an estimate."""
        return EstimatedTokens(f"backend {config.backend} has no local tokenizer; the server decides")

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"engine": self.name}

    def close(self) -> None:
        pass


def finish_fields(reason: str | None) -> dict[str, Any]:
    """An engine's finish reason as Result fields: "stop" and "length" pass through; anything else
    is a per-item error that names the reason: an abort or an engine error may pass on a retry, a
    content filter or a tool call would happen again."""
    if reason in ("stop", "length"):
        return {"finish_reason": reason, "error": None}
    failure = "engine_crash" if reason in ("abort", "error") else "invalid_request"
    return {"finish_reason": "error", "error": f"finish_reason={reason}", "failure": failure}


def error_results(requests: Sequence[Request], message: str, failure: FailureCategory = "engine_crash") -> list[Result]:
    return [Result(id=r.id, text=None, finish_reason="error", error=message, failure=failure) for r in requests]


def context_overflow(request: Request, prompt_tokens: int, max_model_len: int) -> Result | None:
    """The per-item error for a request whose prompt plus budget does not fit the context window."""
    if prompt_tokens + request.sampling.max_tokens <= max_model_len:
        return None
    return Result(id=request.id, text=None, finish_reason="error", failure="context_overflow",
                  error=f"prompt of {prompt_tokens} tokens + max_tokens {request.sampling.max_tokens} "
                        f"exceeds max_model_len {max_model_len}")


def validate_json(instance: Any, schema: dict[str, Any]) -> None:
    """jsonschema.validate (raises its best-matching ValidationError), with the validator built once
    per schema: `validate` re-checks the schema against the meta-schema on every call, 30 ms per
    alignment schema, which dominated a run through a zero-cost backend (measured)."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator(json.dumps(schema, sort_keys=True)).iter_errors(instance))
    if error is not None:
        raise error


@lru_cache(maxsize=1024)
def _validator(schema: str) -> Any:
    import jsonschema

    parsed = json.loads(schema)
    base = jsonschema.validators.validator_for(parsed)
    base.check_schema(parsed)
    # JSON Schema counts 2.0 as an integer; the pydantic models that read outputs do not. Agreeing
    # with them here means a hosted answer with 2.0 is re-asked, not accepted and then failed.
    integers = base.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool))
    return jsonschema.validators.extend(base, type_checker=integers)(parsed)


def next_token_alternatives(pairs: Iterable[tuple[str, float]]) -> dict[str, float]:
    """A reading's answer from (token text, log-probability) pairs: most likely first, the log-probabilities of
    tokens with the same text (two spellings of one piece) summed."""
    top: dict[str, float] = {}
    for text, logprob in pairs:
        if text in top:
            high, low = max(top[text], logprob), min(top[text], logprob)
            logprob = high + math.log1p(math.exp(low - high))
        top[text] = float(logprob)
    return dict(sorted(top.items(), key=lambda kv: -kv[1]))
