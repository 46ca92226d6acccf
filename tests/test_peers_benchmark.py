"""The peers benchmark's own bookkeeping (benchmarks/peer_tools/): the counting proxy in front of one
judge server counts exactly the calls, tokens, request shapes and failures a tool caused, and the
hand-rolled peers record an answer they cannot read as a failure, not a score. Here
`score` runs through it against a loopback server whose answers and token counts are computed from
each request (4 characters a token, as the responder counts), and the proxy's tally is checked
against the run's own records."""

from __future__ import annotations

import json
import math
import re
import sys
from http.server import BaseHTTPRequestHandler

import httpx

from benchmarks import peers
from benchmarks.peer_tools import tools
from benchmarks.peer_tools.ledger import CountingProxy
from scaffold_local import ModelConfig, Pipeline, load_input
from scaffold_local.data.store import ScaffoldStore
from scaffold_local.metaeval.human_labels import split_of

from .helpers import RESPONDER_CONFIG, hosted_config_file, minimal_instance, send_reply, serve


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
        content = json.dumps(minimal_instance(schema)) if schema else peer_answer(body["messages"][-1]["content"])
        usage = {"prompt_tokens": _tokens("".join(m["content"] for m in body["messages"])),
                 "completion_tokens": _tokens(content),  # a prefix cache that served all but the last message:
                 "prompt_tokens_details": {"cached_tokens": _tokens("".join(m["content"] for m in body["messages"][:-1]))}}
        reply = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}], "usage": usage}
        send_reply(self, 200, "application/json", json.dumps(reply).encode())


def peer_answer(prompt: str) -> str:
    """What the hand-rolled peers are answered, computed from their prompts: G-Eval a 4 after a sentence; FineSurE
    "no error" for every summary sentence and "Yes" for every key fact; garbage where asked."""
    if "[[garble]]" in prompt:
        return "I cannot answer that."
    if prompt.rstrip().endswith("- Relevance:"):  # as a small model answers: a sentence (with a number) first
        return "Following the 3 evaluation steps, I rate the summary as follows:\n\nRelevance: 4"
    if sentences := re.search(r"Summary with (\d+) sentences:", prompt):
        return json.dumps([{"sentence": "s", "reason": "r", "category": "no error"}] * int(sentences.group(1)))
    if keyfacts := re.search(r"(\d+) key facts:", prompt):
        return "```json\n" + json.dumps([{"key fact": "k", "response": "Yes", "line number": [1]}]
                                          * int(keyfacts.group(1))) + "\n```"
    return "plain answer"


def test_the_proxy_counts_what_a_run_sent_and_received(small_input, tmp_path):
    server, url = serve(Handler)
    try:
        with CountingProxy(url) as proxy:
            config = ModelConfig.load(str(hosted_config_file(tmp_path / "hosted.toml", proxy.url("scaffold_local"),
                                                             method_version=2, max_retries=0)))
            outcome = Pipeline(config, tmp_path / "store").score(load_input(small_input))
            judged = [json.loads(line) for line in (outcome.run_dir / "records.jsonl").read_text().splitlines()]
            store = ScaffoldStore(tmp_path / "store")
            extracted = [r.model_dump() for s in outcome.extraction.scaffolds.values() for r in store.get(s.key).records]
            records = judged + extracted
            tally = proxy.tally("scaffold_local")
            assert tally.calls == len(records) > 0  # one call per record: nothing failed, nothing retried
            assert tally.prompt_tokens == sum(r["usage"]["prompt_tokens"] for r in records)
            assert tally.completion_tokens == sum(r["usage"]["completion_tokens"] for r in records)
            assert 0 < tally.cached_prompt_tokens == sum(r["usage"]["cached_prompt_tokens"] for r in records)
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


def test_the_hand_rolled_peers_are_counted_and_their_unparsable_answers_are_failures():
    document = {"doc_id": "d", "document": "Alpha opened a plant. It has 200 workers.", "keyfacts": ["Alpha opened a plant"],
                "summaries": [{"system": "a", "summary": "Alpha opened a plant."},
                              {"system": "b", "summary": "Alpha opened a plant. [[garble]]"}]}
    server, url = serve(Handler)
    try:
        with CountingProxy(url) as proxy:
            finesure = tools.finesure([document], proxy.url("finesure"), "judge")
            geval = tools.geval([document], proxy.url("geval"), "judge")
            assert finesure.scores == {("d", "a"): 1.0, ("d", "b"): None}  # completeness over the given key facts
            assert finesure.extra[("d", "a")] == {"faithfulness": 1.0}
            assert dict(finesure.failures) == {"fact check: ValueError": 1, "key-fact alignment: ValueError": 1}
            assert geval.scores == {("d", "a"): 4.0, ("d", "b"): None}
            assert dict(geval.failures) == {"no score in the answer": 1}
            assert (proxy.tally("finesure").calls, proxy.tally("geval").calls) == (4, 2)  # 2 and 1 per summary
            assert dict(proxy.tally("finesure").shapes) == {"plain": 4} and not proxy.tally("finesure").failures
    finally:
        server.shutdown()


