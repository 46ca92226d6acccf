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
import os
import random
import time
from collections.abc import Sequence
from datetime import UTC
from typing import Any

from ..records import FailureCategory
from .base import BackendError, BaseBackend
from .openai_wire import OpenAIOptions, parse_reading, parse_response, reading_body, request_body, schema_problem
from .protocol import EngineConfig, Request, Result, Usage
from .tokens import HuggingFaceChat, prompt_ids
from .weights import resolve_model_path

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
# A server's Retry-After is honoured up to this many seconds per retry (a larger one is taken as this).
MAX_RETRY_AFTER_S = 60.0


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
                problem = schema_problem(result.text, request.json_schema)
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
                    return parse_reading(request.id, payload, self.options.base_url)
                return parse_response(request.id, payload, earlier)
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


