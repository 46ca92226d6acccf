"""What goes over the wire to an OpenAI-compatible server: a backend's `[engine]` table (OpenAIOptions), the request
bodies (a generation's and a reading's, pure translations of a Request), and the answers read back into results."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

import jsonschema
from pydantic import Field

from .base import BackendError, EngineOptions, finish_fields, next_token_alternatives, validate_json
from .protocol import Request, Result, TokenAlternatives, Usage, covering_text

# How a server is asked to continue the last (assistant) message instead of starting a new answer: vLLM's
# chat-completions extension (llama.cpp's server continues a final assistant message by itself).
CONTINUE_FINAL_MESSAGE = {"continue_final_message": True, "add_generation_prompt": False}


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


def parse_response(request_id: str, payload: dict[str, Any], earlier: Usage | None) -> Result:
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


def parse_reading(request_id: str, payload: dict[str, Any], server: str) -> Result:
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
                           "cannot be read from its distribution", backend="openai",
                           hint="serve the judge with vLLM (`scaffold-local serve`) or llama.cpp's server, which "
                                "return `logprobs`/`top_logprobs`, or use a method version that writes its verdicts")
    top = next_token_alternatives(alternatives)
    usage = payload.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    return Result(id=request_id, text="", finish_reason="stop", next_token=top,
                  usage=Usage(prompt_tokens=usage.get("prompt_tokens", 0), completion_tokens=0,
                              cached_prompt_tokens=cached))


def schema_problem(text: str | None, schema: dict[str, Any]) -> str | None:
    try:
        validate_json(json.loads(text or ""), schema)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg})"
    except jsonschema.ValidationError as exc:
        return f"{'/'.join(map(str, exc.absolute_path)) or 'root'}: {exc.message[:200]}"
    return None