def test_the_in_process_row_counts_from_its_run_records_what_the_wire_carried(tmp_path):
    """scaffold_local_engine has no server to count at: its calls and tokens come from the run's
    records. Pointed (for this test only) at the loopback server through the proxy, both counts agree."""
    document = {"doc_id": "d", "document": "Alpha opened a plant. It has 200 workers.",
                "summaries": [{"system": "a", "summary": "Alpha opened a plant."},
                              {"system": "b", "summary": "It has 200 workers."}]}
    server, url = serve(Handler)
    try:
        with CountingProxy(url) as proxy:
            config = hosted_config_file(tmp_path / "hosted.toml", proxy.url("engine"), method_version=2, max_retries=0)
            scores = tools.scaffold_local_engine([document], str(config))
            tally = proxy.tally("engine")
            assert tally.calls > 0
            assert scores.counted == {"requests": tally.calls, "prompt_tokens": tally.prompt_tokens,
                                      "cached_prompt_tokens": tally.cached_prompt_tokens,
                                      "completion_tokens": tally.completion_tokens}
            assert scores.stages is not None  # the same counts per stage, each with the engine seconds of its tasks
            assert {k: sum(stage[k] for stage in scores.stages.values()) for k in scores.counted} == scores.counted
            assert scores.stages["extraction"]["requests"] == 3 and scores.stages["extraction"]["engine_s"] >= 0
            assert set(scores.scores) == {("d", "a"), ("d", "b")} and not scores.failures
    finally:
        server.shutdown()


def _test_half_ids(n: int) -> list[str]:
    return [d for d in (f"doc{i}" for i in range(100)) if split_of(d) == "test"][:n]


def test_the_benchmark_script_end_to_end_on_a_loopback_server(tmp_path, monkeypatch):
    """benchmarks/peers.py on small documents written here (in the shared data's shape), against the
    loopback server: one row per (tool, setting, document), counts summed per setting, FRANK's faithfulness
    table written; a rerun sends nothing, and a larger --documents measures only the document added."""
    data = tmp_path / "data"
    (data / "realsumm").mkdir(parents=True)
    (data / "frank").mkdir()
    realsumm = [{"doc_id": d, "document": "Alpha opened a plant. It has 200 workers.", "keyfacts": ["Alpha opened a plant"],
                 "summaries": [{"system": f"s{k}", "summary": "Alpha opened a plant." + " It has 200 workers." * (k % 2),
                                "human": {"litepyramid_recall": k / 3, "scu_presence": [1]}} for k in range(3)]}
                for d in _test_half_ids(3)]
    frank = [{"doc_id": d, "document": "Alpha opened a plant.",
              "summaries": [{"system": "s", "summary": "Alpha opened a plant.", "sentences": ["Alpha opened a plant."],
                             "human": {"frank_summary_scores": {"Factuality": 1.0}, "sentence_error_majority": [0]}}]}
             for d in _test_half_ids(1)]
    for path, docs in ((data / "realsumm" / "realsumm.jsonl", realsumm), (data / "frank" / "frank_sentence_level.jsonl", frank)):
        path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    server, url = serve(Handler)
    out = tmp_path / "peers"
    argv = ["peers.py", "--data", str(data), "--server", url, "--model", "judge", "--documents", "2",
            "--settings", "1,3", "--tools", "finesure,geval", "--frank", "1", "--out", str(out)]
    kept = out.with_suffix(".rows.jsonl")
    try:
        monkeypatch.setattr(sys, "argv", argv)
        peers.main()
        result = json.loads(out.with_suffix(".json").read_text())
        first_two = set(result["documents"])
        rows = {(r["tool"], r["dataset"], r["setting"]): r for r in result["rows"]}
        assert set(rows) == {("finesure", "realsumm", 1), ("finesure", "realsumm", 3), ("geval", "realsumm", 1),
                             ("geval", "realsumm", 3), ("finesure", "frank", 0)}  # G-Eval claims no faithfulness
        assert len(kept.read_text().splitlines()) == 2 * 2 * 2 + 1  # tools x settings x documents, + FRANK
        assert rows[("finesure", "realsumm", 3)]["calls"] == 2 * 2 * 3 and rows[("geval", "realsumm", 3)]["calls"] == 6
        assert rows[("geval", "realsumm", 3)]["summaries"] == 6 and len(rows[("geval", "realsumm", 3)]["doc_ids"]) == 2
        assert rows[("finesure", "frank", 0)]["faithfulness"] == [[frank[0]["doc_id"], "s", 1.0]]
        table = out.with_suffix(".md").read_text()
        assert "| finesure | 2.0 |" in table and "| 2 / 2 |" in table and "FRANK (1 documents" in table
        frank_row = rows[("finesure", "frank", 0)]
        assert f"| 1 of 1 | 1.0 | {frank_row['s_per_summary']} | 0; 0 |" in table  # scored, calls, seconds, failures
        monkeypatch.setattr(sys, "argv", argv)
        peers.main()  # every row kept: nothing is sent again
        assert len(kept.read_text().splitlines()) == 9

        monkeypatch.setattr(sys, "argv", [*argv[:6], "judge", "--documents", "3", *argv[9:]])
        peers.main()  # the third document only: 2 tools x 2 settings
        added = [json.loads(line) for line in kept.read_text().splitlines()[9:]]
        result = json.loads(out.with_suffix(".json").read_text())
        assert len(first_two) == 2 and first_two < set(result["documents"])  # the draw of 3 begins with the draw of 2
        assert len(added) == 4 and {d for r in added for d in r["doc_ids"]} == set(result["documents"]) - first_two
        geval = next(r for r in result["rows"] if (r["tool"], r["setting"]) == ("geval", 3))
        assert geval["summaries"] == 9 and geval["calls"] == 9
        assert result["agreement_over"]["geval"] == {"documents": 3, "settings": [3]}
        pooled = next(r for r in result["agreement"]["geval"] if r["aggregation"].startswith("pooled"))
        assert pooled["n"] == 9 and pooled["documents"] == 3
    finally:
        server.shutdown()


