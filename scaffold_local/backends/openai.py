"""Any OpenAI-compatible chat-completions server: vLLM serve, llama.cpp server, TGI, a commercial API.

The only module that imports the HTTP client (httpx). Requests run concurrently up to a limit,
with timeouts and retries with exponential backoff on 429, 5xx, connection failures, timeouts and
bodies that are not JSON; a `Retry-After` header is honoured (up to MAX_RETRY_AFTER_S). Each
request's JSON schema goes out as `response_format={"type": "json_schema", ...}`. For servers
without schema support, `response_format = "json_object"` asks for plain JSON, puts the schema
in the prompt, validates the answer against the schema and re-asks once with the validation error.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import time
from collections.abc import Sequence
from datetime import UTC
from typing import Any, ClassVar, Literal

import jsonschema
from pydantic import Field

from ..records import FailureCategory
from .base import (
    BackendError,
    BaseBackend,
    EngineConfig,
    EngineOptions,
    Request,
    Result,
    TokenAlternatives,
    Usage,
    covering_text,
    finish_fields,
    next_token_alternatives,
    validate_json,
)
from .tokens import HuggingFaceChat, prompt_ids
from .weights import resolve_model_path

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
# A server's Retry-After is honoured up to this many seconds per retry (a larger one is taken as this).
MAX_RETRY_AFTER_S = 60.0


# How a server is asked to continue the last (assistant) message instead of starting a new answer: vLLM's
# chat-completions extension (llama.cpp's server continues a final assistant message by itself).
CONTINUE_FINAL_MESSAGE = {"continue_final_message": True, "add_generation_prompt": False}


def reading_body(request: Request, model: str, options: OpenAIOptions, prompt: list[int] | None = None) -> dict[str, Any]:
    """A reading's body: one greedy token and its `top_logprobs` alternatives, without a response format (the
    alternatives are the answer). With the package's prompt tokens (`prompt`, where the config names the served
    model's tokenizer), a completions body: the same tokens as every other engine. Without them, a chat body that
    the server renders: its generation prompt, then the start of the answer, continued (an empty start is left out,
    never continued: a template continuing an empty message leaves the closed turn in the prompt)."""
    seed = {"seed": request.sampling.seed} if request.sampling.seed is not None else {}
    if prompt is not None:
        return {"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0,
                "logprobs": request.sampling.top_logprobs, **seed, **options.extra_body}
    messages = [m.model_dump() for m in request.messages]
    continued = CONTINUE_FINAL_MESSAGE if request.continues_answer else {}
    if request.continues_answer and not request.messages[-1].content:
        messages, continued = messages[:-1], {}
    return {"model": model, "messages": messages, "max_tokens": 1, "temperature": 0.0, "logprobs": True,
            "top_logprobs": request.sampling.top_logprobs, **seed, **continued, **options.extra_body}


def request_body(request: Request, model: str, options: OpenAIOptions) -> dict[str, Any]:
    """Request -> chat-completions body (a pure translation, tested against an exact dict); a reading's is
    `reading_body`'s."""
    if request.sampling.reading:
        return reading_body(request, model, options)
    messages = [m.model_dump() for m in request.messages]
    continued = CONTINUE_FINAL_MESSAGE if request.continues_answer else {}
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": request.sampling.max_tokens,
        "temperature": request.sampling.temperature,
        "top_p": request.sampling.top_p,
        **continued,
    }
    if request.sampling.seed is not None:
        body["seed"] = request.sampling.seed
    if request.sampling.top_logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = request.sampling.top_logprobs
    if request.json_schema is not None:
        if options.response_format == "json_schema":
            name = request.id.rsplit("/", 1)[-1].replace(".", "_")[:64] or "output"
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": name, "schema": request.json_schema, "strict": True}}
        else:
            body["response_format"] = {"type": "json_object"}
            schema_note = ("Your answer must be JSON that validates against this JSON schema:\n"
                           + json.dumps(request.json_schema))
            body["messages"] = [*messages[:-1], {**messages[-1], "content": messages[-1]["content"] + "\n\n" + schema_note}]
    return {**body, **options.extra_body}


class _Retryable(Exception):
    def __init__(self, message: str, failure: FailureCategory, retry_after: float | None = None):
        super().__init__(message)
        self.failure = failure
        self.retry_after = retry_after  # seconds the server asked us to wait (Retry-After), if it said


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A Retry-After header (delay in seconds, or an HTTP date) as seconds to wait from now; None when
    absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # HTTP dates are GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _http_failure(status: int, text: str) -> FailureCategory:
    """The failure class of an HTTP error: the request's own fault (not worth sending again until
    it changes) or the server's (worth sending again later)."""
    if status in (400, 413, 422):
        mentions_length = any(w in text.lower() for w in ("context length", "maximum context", "too long", "max_model_len"))
        return "context_overflow" if mentions_length else "invalid_request"
    if status == 429:
        return "rate_limit"
    if status in (408, 504):
        return "timeout"
    return "server_error"  # 5xx, and 401/403/404: the server or its set-up, not this request


