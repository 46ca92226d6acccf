"""The OpenAI-compatible backend's own logic: the exact request body, retries with backoff, the
json_object fallback with one re-ask, per-item errors, the concurrency limit. The stub server here
exercises the HTTP paths; the real server (vllm serve on loopback) is in test_hosted_server.py."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from scaffold_local.backends import Message, Request, Sampling
from scaffold_local.backends.openai import OpenAIBackend
from scaffold_local.backends.openai_wire import OpenAIOptions, request_body
from scaffold_local.judging.config import ModelConfig

from .helpers import send_reply, serve

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}


def make_request(i: int = 0, schema=SCHEMA) -> Request:
    return Request(id=f"doc/sys/facts{i}", messages=(Message(role="system", content="Be brief."),
                                                     Message(role="user", content=f"Question {i}")),
                   json_schema=schema, sampling=Sampling(max_tokens=32, seed=7))


def test_request_body_with_json_schema():
    body = request_body(make_request(), "judge-7b", OpenAIOptions(base_url="http://x/v1"))
    assert body == {
        "model": "judge-7b",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Question 0"}],
        "max_tokens": 32, "temperature": 0.0, "top_p": 1.0, "seed": 7,
        "response_format": {"type": "json_schema", "json_schema": {"name": "facts0", "schema": SCHEMA, "strict": True}},
    }


def test_request_body_json_object_fallback_puts_the_schema_in_the_prompt():
    options = OpenAIOptions(base_url="http://x/v1", response_format="json_object", extra_body={"top_k": 1})
    body = request_body(make_request(), "judge-7b", options)
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][1]["content"] == "Question 0\n\nYour answer must be JSON that validates against this JSON schema:\n" + json.dumps(SCHEMA)
    assert body["top_k"] == 1


class Stub:
    """A loopback HTTP server whose replies a test scripts as a list of (status, content) pairs, or
    computes with a function of the request body that returns one. It keeps each request's body and
    headers."""

    def __init__(self, replies, hold_until_in_flight: int = 0):
        """`hold_until_in_flight`: each reply waits (up to 5 s) until that many requests are in
        flight, so a test sees concurrency happen without depending on timing."""
        self.replies = replies if callable(replies) else list(replies)
        self.bodies: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Condition()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub.lock:
                    stub.bodies.append(body)
                    stub.headers.append(dict(self.headers))
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                    if callable(stub.replies):
                        status, content = stub.replies(body)
                    else:
                        status, content = stub.replies.pop(0) if len(stub.replies) > 1 else stub.replies[0]
                    stub.lock.notify_all()
                    stub.lock.wait_for(lambda: stub.in_flight >= hold_until_in_flight, timeout=5)
                payload = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 3}}
                send_reply(self, status, "application/json",
                      json.dumps(payload if status == 200 else {"error": content or "busy"}).encode())
                with stub.lock:
                    stub.in_flight -= 1
                    stub.lock.notify_all()

        self.server, self.url = serve(Handler)

    def close(self):
        self.server.shutdown()


@pytest.fixture
def stub_factory():
    stubs = []

    def make(replies, hold_until_in_flight=0):
        stubs.append(Stub(replies, hold_until_in_flight))
        return stubs[-1]

    yield make
    for stub in stubs:
        stub.close()


def backend_for(url: str, **engine) -> OpenAIBackend:
    config = ModelConfig(name="t", backend="openai", model="judge-7b",
                         engine={"base_url": url, "backoff_s": 0.01, **engine})
    return OpenAIBackend(config)


def test_retries_429_and_5xx_with_backoff_then_succeeds(stub_factory):
    stub = stub_factory([(429, ""), (503, ""), (200, '{"ok": true}')])
    result = backend_for(stub.url).generate([make_request()])[0]
    assert (result.finish_reason, result.text, result.usage.prompt_tokens) == ("stop", '{"ok": true}', 10)
    assert len(stub.bodies) == 3


def test_gives_up_as_a_per_item_error(stub_factory):
    stub = stub_factory([(503, "")])
    results = backend_for(stub.url, max_retries=1).generate([make_request(0), make_request(1)])
    assert [r.finish_reason for r in results] == ["error", "error"]
    assert results[0].error.startswith("gave up after 2 attempts: _Retryable: HTTP 503")


def test_client_errors_are_not_retried(stub_factory):
    stub = stub_factory([(400, "")])
    result = backend_for(stub.url).generate([make_request()])[0]
    assert result.finish_reason == "error" and result.error.startswith("HTTP 400") and len(stub.bodies) == 1


@pytest.mark.parametrize("status, message, failure", [
    (400, "This model's maximum context length is 8192 tokens", "context_overflow"),
    (400, "response_format: unsupported schema", "invalid_request"),
    (422, "", "invalid_request"),
    (429, "", "rate_limit"),
    (503, "", "server_error"),
    (504, "", "timeout"),
    (404, "model not found", "server_error"),  # the server's set-up, not the request: worth another try
])
def test_http_failures_carry_their_class(stub_factory, status, message, failure):
    stub = stub_factory([(status, message)])
    result = backend_for(stub.url, max_retries=0).generate([make_request()])[0]
    assert result.finish_reason == "error" and result.failure == failure


def test_a_timeout_is_classed_as_such(stub_factory):
    stub = stub_factory([(200, '{"ok": true}')], hold_until_in_flight=2)  # a single request waits 5 s
    result = backend_for(stub.url, max_retries=0, timeout_s=0.5).generate([make_request()])[0]
    assert result.failure == "timeout" and "Timeout" in result.error


def test_unreachable_server_is_a_per_item_error():
    results = backend_for("http://127.0.0.1:9/v1", max_retries=0).generate([make_request(0), make_request(1)])
    assert [r.id for r in results] == ["doc/sys/facts0", "doc/sys/facts1"]
    assert all(r.finish_reason == "error" and "ConnectError" in r.error for r in results)


def test_json_object_fallback_reasks_once_with_the_validation_error(stub_factory):
    stub = stub_factory([(200, '{"ok": "yes"}'), (200, '{"ok": false}')])
    result = backend_for(stub.url, response_format="json_object").generate([make_request()])[0]
    assert result.text == '{"ok": false}' and len(stub.bodies) == 2
    reask = stub.bodies[1]["messages"]
    assert reask[-2] == {"role": "assistant", "content": '{"ok": "yes"}'}
    assert reask[-1]["content"].startswith("That answer is invalid: ok: 'yes' is not of type 'boolean'")
    assert result.usage.completion_tokens == 6  # both attempts are counted


def test_concurrency_limit_and_order_are_kept(stub_factory):
    stub = stub_factory([(200, '{"ok": true}')], hold_until_in_flight=2)
    requests = [make_request(i) for i in range(8)]
    results = backend_for(stub.url, concurrency=2).generate(requests)
    assert [r.id for r in results] == [r.id for r in requests]
    assert stub.max_in_flight == 2


def test_missing_api_key_variable_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with pytest.raises(Exception, match="environment variable NO_SUCH_KEY is not set"):
        backend_for("http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY")


def reading(i: int = 0) -> Request:
    return Request(id=f"doc/sys/facts/F{i}", messages=(Message(role="system", content="Be brief."),
                                                        Message(role="user", content="Is it true?"),
                                                        Message(role="assistant", content='{"inferred":')),
                   json_schema=None, sampling=Sampling(max_tokens=0, top_logprobs=20, seed=7))


def test_a_reading_asks_for_one_token_and_its_alternatives_continuing_the_answer():
    body = request_body(reading(), "judge-7b", OpenAIOptions(base_url="http://x/v1"))
    assert body == {
        "model": "judge-7b",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Is it true?"},
                     {"role": "assistant", "content": '{"inferred":'}],
        "max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": 20, "seed": 7,
        "continue_final_message": True, "add_generation_prompt": False,
    }


def test_a_reading_with_the_packages_tokens_is_a_completion_and_an_empty_answer_is_never_continued():
    """With the served model's tokenizer in the config, a reading sends the package's prompt tokens to /completions
    (the tokens every engine computes). Without it, a reading whose answer starts empty (a plain yes / no) leaves the
    empty message out and asks for the generation prompt: continuing an empty message would keep its closed turn."""
    from scaffold_local.backends.openai_wire import reading_body

    options = OpenAIOptions(base_url="http://x/v1")
    assert reading_body(reading(), "judge-7b", options, [5, 6, 7]) == {
        "model": "judge-7b", "prompt": [5, 6, 7], "max_tokens": 1, "temperature": 0.0, "logprobs": 20, "seed": 7}
    plain = reading().model_copy(update={"messages": (*reading().messages[:2], Message(role="assistant", content=""))})
    assert request_body(plain, "judge-7b", options) == {
        "model": "judge-7b", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Is it true?"}],
        "max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": 20, "seed": 7}


def test_a_server_without_log_probabilities_cannot_read_a_verdict(stub_factory):
    """A plain answer where a reading needs the alternatives: the run ends with why, not a fall-back."""
    from scaffold_local.errors import BackendError

    stub = stub_factory([(200, " true")])
    with pytest.raises(BackendError, match="answered a reading without log-probabilities") as raised:
        backend_for(stub.url).generate([reading(1), reading(2)])
    assert "logprobs" in raised.value.hint


def test_a_reading_returns_the_alternatives_at_the_first_position(stub_factory):
    class Alternatives(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            top = [{"token": " true", "logprob": -0.2}, {"token": " false", "logprob": -1.8}, {"token": "true", "logprob": -3.0}]
            payload = {"choices": [{"message": {"content": " true"}, "finish_reason": "length",
                                    "logprobs": {"content": [{"token": " true", "logprob": -0.2, "top_logprobs": top}]}}],
                       "usage": {"prompt_tokens": 30, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 16}}}
            send_reply(self, 200, "application/json", json.dumps(payload).encode())

    server, url = serve(Alternatives)
    try:
        result = backend_for(url).generate([reading()])[0]
    finally:
        server.shutdown()
    assert result.text == "" and result.finish_reason == "stop" and result.next_token == {" true": -0.2, " false": -1.8,
                                                                                          "true": -3.0}
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.cached_prompt_tokens) == (30, 0, 16)
