"""A fault-injecting OpenAI-compatible chat-completions server on loopback, for the hosted backend.

It answers each request as the responder test double would (`ResponderAnswers`: the test first runs
the pipeline in-process on the responder, which fills a side table from each request's messages and
schema to the request itself, context included; the server looks every HTTP body up there) and, at
seeded random or by a script, answers with a fault instead:

    rate_limit   429 with a Retry-After header
    http_500     500
    http_503     503
    slow         the right answer, sent after `slow_s` (past the client's timeout)
    drop         status and headers, half the body, then the connection closed
    malformed    200 with a body that is not JSON (cut, an HTML error page, empty)

and `outage_at`: at each of these arrivals the server dies (listening socket closed, requests in
flight cut) and comes back on the same port `outage_s` later. Every arrival is logged with its time, the key of
its body and the fault it got; answers delivered whole and at once are counted per key.
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from scaffold_local.backends.protocol import Request, Result
from scaffold_local.backends.responder import ResponderBackend
from scaffold_local.judging.config import ModelConfig

from .helpers import RESPONDER_CONFIG

FAULTS = ("rate_limit", "http_500", "http_503", "slow", "drop", "malformed")
MALFORMED_BODIES = (b'{"choices": [{"message": {"content": "{\\"F1\\": {\\"justif', b"<html>502 Bad Gateway</html>", b"")


def body_key(messages: Sequence[dict[str, Any]], schema: dict[str, Any] | None) -> str:
    """What identifies a request on the wire: its messages and its schema."""
    return hashlib.sha256(json.dumps({"messages": list(messages), "schema": schema}, sort_keys=True).encode()).hexdigest()


def request_key(request: Request) -> str:
    return body_key([m.model_dump() for m in request.messages], request.json_schema)


class RecordingResponder(ResponderBackend):
    """The responder, keeping every request it answers, and its answer, in `table` (by `request_key`)."""

    def __init__(self, table: dict[str, tuple[Request, Result]], config: ModelConfig):
        super().__init__(config.model_copy(update={"backend": "responder", "engine": {}}))  # whatever judge it stands for
        self.table = table

    def generate(self, requests):
        results = super().generate(requests)
        for request, result in zip(requests, results):
            self.table[request_key(request)] = (request, result)
        return results


class ResponderAnswers:
    """Chat-completions payloads of the responder's answers to the requests in `table` (kept from the
    in-process run, so the server spends no time computing; recomputed for another token budget)."""

    def __init__(self, table: dict[str, tuple[Request, Result]]):
        self.table = table
        self.responder = ResponderBackend(ModelConfig.load(str(RESPONDER_CONFIG)))

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        request, result = self.table[body_key(body["messages"], schema)]  # KeyError: a request never planned
        if body["max_tokens"] != request.sampling.max_tokens:
            sampling = request.sampling.model_copy(update={"max_tokens": body["max_tokens"]})
            result = self.responder.generate([request.model_copy(update={"sampling": sampling})])[0]
        usage = result.usage.model_dump() if result.usage else {}
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": result.text},
                             "finish_reason": result.finish_reason}],
                "usage": {"prompt_tokens": usage.get("prompt_tokens", 0),
                          "completion_tokens": usage.get("completion_tokens", 0)}}


class FaultServer:
    def __init__(self, answer: Callable[[dict[str, Any]], dict[str, Any]], *, rates: dict[str, float] | None = None,
                 seed: int = 0, script: Sequence[str | None] = (), retry_after: str = "1", slow_s: float = 2.0,
                 outage_at: Sequence[int] = (), outage_s: float = 1.0):
        assert set(rates or {}) <= set(FAULTS) and set(script) <= {*FAULTS, None}
        self.answer = answer
        self.rates = dict(rates or {})
        self.rng = random.Random(seed)
        self.script = list(script)
        self.retry_after = retry_after
        self.slow_s = slow_s
        self.outage_at, self.outage_s = set(outage_at), outage_s
        self.lock = threading.Lock()
        self.arrivals: list[dict[str, Any]] = []  # {"t", "key", "fault"} in arrival order
        self.delivered: Counter[str] = Counter()  # whole answers sent at once, per body key
        self.faults: Counter[str] = Counter()
        self.unknown = 0  # bodies the side table does not know (must stay 0)
        self.down = False
        self.outages = 0
        self.accepted: dict[Any, float] = {}  # connection -> when it was accepted
        self._httpd: ThreadingHTTPServer | None = None
        self.port = 0
        self._start()
        self.url = f"http://127.0.0.1:{self.port}/v1"

    # ------------------------------------------------------------ life

    def _start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                server._handle(self)

        class Httpd(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False
            allow_reuse_address = True
            request_queue_size = 128  # a burst of new connections is queued, not dropped (which a client sees as a timeout)

            def handle_error(self, request, client_address):  # a client gone mid-answer is part of the test
                pass

            def process_request(self, request, client_address):
                server.accepted[client_address] = time.monotonic()
                super().process_request(request, client_address)

        self._httpd = Httpd(("127.0.0.1", self.port), Handler)
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def _outage(self) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        time.sleep(self.outage_s)
        self._start()
        self.down = False

    def close(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def set_rates(self, rates: dict[str, float]) -> None:
        with self.lock:
            self.rates = dict(rates)

    # ------------------------------------------------------------ one request

    def _choose(self) -> str | None:
        if self.script:
            return self.script.pop(0)
        draw, edge = self.rng.random(), 0.0
        for fault in FAULTS:
            edge += self.rates.get(fault, 0.0)
            if draw < edge:
                return fault
        return None

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers["Content-Length"]))
        body = json.loads(raw)
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        key = body_key(body["messages"], schema)
        with self.lock:
            if self.down:
                fault: str | None = "outage"
            else:
                fault = self._choose()
                if len(self.arrivals) + 1 in self.outage_at:
                    fault, self.down = "outage", True
                    self.outages += 1
                    threading.Thread(target=self._outage, daemon=True).start()
            now = time.monotonic()
            # "late": seconds between accepting the connection and reading the request (a busy server)
            self.arrivals.append({"t": now, "key": key, "fault": fault,
                                  "late": now - self.accepted.pop(handler.client_address, now),
                                  "retry_after": self.retry_after if fault == "rate_limit" else None})
            if fault:
                self.faults[fault] += 1
        if fault == "outage":
            return _cut(handler)
        if fault in ("http_500", "http_503"):
            return _send(handler, int(fault[-3:]), json.dumps({"error": {"message": "injected"}}).encode())
        if fault == "rate_limit":
            return _send(handler, 429, b'{"error": {"message": "slow down"}}', {"Retry-After": self.retry_after})
        if fault == "malformed":
            return _send(handler, 200, MALFORMED_BODIES[self.faults["malformed"] % len(MALFORMED_BODIES)])
        try:
            payload = self.answer(body)
        except KeyError:
            with self.lock:
                self.unknown += 1
            return _send(handler, 400, b'{"error": {"message": "unknown request"}}')
        data = json.dumps(payload).encode()
        if fault == "drop":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data[: len(data) // 2])
            handler.wfile.flush()
            return _cut(handler)
        if fault == "slow":
            time.sleep(self.slow_s)
            try:
                _send(handler, 200, data)
            except OSError:
                pass
            return
        _send(handler, 200, data)
        with self.lock:
            self.delivered[key] += 1


def _send(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def _cut(handler: BaseHTTPRequestHandler) -> None:
    """Close the connection at once, whatever has been sent."""
    handler.close_connection = True
    try:
        handler.wfile.flush()
        handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