class OpenAIOptions(EngineOptions):
    throughput_only: ClassVar[frozenset[str]] = frozenset({
        "base_url", "api_key_env", "concurrency", "timeout_s", "connect_timeout_s", "max_retries", "backoff_s"})
    base_url: str = Field(description="e.g. http://127.0.0.1:8000/v1")
    api_key_env: str | None = Field(None, description="name of the environment variable holding the API key")
    concurrency: int = Field(8, ge=1)
    timeout_s: float = Field(300, gt=0, description="per request, reading included")
    connect_timeout_s: float = Field(10, gt=0)
    max_retries: int = Field(4, ge=0)
    backoff_s: float = Field(1.0, ge=0, description="first retry delay; doubles each retry, with jitter")
    response_format: Literal["json_schema", "json_object"] = "json_schema"
    extra_body: dict[str, Any] = Field(default_factory=dict, description="merged into every request body")
    tokenizer: str | None = Field(None, description=(
        "the served model's tokenizer and chat template: a local model folder or embedded:<name>; readings then "
        "send the package's prompt tokens to /completions, the tokens every other engine computes (without it, the "
        "server renders a reading's prompt from its messages)"))


class OpenAIBackend(BaseBackend):
    """Any OpenAI-compatible server (a served model is identified by its name, so moving a server to
    another address reuses its results). Its token counts are the server's: before sending, an estimate."""

    name = "openai"
    engine_options = OpenAIOptions
    install = "pip install httpx"

    def __init__(self, config: EngineConfig):
        super().__init__(config)
        try:
            import httpx
        except ImportError as exc:
            raise self.missing(exc) from None
        self._httpx = httpx
        headers = {"Content-Type": "application/json"}
        if self.options.api_key_env:
            key = os.environ.get(self.options.api_key_env)
            if not key:
                raise BackendError(f"environment variable {self.options.api_key_env} is not set", backend=self.name,
                                   hint="export it, or remove api_key_env for servers without authentication")
            headers["Authorization"] = f"Bearer {key}"
        self.headers = headers
        self.url = self.options.base_url.rstrip("/") + "/chat/completions"
        self.completions_url = self.options.base_url.rstrip("/") + "/completions"
        self.chat: HuggingFaceChat | None = None
        if self.options.tokenizer:
            try:
                from transformers import AutoTokenizer
            except ImportError as exc:
                raise self.missing(exc) from None
            folder = resolve_model_path(self.options.tokenizer)
            self.chat = HuggingFaceChat(AutoTokenizer.from_pretrained(str(folder), local_files_only=True))

    def prompt_ids(self, request: Request) -> list[int] | None:
        """A reading's prompt tokens as this backend sends them (`tokens.prompt_parts`), where it has the tokenizer."""
        return prompt_ids(self.chat, request) if self.chat is not None else None

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "openai",
            "base_url": self.options.base_url,
            "served_model": self.config.model,
            "structured_outputs": f"server/{self.options.response_format}",
            "readings": ("the package's prompt tokens, sent to /completions" if self.chat is not None else
                         "prompts rendered by the server's chat template (no tokenizer in the config)"),
            "settings": self.options.model_dump(exclude={"api_key_env"}),
        }

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        return asyncio.run(self._generate_all(requests))

    async def _generate_all(self, requests: Sequence[Request]) -> list[Result]:
        o = self.options
        timeout = self._httpx.Timeout(o.timeout_s, connect=o.connect_timeout_s)
        limits = self._httpx.Limits(max_connections=o.concurrency)
        semaphore = asyncio.Semaphore(o.concurrency)
        async with self._httpx.AsyncClient(timeout=timeout, limits=limits, headers=self.headers) as client:
            async def one(index: int, request: Request) -> Result:
                async with semaphore:
                    return self.finished(index, await self._complete(client, request))

            return list(await asyncio.gather(*(one(i, r) for i, r in enumerate(requests))))

    async def _complete(self, client: Any, request: Request) -> Result:
        started = time.perf_counter()
        reading = request.sampling.reading
        body = (reading_body(request, self.config.model, self.options, self.prompt_ids(request)) if reading else
                request_body(request, self.config.model, self.options))
        url = self.completions_url if reading and self.chat is not None else self.url
        try:
            result = await self._post(client, request, body, url=url)
            if self.options.response_format == "json_object" and request.json_schema and result.finish_reason == "stop":
                problem = _schema_problem(result.text, request.json_schema)
                if problem:  # one re-ask, with the validation error
                    reask = {**body, "messages": [*body["messages"], {"role": "assistant", "content": result.text or ""},
                                                  {"role": "user", "content": f"That answer is invalid: {problem}. "
                                                   "Answer again with JSON only, valid against the schema."}]}
                    result = await self._post(client, request, reask, earlier=result.usage)
        except BackendError:  # the server cannot do what the method needs: no request would fare better
            raise
        except Exception as exc:  # per-item error (e.g. a malformed response body): the batch goes on
            result = Result(id=request.id, text=None, finish_reason="error", error=f"{type(exc).__name__}: {exc}",
                            failure="server_error")
        return result.model_copy(update={"latency_s": round(time.perf_counter() - started, 3)})

    async def _post(self, client: Any, request: Request, body: dict[str, Any], earlier: Usage | None = None,
                    url: str | None = None) -> Result:
        o = self.options
        for attempt in range(o.max_retries + 1):
            try:
                response = await client.post(url or self.url, json=body)
                if response.status_code in RETRY_STATUS:
                    raise _Retryable(f"HTTP {response.status_code}: {response.text[:200]}",
                                     _http_failure(response.status_code, response.text),
                                     retry_after_seconds(response.headers.get("Retry-After")))
                if response.status_code >= 400:
                    return Result(id=request.id, text=None, finish_reason="error",
                                  error=f"HTTP {response.status_code}: {response.text[:500]}",
                                  failure=_http_failure(response.status_code, response.text))
                try:
                    payload = response.json()
                except ValueError as exc:  # a body cut or garbled on the way (a proxy, a server restarting): ask again
                    raise _Retryable(f"HTTP {response.status_code} with a body that is not JSON ({exc}): "
                                     f"{response.text[:200]!r}", "server_error") from None
                if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list) or not payload["choices"]:
                    raise _Retryable(f"HTTP {response.status_code} answer without choices: {response.text[:200]!r}",
                                     "server_error")
                if request.sampling.reading:
                    return _parse_reading(request.id, payload, self.options.base_url)
                return _parse_response(request.id, payload, earlier)
            except (_Retryable, self._httpx.TransportError) as exc:
                failure = exc.failure if isinstance(exc, _Retryable) else (
                    "timeout" if isinstance(exc, self._httpx.TimeoutException) else "server_error")
                if attempt == o.max_retries:
                    return Result(id=request.id, text=None, finish_reason="error", failure=failure,
                                  error=f"gave up after {o.max_retries + 1} attempts: {type(exc).__name__}: {exc}")
                self.retries[failure] += 1
                delay = o.backoff_s * 2**attempt * (1 + random.random() / 4)
                retry_after = exc.retry_after if isinstance(exc, _Retryable) else None
                if retry_after is not None:  # the server said when: never sooner (capped: a bad header cannot stall a run)
                    delay = max(delay, min(retry_after, MAX_RETRY_AFTER_S))
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")


