"""The records every layer shares: chat messages, one record per judge request (with the class of
its failure), and the versioned run spec.

It depends on pydantic alone, so the store, the request planner, the prompts and the backends all
import it instead of importing each other.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str


# ---------------------------------------------------------------- failures

FailureCategory = Literal[
    "context_overflow",  # prompt + budget longer than the judge's context: fails again until the config changes
    "invalid_request",  # the server or engine refused the request itself (HTTP 400, a grammar it cannot compile)
    "rate_limit",  # HTTP 429 after every retry
    "server_error",  # HTTP 5xx or an unreachable server, after every retry
    "timeout",  # no answer within the time limit, after every retry
    "engine_crash",  # the engine raised or aborted the request
    "truncated",  # the output hit max_tokens, also after one retry with a larger budget
    "validation",  # complete output that is not valid for its schema or breaks an id rule (maybe for some items only)
    "low_answer_mass",  # a reading where the judge put too little of its next-token probability on the answers
]
FAILURE_CATEGORIES: tuple[str, ...] = FailureCategory.__args__  # type: ignore[attr-defined]
# Worth sending again on the next run; the others would fail the same way until the request (and
# so its cache key: judge config, messages, schema, sampling) changes.
RETRYABLE_FAILURES = frozenset({"rate_limit", "server_error", "timeout", "engine_crash"})


class Record(BaseModel):
    """Everything about one request and its output: the unit of caching, resume and audit."""

    request_id: str
    cache_key: str
    task: str
    prompt: str  # template ref, e.g. "align_facts.v2"
    schema_sha256: str | None
    doc_id: str
    system: str | None = None
    text: str | None
    finish_reason: str
    usage: dict[str, Any] | None = None
    latency_s: float | None = None
    error: str | None = None  # what the engine or server said
    parsed: dict[str, Any] | None = None  # with failed_items: the valid verdicts only
    validation_error: str | None = None  # output that failed validation: kept, never counted
    # Item id -> why its verdict failed, where the rest of the output is valid: that item alone is not
    # counted (failure "validation"); the other verdicts are in `parsed` and count.
    failed_items: dict[str, str] | None = None
    failure: FailureCategory | None = None
    max_tokens: int | None = None  # the budget of the attempt recorded
    attempts: int = 1  # 2 when a truncated output was retried with a larger budget
    # P(kept) of each fact / question verdict, from the engine's token probabilities, when asked for
    confidence: dict[str, float] | None = None
    # A reading's raw answer (method version 7): the judge's likeliest next tokens where its answer gives a
    # value (token -> log-probability), from which `parsed` and `confidence` are read. Left out of a record
    # without one, so records of earlier versions are written byte for byte as before.
    next_token: dict[str, float] | None = Field(None, exclude_if=lambda value: value is None)
    # An exact reading's (method version 15 on) probability of all answers together, and the answers a top-k engine
    # left out of its alternatives, charged its lowest listed probability. Left out where not read.
    answer_mass: float | None = Field(None, exclude_if=lambda value: value is None)
    bounded: list[str] | None = Field(None, exclude_if=lambda value: value is None)

    @property
    def retryable(self) -> bool:
        """Send again on the next run? Records from before failure classes: engine errors were."""
        if self.failure is None:
            return self.finish_reason == "error"
        return self.failure in RETRYABLE_FAILURES


class StageUsage(BaseModel):
    """Tokens, prefix-cache hits, finish reasons and failures by class over one stage's records (extraction
    or judgments); `retries`: the attempts the backend sent again, by class."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int | None = None  # None: the engine does not report its prefix cache
    prefix_cache_hit_rate: float | None = None
    finish_reasons: dict[str, int] = Field(default_factory=dict)
    validation_failures: int = 0
    partly_valid: int = 0  # outputs valid but for some items: those items are not counted, the others are
    items_failed_alone: int = 0
    failures: dict[str, int] = Field(default_factory=dict)
    truncation_retries: int = 0
    retries: dict[str, int] = Field(default_factory=dict)

    @property
    def computed_prompt_tokens(self) -> int:
        """Prompt tokens the engine computed (not served from its prefix cache)."""
        return self.prompt_tokens - (self.cached_prompt_tokens or 0)


class RunUsage(BaseModel):
    """A run's usage.json: each stage's usage, and the engine's seconds of this run folder's invocations."""

    extraction: StageUsage = Field(default_factory=StageUsage)
    judgments: StageUsage = Field(default_factory=StageUsage)
    engine_seconds: float | None = None


def usage_stats(records: Sequence[Record]) -> StageUsage:
    """One stage's usage over its records."""
    prompt = sum((r.usage or {}).get("prompt_tokens", 0) for r in records)
    cached_values = [(r.usage or {}).get("cached_prompt_tokens") for r in records]
    cached = sum(v for v in cached_values if v is not None) if any(v is not None for v in cached_values) else None
    return StageUsage(
        requests=len(records),
        prompt_tokens=prompt,
        completion_tokens=sum((r.usage or {}).get("completion_tokens", 0) for r in records),
        cached_prompt_tokens=cached,
        prefix_cache_hit_rate=round(cached / prompt, 4) if cached is not None and prompt else None,
        finish_reasons=dict(Counter(r.finish_reason for r in records)),
        validation_failures=sum(r.validation_error is not None for r in records),
        partly_valid=sum(bool(r.failed_items) for r in records),
        items_failed_alone=sum(len(r.failed_items or {}) for r in records),
        failures=dict(Counter(r.failure for r in records if r.failure)),
        truncation_retries=sum(r.attempts > 1 for r in records),
    )


# ---------------------------------------------------------------- the run spec

THRESHOLD_NAMES = {"entities": "attributes", "faithfulness": "sentences"}