def test_the_time_ratio_at_8_compares_the_documents_both_tools_measured():
    def row(tool, doc, wall, summaries=8):
        return {"tool": tool, "dataset": "realsumm", "setting": 8, "doc_ids": [doc], "wall_s": wall, "summaries": summaries}

    rows = [row("scaffold_local", "a", 80), row("scaffold_local", "b", 160), row("geval", "a", 40), row("geval", "b", 40),
            row("finesure", "a", 160), row("finesure", "c", 999), {**row("geval", "a", 1), "setting": 1}]
    # geval: 80 s over 16 summaries against 240 s over 16; finesure: document a only, 160 s against 80 s
    assert peers.ratios_at(rows) == {"geval": round(80 / 240, 2), "finesure": 2.0}


def test_the_in_process_row_alone_starts_no_server(tmp_path, monkeypatch):
    """Only the in-process row to measure: no judge server is started (this machine holds one judge at a
    time); the row counts the responder's requests from its run records."""
    data = tmp_path / "data"
    (data / "realsumm").mkdir(parents=True)
    docs = [{"doc_id": d, "document": "Alpha opened a plant. It has 200 workers.", "keyfacts": ["Alpha opened a plant"],
             "summaries": [{"system": "s0", "summary": "Alpha opened a plant.",
                            "human": {"litepyramid_recall": 1.0, "scu_presence": [1]}}]}
            for d in _test_half_ids(1)]
    (data / "realsumm" / "realsumm.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    monkeypatch.setattr(peers, "JudgeServer", None)  # starting one would fail the test
    out = tmp_path / "peers"
    monkeypatch.setattr(sys, "argv", ["peers.py", "--data", str(data), "--serve", str(RESPONDER_CONFIG), "--documents",
                                      "1", "--settings", "1", "--tools", "scaffold_local_engine", "--frank", "0",
                                      "--out", str(out)])
    peers.main()
    [row] = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert (row["tool"], row["model"], row["summaries"]) == ("scaffold_local_engine", "responder", 1)
    assert row["calls"] > 0 and row["prompt_tokens"] > 0 and row["scored"] == 1
    extraction = row["stages"]["extraction"]
    table = out.with_suffix(".md").read_text()
    assert (f"| scaffold_local_engine | 1 | {extraction['engine_s']}, {extraction['completion_tokens']:,}, "
            in table)  # the per-stage table: extraction's engine seconds and generated tokens


def test_a_correlation_over_one_document_is_shown_without_an_interval():
    from scaffold_local.metaeval.correlation import POOLED

    row = {"level": "summary", "aggregation": POOLED, "spearman": 0.5, "spearman_low95": None, "spearman_high95": None,
           "n": 8, "documents": 1}
    assert peers._spearman([row], "summary", POOLED[:6]) == "0.500 (n=8, 1 document)"
    assert (peers._spearman([{**row, "spearman_low95": 0.1, "spearman_high95": 0.8, "documents": 3}], "summary")
            == "0.500 [0.100, 0.800] (n=8, 3 documents)")
