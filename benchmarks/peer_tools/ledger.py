"""A counting proxy in front of one OpenAI-compatible judge server.

Each tool is pointed at its own path, `http://127.0.0.1:<port>/<tool>/v1`, which the proxy forwards
to the server's `/v1` unchanged; per tool it counts calls, the prompt tokens (and of them those its
prefix cache served) and completion tokens the server reports (`usage`), seconds spent waiting, the
request shapes the tool sends (structured outputs or not) and every failed call by kind ("http 400",
"timeout", "connection"). The tools' own accounting is never trusted: every peer is counted here, the
same way.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


@dataclass
class Tally:
    calls: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0  # of prompt_tokens, those the server's prefix cache served (where it says)
    completion_tokens: int = 0
    seconds: float = 0.0  # summed over calls (calls may overlap)
    failures: Counter[str] = field(default_factory=Counter)
    shapes: Counter[str] = field(default_factory=Counter)  # "json_schema", "json_object", "tools", "plain"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "failures": dict(self.failures), "shapes": dict(self.shapes)}


def request_shape(body: dict[str, Any]) -> str:
    """How a call asks for its output: a JSON schema, any JSON object, a function call, or free text."""
    if body.get("tools") or body.get("functions"):
        return "tools"
    kind = (body.get("response_format") or {}).get("type")
    if kind in ("json_schema", "json_object"):
        return kind
    if body.get("guided_json") or body.get("structured_outputs"):
        return "json_schema"
    return "plain"


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # tools send many requests at once
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A tool that closed its connection (a client ending with idle keep-alive connections, or giving
        up on a call) is no error of the proxy's: no traceback in the benchmark's output."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class CountingProxy:
    def __init__(self, upstream: str, timeout_s: float = 3600.0):
        self.upstream = upstream.rstrip("/")  # the server's base URL, ending in /v1
        self.tallies: dict[str, Tally] = {}
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=10.0))
        self._server = _Server(("127.0.0.1", 0), self._handler())

    def start(self) -> CountingProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def __enter__(self) -> CountingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def url(self, tool: str) -> str:
        """The base URL a tool is given (OpenAI style, ending in /v1)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/{tool}/v1"

    def tally(self, tool: str) -> Tally:
        with self._lock:
            return self.tallies.setdefault(tool, Tally())

    def _count(self, tool: str, body: dict[str, Any], seconds: float, status: int | None, reply: Any,
               failure: str | None) -> None:
        usage = (reply or {}).get("usage") or {} if isinstance(reply, dict) else {}
        with self._lock:
            tally = self.tallies.setdefault(tool, Tally())
            tally.calls += 1
            tally.seconds += seconds
            tally.shapes[request_shape(body)] += 1
            tally.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            tally.completion_tokens += int(usage.get("completion_tokens") or 0)
            tally.cached_prompt_tokens += int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
            if failure is None and status is not None and status >= 400:
                failure = f"http {status}"
            if failure is not None:
                tally.failures[failure] += 1

    def _forward(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        _, tool, rest = handler.path.split("/", 2) if handler.path.count("/") >= 2 else ("", "", "")
        if not rest.startswith("v1/"):
            handler.send_error(404, "expected /<tool>/v1/...")
            return
        data = handler.rfile.read(int(handler.headers.get("Content-Length") or 0)) if method == "POST" else b""
        headers = {k: v for k, v in handler.headers.items() if k.lower() in ("content-type", "authorization")}
        started = time.perf_counter()
        status, payload, failure = 502, b"", None
        content_type = "application/json"
        try:
            reply = self._client.request(method, f"{self.upstream}/{rest[3:]}", content=data, headers=headers)
            status, payload = reply.status_code, reply.content
            content_type = reply.headers.get("content-type", content_type)
        except httpx.TimeoutException:
            failure = "timeout"
        except httpx.HTTPError as exc:
            failure = f"connection: {type(exc).__name__}"
        if method == "POST":
            try:
                body, answer = json.loads(data or b"{}"), json.loads(payload) if payload else None
            except json.JSONDecodeError:
                body, answer = {}, None
            self._count(tool, body, time.perf_counter() - started, None if failure else status, answer, failure)
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                proxy._forward(self, "POST")

            def do_GET(self) -> None:  # noqa: N802
                proxy._forward(self, "GET")

            def log_message(self, *args: Any) -> None:  # quiet: the tally is the record
                pass

        return Handler
