"""The peers benchmark's own bookkeeping (benchmarks/peer_tools/ledger.py): the counting proxy in front of
one judge server counts exactly the calls, tokens, request shapes and failures a tool caused. Here
`score` runs through it against a loopback server whose answers and token counts are computed from
each request (4 characters a token, as the responder counts), and the proxy's tally is checked
against the run's own records."""

from __future__ import annotations

import json
import math
from http.server import BaseHTTPRequestHandler

import httpx

from benchmarks.peer_tools.ledger import CountingProxy
from scaffold_local import ModelConfig, Pipeline, load_input
from scaffold_local.store import ScaffoldStore

from .helpers import hosted_config_file, minimal_instance, send_reply, serve


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        send_reply(self, 200, "application/json", json.dumps({"data": [{"id": "judge"}]}).encode())

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "[[fail]]" in body["messages"][-1]["content"]:
            send_reply(self, 500, "application/json", b'{"error": "injected"}')
            return
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        content = json.dumps(minimal_instance(schema)) if schema else "plain answer"
        usage = {"prompt_tokens": _tokens("".join(m["content"] for m in body["messages"])),
                 "completion_tokens": _tokens(content)}
        reply = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}], "usage": usage}
        send_reply(self, 200, "application/json", json.dumps(reply).encode())


def test_the_proxy_counts_what_a_run_sent_and_received(small_input, tmp_path):
    server, url = serve(Handler)
    try:
        with CountingProxy(url) as proxy:
            config = ModelConfig.load(str(hosted_config_file(tmp_path / "hosted.toml", proxy.url("scaffold_local"),
                                                             max_retries=0)))
            outcome = Pipeline(config, tmp_path / "store").score(load_input(small_input))
            judged = [json.loads(line) for line in (outcome.run_dir / "records.jsonl").read_text().splitlines()]
            store = ScaffoldStore(tmp_path / "store")
            extracted = [r.model_dump() for s in outcome.extraction.scaffolds.values() for r in store.get(s.key).records]
            records = judged + extracted
            tally = proxy.tally("scaffold_local")
            assert tally.calls == len(records) > 0  # one call per record: nothing failed, nothing retried
            assert tally.prompt_tokens == sum(r["usage"]["prompt_tokens"] for r in records)
            assert tally.completion_tokens == sum(r["usage"]["completion_tokens"] for r in records)
            assert dict(tally.shapes) == {"json_schema": len(records)} and not tally.failures

            plain = {"model": "judge", "messages": [{"role": "user", "content": "Is it faithful?"}]}
            other = proxy.url("peer")
            assert httpx.get(f"{other}/models").json()["data"][0]["id"] == "judge"  # forwarded, not counted
            assert httpx.post(f"{other}/chat/completions", json=plain).json()["usage"]["prompt_tokens"] == 4
            failing = {**plain, "messages": [{"role": "user", "content": "[[fail]]"}],
                       "response_format": {"type": "json_object"}}
            assert httpx.post(f"{other}/chat/completions", json=failing).status_code == 500
            peer = proxy.tally("peer").as_dict()
            assert (peer["calls"], peer["prompt_tokens"], peer["completion_tokens"]) == (2, 4, 3)
            assert peer["shapes"] == {"plain": 1, "json_object": 1} and peer["failures"] == {"http 500": 1}
    finally:
        server.shutdown()


def test_an_unreachable_server_is_a_counted_failure():
    with CountingProxy("http://127.0.0.1:9/v1") as proxy:  # port 9 (discard): nothing listens
        reply = httpx.post(f"{proxy.url('peer')}/chat/completions", json={"messages": []})
        assert reply.status_code == 502
        assert dict(proxy.tally("peer").failures) == {"connection: ConnectError": 1}
