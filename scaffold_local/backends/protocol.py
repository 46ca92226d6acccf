"""The batch-first backend protocol every engine implements: what a request holds, what a result holds, what an
engine is (`Backend`) and what it reads of a judge's config (`EngineConfig`).

A backend takes the whole list of requests and returns one result per request, in order. One
failing request never fails the batch: it comes back with finish_reason "error" and its message.

A request whose last message is the assistant's is continued: its content is the start of the
answer, written after the chat template's generation prompt. A *reading* (`max_tokens` 0) generates
nothing: the engine computes the prompt and returns the `top_logprobs` most likely next tokens at
its end (`Result.next_token`), so a verdict is read from the judge's distribution where it would
decide, at the cost of the prompt alone.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..records import FailureCategory, Message
from .answers import AnswerSpace


class Sampling(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    # Required: engines' own defaults (vLLM: 16) silently truncate. 0: a reading (the module's docstring).
    max_tokens: int = Field(ge=0)
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0
    # Ask the engine for each generated token's top alternatives and their log-probabilities (the
    # judge's confidence in its verdicts). Part of the cache key only when asked for, so the keys of
    # requests made without it never change.
    top_logprobs: int = Field(0, ge=0, le=20)

    @model_validator(mode="after")
    def _a_reading_returns_alternatives(self) -> Sampling:
        if self.max_tokens == 0 and not self.top_logprobs:
            raise ValueError("a reading (max_tokens 0) needs top_logprobs: the next tokens it returns")
        return self

    @property
    def reading(self) -> bool:
        return self.max_tokens == 0

    def key_fields(self) -> dict[str, Any]:
        return self.model_dump(exclude={"top_logprobs"} if not self.top_logprobs else set())


class Request(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str  # echoed back, e.g. "doc-3/system-b/facts"
    # Requests of one source document (one scaffold) share long prompt prefixes: a backend with
    # several engines keeps a group on one engine so that its prefix cache serves them all.
    prefix_group: str = ""
    messages: tuple[Message, ...]  # the backend applies the chat template
    json_schema: dict[str, Any] | None
    sampling: Sampling
    # Structured inputs the prompt was rendered from. Engines ignore it; test doubles answer from
    # it and traces keep it. It is not part of the cache key: the messages already determine it.
    context: dict[str, Any] = Field(default_factory=dict)
    # Where the parts of the prompt that other requests share end: (message index, character offset)
    # at which each later part starts. An engine that computes a prompt part by part (llama.cpp)
    # computes each part on its own, so a request's numbers depend on its own prompt only, never on
    # which requests share a batch. Part of the cache key where given: the parts shape the numbers.
    parts: tuple[tuple[int, int], ...] = ()
    # A reading's answer space, where the engine is to add every token of an answer to the alternatives it returns
    # (an engine with the whole next-token distribution does; `Result.answers_complete` says whether it did). Part
    # of the cache key where given.
    answers: AnswerSpace | None = None
    # The group of readings computed with this one (a digest of the members' cache keys): an engine that computes prompts
    # part by part decodes a group side by side, in passes that the group alone fixes, so the numbers depend on the
    # group, never on what else shares the call. Part of the cache key where given.
    together: str = ""

    @property
    def continues_answer(self) -> bool:
        """The last message is the start of the assistant's answer, which the engine continues."""
        return bool(self.messages) and self.messages[-1].role == "assistant"

    def cache_key(self, judge_fingerprint: str, schema_text: str | None = None) -> str:
        """What determines the output: judge, messages, schema, sampling (and the prompt's parts, where
        given). Ids, groups and context do not.
        `schema_text`: json.dumps(json_schema, sort_keys=True) where the caller keeps it per schema
        (the same key; dumping a large schema per request was a tenth of a rerun's time)."""
        payload = {
            "judge": judge_fingerprint,
            "messages": [m.model_dump() for m in self.messages],
            "sampling": self.sampling.key_fields(),
            **({"parts": self.parts} if self.parts else {}),
            **({"answers": self.answers.model_dump()} if self.answers is not None else {}),
            **({"together": self.together} if self.together else {}),
        }
        text = json.dumps(payload, sort_keys=True)
        schema = schema_text if schema_text is not None else json.dumps(self.json_schema, sort_keys=True)
        # "schema" sorts last: this is json.dumps of the whole payload with sort_keys, byte for byte.
        return hashlib.sha256(f'{text[:-1]}, "schema": {schema}}}'.encode()).hexdigest()


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int | None = None


FinishReason = Literal["stop", "length", "error"]


class TokenAlternatives(BaseModel):
    """One generated token: its text and the log-probability of its top alternatives, the chosen
    token among them (transformers and llama.cpp: the model's own, before the grammar's mask; vLLM
    and servers built on it: after it, so tokens the grammar forbids are at -inf or missing; other
    servers: as they compute them). confidence.py reads P(kept) from either alike."""

    text: str
    top: dict[str, float]


def covering_text(alternatives: list[TokenAlternatives], text: str) -> list[TokenAlternatives]:
    """The tokens that make up ``text``: engines also report the end-of-sequence token they stopped on."""
    out, length = [], 0
    for token in alternatives:
        if length >= len(text):
            break
        out.append(token)
        length += len(token.text)
    return out


class Result(BaseModel):
    id: str
    text: str | None
    finish_reason: FinishReason
    usage: Usage | None = None
    error: str | None = None
    failure: FailureCategory | None = None  # with finish_reason "error": what kind of failure, for retry decisions
    logprobs: list[TokenAlternatives] | None = None  # when the request asked for top_logprobs and the engine gives them
    # A reading's result: the most likely next tokens at the end of the prompt (token text -> log-probability,
    # the model's own distribution; tokens with the same text summed), nothing generated.
    next_token: dict[str, float] | None = None
    # The reading's alternatives hold every token of each answer of the request's `answers` (not only the likeliest).
    answers_complete: bool = False
    latency_s: float | None = None


class EngineConfig(Protocol):
    """What a backend reads of a judge's config (`config.ModelConfig` is one): the backends sit below
    the config module, which finds them through their registry."""

    @property
    def name(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def structured_outputs(self) -> str: ...
    @property
    def whitespace(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def max_model_len(self) -> int: ...
    @property
    def engine(self) -> dict[str, Any]: ...

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Self: ...


# (requests of the call finished, requests in the call, tokens decoded so far, at most)
StepCallback = Callable[[int, int, int, int], None]
# (index of the request in the call, its result): called as each request finishes, before the call returns
ResultCallback = Callable[[int, Result], None]


@runtime_checkable
class Backend(Protocol):
    """What the pipeline needs of an engine: batch-first generation, provenance, closing, and the
    optional features every backend declares (`BaseBackend` gives them all)."""

    @property
    def name(self) -> str: ...

    @property
    def reports_steps(self) -> bool:  # sets `on_step` progress inside a long call
        ...

    on_step: StepCallback | None
    # Set by the dispatcher: an engine that finishes requests one after another within a call reports each as
    # it finishes (so it is stored before the call returns: a kill loses only the requests in flight).
    on_result: ResultCallback | None
    retries: Counter[str]  # attempts sent again within a call, by the failed one's failure class

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        """One result per request, same order, ids echoed; per-item errors, never a failed batch."""
        ...

    def describe(self) -> dict[str, Any]:
        """Provenance: engine, versions, structured-output backend, settings that shape outputs."""
        ...

    def close(self) -> None: ...