def describe_decision(thresholds: Mapping[str, float], reads_verdicts: bool = False,
                      prior_free: Sequence[str] = ()) -> str:
    """How verdicts are decided: the judge's word, or P(kept) against the thresholds calibrated per kind of
    judgment (one for facts and questions alike is said once); a version that reads its verdicts without
    thresholds keeps what the judge finds likelier, or (`prior_free` kinds) what the summary makes at least three
    times likelier than the item's prior."""
    if not thresholds and prior_free:
        return (f"verdicts: {', '.join(prior_free)} where the summary triples the odds over the item's prior "
                "(q >= 0.75), the rest P(kept) >= 0.5 (uncalibrated)")
    if not thresholds:
        return "verdicts: P(kept) >= 0.5 (uncalibrated)" if reads_verdicts else "verdicts: the judge's word"
    if set(thresholds) == {"facts", "questions"} and len(set(thresholds.values())) == 1:
        return f"verdicts: P(kept) >= {thresholds['facts']:g} (calibrated)"
    return "verdicts: P(kept) >= " + ", ".join(f"{THRESHOLD_NAMES.get(k, k)} {v:g}" for k, v in thresholds.items()) + \
        " (calibrated)"


RUN_FORMAT_VERSION = 2
RUN_IDENTITY = ("input", "judge_fingerprint", "prompts", "schemas", "scaffold_source", "weighted_verdicts",
                "decision_threshold", "thresholds")
# partial: finished, with failed items, summaries not judged or input records skipped (failures.jsonl lists them)
RunStatus = Literal["running", "complete", "partial", "interrupted", "unknown"]


class ScaffoldSource(BaseModel):
    """Where a run's scaffolds come from: extracted by the run's own judge, taken from another
    judge's stored scaffolds or from a finished run, or given by the user in a file."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["extracted", "judge", "run", "file"] = "extracted"
    reference: str | None = None  # judge config name, run folder or scaffold file, as given
    fingerprint: str | None = None  # the other judge's fingerprint, or the file's SHA-256
    default_label: str | None = None  # file: the label of items given without one
    # file: who extracted the scaffolds it holds, as its lines say (`extract --out`); None for scaffolds people wrote
    extracted_by: str | None = Field(None, exclude_if=lambda value: value is None)

    def describe(self) -> str:
        if self.kind == "file" and self.extracted_by:
            return f"extracted once by {self.extracted_by}, read from {self.reference}"
        return {"extracted": "extracted by this run's judge", "judge": f"stored scaffolds of judge {self.reference}",
                "run": f"the scaffolds of run {self.reference}", "file": f"user scaffolds from {self.reference}"}[self.kind]


class RunSpec(BaseModel):
    """What a run is, written to spec.json. Later versions add fields; unknown ones are kept, and a
    file without `format_version` is format 1 (written before this model existed)."""

    model_config = ConfigDict(extra="allow")

    format_version: int = 1
    status: RunStatus = "unknown"
    run_id: str | None = None
    input: dict[str, Any]
    judge: dict[str, Any]
    judge_fingerprint: str
    method: dict[str, Any] | None = None
    prompts: dict[str, Any]
    schemas: dict[str, Any]
    scaffold_source: ScaffoldSource = ScaffoldSource()
    weighted_verdicts: bool = False  # facts and questions counted by the probability of their verdicts
    decision_threshold: float | None = None  # versions 3-6: a fact or question kept when P(kept) >= it (calibrated)
    thresholds: dict[str, float] = Field(default_factory=dict)  # version 7 on: the calibrated threshold of each kind
    scaffold_keys: dict[str, str] = Field(default_factory=dict)  # doc_id -> scaffold key
    # Words a summary may have (`score --word-budget`): how its outputs are read, not what was judged,
    # so not part of the run's identity; the last run of the folder sets it.
    word_budget: int | None = None
    engines: list[dict[str, Any]] = Field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None
    command: list[str] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    versions: dict[str, str | None] = Field(default_factory=dict)
    platform: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _format_1(cls, data: Any) -> Any:
        if isinstance(data, dict) and "run_id" not in data and "default_run_id" in data:
            data = {**data, "run_id": data["default_run_id"]}
        return data

    def identity(self) -> dict[str, Any]:
        """What makes two specs the same run (resume) or different runs (refused). Defaults added
        later (scaffold source, weighted verdicts, decision threshold) are left out, so earlier runs
        keep their ids."""
        identity = {key: _plain(getattr(self, key)) for key in RUN_IDENTITY}
        if self.scaffold_source == ScaffoldSource():
            del identity["scaffold_source"]
        if not self.weighted_verdicts:
            del identity["weighted_verdicts"]
        if self.decision_threshold is None:
            del identity["decision_threshold"]
        if not self.thresholds:
            del identity["thresholds"]
        return identity

    def decided_by(self) -> dict[str, float]:
        """The thresholds its verdicts were decided by, by kind (versions 3-6, 9, 10: facts and questions alike)."""
        if self.decision_threshold is not None:  # and a version that reads some kinds: theirs (version 10)
            return {"facts": self.decision_threshold, "questions": self.decision_threshold, **self.thresholds}
        return dict(self.thresholds)

    @property
    def reads_verdicts(self) -> bool:
        return bool((self.method or {}).get("reads_verdicts"))

    @property
    def prior_free_kinds(self) -> tuple[str, ...]:
        return tuple((self.method or {}).get("prior_free_kinds") or ())

    def identity_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()

    @property
    def method_version(self) -> int:
        """The method version that made the run; runs from before it was recorded were version 1."""
        return int((self.method or {}).get("number") or self.schemas.get("version", 1))


def _plain(value: Any) -> Any:
    return value.model_dump() if isinstance(value, BaseModel) else value