def _parse_response(request_id: str, payload: dict[str, Any], earlier: Usage | None) -> Result:
    choice = payload["choices"][0]
    usage = payload.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    tokens = Usage(
        prompt_tokens=usage.get("prompt_tokens", 0) + (earlier.prompt_tokens if earlier else 0),
        completion_tokens=usage.get("completion_tokens", 0) + (earlier.completion_tokens if earlier else 0),
        cached_prompt_tokens=cached,
    )
    content = (choice.get("logprobs") or {}).get("content")
    alternatives = [
        TokenAlternatives(text=t["token"], top={**{a["token"]: a["logprob"] for a in t.get("top_logprobs") or []},
                                                t["token"]: t["logprob"]})
        for t in content
    ] if content else None
    text = choice["message"].get("content")
    if alternatives and text is not None:
        alternatives = covering_text(alternatives, text)
    return Result(id=request_id, text=text, usage=tokens, logprobs=alternatives,
                  **finish_fields(choice.get("finish_reason")))


def _parse_reading(request_id: str, payload: dict[str, Any], server: str) -> Result:
    """A reading's answer: the alternatives at the first position (a chat completion's `top_logprobs` list, or a
    completion's token -> log-probability map). A server that gives none cannot read a verdict, and no other
    answer would do: the run ends with why."""
    logprobs = payload["choices"][0].get("logprobs") or {}
    if "content" in logprobs:  # chat completions
        content = logprobs.get("content") or []
        listed = content[0].get("top_logprobs") if content else None
        alternatives = [(a["token"], a["logprob"]) for a in listed or []]
    else:  # completions
        first = (logprobs.get("top_logprobs") or [None])[0] or {}
        alternatives = list(first.items())
    if not alternatives:
        raise BackendError(f"the server at {server} answered a reading without log-probabilities: its verdicts "
                           "cannot be read from its distribution", backend=OpenAIBackend.name,
                           hint="serve the judge with vLLM (`scaffold-local serve`) or llama.cpp's server, which "
                                "return `logprobs`/`top_logprobs`, or use a method version that writes its verdicts")
    top = next_token_alternatives(alternatives)
    usage = payload.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    return Result(id=request_id, text="", finish_reason="stop", next_token=top,
                  usage=Usage(prompt_tokens=usage.get("prompt_tokens", 0), completion_tokens=0,
                              cached_prompt_tokens=cached))


def _schema_problem(text: str | None, schema: dict[str, Any]) -> str | None:
    try:
        validate_json(json.loads(text or ""), schema)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg})"
    except jsonschema.ValidationError as exc:
        return f"{'/'.join(map(str, exc.absolute_path)) or 'root'}: {exc.message[:200]}"
    return None
