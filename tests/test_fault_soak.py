"""The hosted backend against a fault-injecting OpenAI-compatible server on loopback (tests/fault_server.py):
429 with Retry-After, 500, 503, answers slower than the timeout, connections cut mid-body, bodies
that are not JSON, and a server that dies and comes back. The soak sends over 2,000 requests through
`scaffold-local score` and checks that every item ends judged or recorded with its failure class,
that nothing is lost or judged twice, that memory stays flat, that the retries are counted in the
run summary, and that resuming gives the fault-free result. The small tests pin the retry rules."""

from __future__ import annotations

import contextlib
import email.utils
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from scaffold_local.backends import Message, Request, Sampling
from scaffold_local.backends import openai as openai_backend
from scaffold_local.backends.openai import OpenAIBackend, retry_after_seconds
from scaffold_local.data.loading import load_input
from scaffold_local.data.store import JudgmentCache
from scaffold_local.judging.config import ModelConfig
from scaffold_local.records import RETRYABLE_FAILURES, Record
from scaffold_local.runs.pipeline import Pipeline

from .fault_server import FaultServer, RecordingResponder, ResponderAnswers
from .helpers import hosted_config_file, write_jsonl
from .test_kill_anywhere import documents, finished_keys

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}
OK = {"choices": [{"message": {"content": '{"ok": true}'}, "finish_reason": "stop"}],
      "usage": {"prompt_tokens": 10, "completion_tokens": 3}}


def ok_answer(body):
    return OK


def make_request(i: int = 0) -> Request:
    return Request(id=f"doc/sys/facts{i}", messages=(Message(role="user", content=f"Question {i}"),),
                   json_schema=SCHEMA, sampling=Sampling(max_tokens=32))


def backend_for(url: str, **engine) -> OpenAIBackend:
    return OpenAIBackend(ModelConfig(name="t", backend="openai", model="judge-7b",
                                     engine={"base_url": url, "backoff_s": 0.01, **engine}))


@pytest.fixture
def servers():
    started: list[FaultServer] = []

    def start(*args, **kwargs) -> FaultServer:
        started.append(FaultServer(*args, **kwargs))
        return started[-1]

    yield start
    for server in started:
        server.close()


# ---------------------------------------------------------------- the retry rules, one by one


def test_retry_after_in_seconds_is_honoured(servers):
    server = servers(ok_answer, script=["rate_limit", None], retry_after="1")
    backend = backend_for(server.url)
    result = backend.generate([make_request()])[0]
    assert result.text == '{"ok": true}'
    first, second = server.arrivals
    assert second["t"] - first["t"] >= 1.0  # backoff alone would have waited 0.01 s
    assert backend.retries == {"rate_limit": 1}


def test_retry_after_as_an_http_date_is_honoured(servers):
    date = time.time() + 4
    server = servers(ok_answer, script=["rate_limit", None], retry_after=email.utils.formatdate(date, usegmt=True))
    assert backend_for(server.url).generate([make_request()])[0].text == '{"ok": true}'
    first, second = server.arrivals
    first_wall = first["t"] + time.time() - time.monotonic()  # arrivals are on the monotonic clock
    remaining = int(date) - first_wall  # the header has whole seconds; measured from the 429, however late it came
    assert remaining > 0.5 and second["t"] - first["t"] >= remaining - 0.05  # backoff alone: 0.01 s


def test_a_huge_retry_after_is_capped(servers, monkeypatch):
    monkeypatch.setattr(openai_backend, "MAX_RETRY_AFTER_S", 0.3)
    server = servers(ok_answer, script=["rate_limit", None], retry_after="3600")
    assert backend_for(server.url).generate([make_request()])[0].text == '{"ok": true}'
    first, second = server.arrivals
    assert 0.3 <= second["t"] - first["t"] < 3


@pytest.mark.parametrize("value, seconds", [("2", 2.0), ("0.5", 0.5), ("-3", 0.0), ("soon", None), (None, None),
                                            ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)])
def test_retry_after_values(value, seconds):
    assert retry_after_seconds(value) == seconds
    assert retry_after_seconds(email.utils.formatdate(1000.0 + 30, usegmt=True), now=1000.0) == 30.0


@pytest.mark.parametrize("fault, failure", [("malformed", "server_error"), ("drop", "server_error"),
                                            ("http_500", "server_error"), ("http_503", "server_error"),
                                            ("rate_limit", "rate_limit")])
def test_each_fault_is_retried_and_counted(servers, fault, failure):
    server = servers(ok_answer, script=[fault, None], retry_after="0")
    backend = backend_for(server.url)
    result = backend.generate([make_request()])[0]
    assert result.text == '{"ok": true}' and len(server.arrivals) == 2
    assert backend.retries == {failure: 1}


def test_a_slow_answer_times_out_and_is_retried(servers):
    server = servers(ok_answer, script=["slow", None], slow_s=1.0)
    backend = backend_for(server.url, timeout_s=0.3)
    assert backend.generate([make_request()])[0].text == '{"ok": true}'
    assert backend.retries == {"timeout": 1}


def test_a_body_that_stays_malformed_is_a_server_error_after_every_retry(servers):
    server = servers(ok_answer, script=["malformed"] * 3)
    result = backend_for(server.url, max_retries=2).generate([make_request()])[0]
    assert result.finish_reason == "error" and result.failure == "server_error"
    assert "not JSON" in result.error and len(server.arrivals) == 3


# ---------------------------------------------------------------- the soak

RATES = {"rate_limit": 0.03, "http_500": 0.03, "http_503": 0.03, "slow": 0.005, "drop": 0.03, "malformed": 0.03}
# A timeout well above what a busy 2-core machine needs for a clean answer (a server that is only
# late must not look like a fault), and "slow" answers past it. Large engine calls, so that the
# slowest request of a call (a timeout, then retries) holds up few others.
ENGINE = {"timeout_s": 3.0, "connect_timeout_s": 2.0, "max_retries": 3, "backoff_s": 0.05, "concurrency": 16}
REQUESTS_PER_CALL = 500


def score(input_path: Path, store: Path, config: Path, out: Path) -> tuple[int, float, int, str]:
    """`scaffold-local score` as a user runs it: exit code, wall seconds, peak RSS (KiB), stderr."""
    command = [sys.executable, "-m", "scaffold_local.cli", "score", str(input_path), "-m", str(config),
               "--store", str(store)]
    started = time.monotonic()
    with (out.with_suffix(".out")).open("w") as stdout, (out.with_suffix(".err")).open("w") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env={**os.environ, "COLUMNS": "200"})
        # Sampled, not ru_maxrss: Linux carries the forking process's high-water mark into the child's
        # ru_maxrss across exec, so after a large pytest process it read 1.4 GiB for every command.
        watched, peak = psutil.Process(process.pid), 0
        while process.poll() is None:
            with contextlib.suppress(psutil.Error):
                peak = max(peak, watched.memory_info().rss)
            time.sleep(0.05)
    return process.returncode, time.monotonic() - started, peak // 1024, out.with_suffix(".err").read_text()


def cache_records(store: Path) -> dict[str, Record]:
    cache = JudgmentCache(store)
    try:
        return {r.cache_key: r for r in cache}
    finally:
        cache.close()


def test_soak_over_2000_requests_with_faults_of_every_kind(tmp_path, servers):
    started = time.monotonic()
    rows = documents(100)  # 100 documents x 3 summaries: 300 extractions + 1,500 judgments ...
    rows += [{**r, "system": "lead", "summary": r["document"].split(". ")[0] + "."} for r in rows[::3]]  # ... + 500
    input_path = write_jsonl(tmp_path / "many.jsonl", rows)
    small_path = write_jsonl(tmp_path / "small.jsonl", rows[:8])

    # The fault-free result, in-process on the responder; it also fills the server's side table.
    table: dict = {}
    server = servers(ResponderAnswers(table), rates=RATES, seed=7, outage_s=1.0, slow_s=4.0)
    config = hosted_config_file(tmp_path / "hosted.toml", server.url, method_version=2, **ENGINE)
    config.write_text(config.read_text().replace("\n\n[engine]", f"\nrequests_per_call = {REQUESTS_PER_CALL}\n\n[engine]"))
    reference_store = tmp_path / "reference"
    pipeline = Pipeline(ModelConfig.load(str(config)), reference_store, backend_factory=lambda c: RecordingResponder(table, c))
    reference = pipeline.score(load_input(input_path))
    pipeline.close()
    planned = len(table)
    assert planned == 300 + 2000
    fingerprint = ModelConfig.load(str(config)).fingerprint()
    cache_key = {key: request.cache_key(fingerprint) for key, (request, _) in table.items()}

    # Memory baseline: the same command on 8 summaries (3 documents), no faults.
    server.set_rates({})
    code, _, small_rss, err = score(small_path, tmp_path / "small-store", config, tmp_path / "small")
    assert code == 0, err
    baseline_arrivals = len(server.arrivals)
    server.delivered.clear()
    server.set_rates(RATES)
    server.outage_at = {baseline_arrivals + 200, baseline_arrivals + 900}  # during extraction, during judgments

    store = tmp_path / "store"
    code, first_s, peak_rss, err = score(input_path, store, config, tmp_path / "first")
    assert code in (0, 3), err  # 3: partial, what failed is retried below
    assert server.outages == 2 and server.unknown == 0
    first_arrivals = server.arrivals[baseline_arrivals:]
    run_dir = store / "runs" / reference.run_dir.name
    usage = json.loads((run_dir / "usage.json").read_text())

    # Every item is judged or recorded with its failure class; nothing is lost.
    records = cache_records(store)
    requests = [json.loads(line) for line in (run_dir / "requests.jsonl").read_text().splitlines()]
    candidates = [json.loads(line) for line in (run_dir / "candidates.jsonl").read_text().splitlines()]
    for request in requests:
        record = records[request["cache_key"]]
        assert (record.parsed is not None) != (record.failure is not None)
        assert record.failure is None or record.failure in RETRYABLE_FAILURES
    not_judged = [c for c in candidates if c["failed"]]
    assert len(requests) == 5 * (len(candidates) - len(not_judged))
    assert all(c["failed"].startswith("extraction failed, retried next run") for c in not_judged)
    failed_docs = {c["doc_id"] for c in not_judged}
    failed_extractions = [r for r in records.values() if r.task.startswith("extract_") and r.failure]
    assert {r.doc_id for r in failed_extractions} == failed_docs  # each with its class, in the cache
    judged = [records[r["cache_key"]] for r in requests]
    assert usage["judgments"]["failures"] == dict(Counter(r.failure for r in judged if r.failure))
    partial = bool(not_judged or usage["judgments"]["failures"])
    assert json.loads((run_dir / "spec.json").read_text())["status"] == ("partial" if partial else "complete")
    assert code == (3 if partial else 0) and (("partial run: " in err) == partial), err
    # Retries are counted, by class, in usage.json and in the printed summary.
    retries = Counter(usage["judgments"]["retries"]) + Counter(usage["extraction"]["retries"])
    assert {"rate_limit", "server_error", "timeout"} <= set(retries)
    assert "retries: rate_limit" in err
    # Retry-After was honoured: a request rate-limited at t came back no sooner than t + Retry-After.
    # An arrival less than the smallest backoff (50 ms) after the 429 cannot be the client's retry of
    # that attempt (it waits at least that long after any failure): the client had given up on the
    # rate-limited attempt (a timeout) before the server read it. Those are counted, not failed.
    last_seen: dict[str, dict] = {}
    abandoned = []
    for arrival in first_arrivals:
        before = last_seen.get(arrival["key"])
        if before and before["fault"] == "rate_limit":
            waited = arrival["t"] - before["t"]
            if waited < ENGINE["backoff_s"]:
                abandoned.append([(round(a["t"], 3), a["fault"], round(a["late"], 3))
                                  for a in first_arrivals if a["key"] == arrival["key"]])
            else:
                assert waited >= float(before["retry_after"]) - 0.01, \
                    [(round(a["t"], 3), a["fault"]) for a in first_arrivals if a["key"] == arrival["key"]]
        last_seen[arrival["key"]] = arrival
    assert len(abandoned) <= 2, abandoned

    # Resume until done (faults on, no outage): a finished request is never sent again.
    server.outage_at = set()
    runs = 1
    while True:
        finished = finished_keys(store)
        mark = len(server.arrivals)
        code, _, rss, err = score(input_path, store, config, tmp_path / f"resume-{runs}")
        assert code in (0, 3), err
        peak_rss = max(peak_rss, rss)
        runs += 1
        again = {cache_key[a["key"]] for a in server.arrivals[mark:]} & finished
        assert not again, f"{len(again)} finished requests sent again"
        usage = json.loads((run_dir / "usage.json").read_text())
        if not usage["judgments"]["failures"] and not usage["extraction"]["failures"] and \
                not any(json.loads(line)["failed"] for line in (run_dir / "candidates.jsonl").read_text().splitlines()):
            assert code == 0, err  # complete at last
            break
        assert code == 3, err
        assert runs < 5, "still failing after 4 runs"
    wall = time.monotonic() - started

    # Nothing judged twice: each request's answer was delivered whole once (a second delivery only
    # where the client had timed out on the first: a busy machine, counted in the timeout retries
    # beyond the injected slow answers), and each request has one record.
    twice = sum(n - 1 for n in server.delivered.values())
    all_retries = Counter(usage["judgments"]["retries"]) + Counter(usage["extraction"]["retries"])  # every run's
    assert twice <= max(0, all_retries["timeout"] - server.faults["slow"]), twice
    assert len(server.delivered) == planned and server.unknown == 0
    records = cache_records(store)
    judgments = {cache_key[key] for key, (request, _) in table.items() if not request.context["task"].startswith("extract_")}
    assert judgments <= {k for k, r in records.items() if r.failure is None}
    exported = [json.loads(line)["cache_key"] for line in (run_dir / "records.jsonl").read_text().splitlines()]
    assert len(exported) == len(set(exported)) == 2000
    # The end result is the fault-free one.
    for name in ("summaries.jsonl", "systems.json", "summaries.csv", "systems.csv", "candidates.jsonl", "requests.jsonl"):
        assert (run_dir / name).read_bytes() == (reference.run_dir / name).read_bytes(), name
    strip = lambda path: [{k: v for k, v in json.loads(line).items() if k != "latency_s"}  # noqa: E731
                          for line in path.read_text().splitlines()]
    assert strip(run_dir / "records.jsonl") == strip(reference.run_dir / "records.jsonl")
    # Memory stays flat: 2,300 requests with faults cost little more than 8 summaries without.
    faults = dict(server.faults)
    print(f"\nsoak: {planned} requests, {len(server.arrivals) - baseline_arrivals} HTTP requests in {runs} runs, "
          f"faults {faults}, retries in the first run {dict(retries)}, "
          f"failures after it {dict(Counter(r.failure for r in judged if r.failure))}, "
          f"failed extractions {len(failed_extractions)}, delivered twice {twice}, 429s answered after the client gave up {abandoned}, peak RSS {peak_rss / 1024:.0f} MiB (8 summaries: "
          f"{small_rss / 1024:.0f} MiB), first run {first_s:.1f} s, all {wall:.1f} s")
    assert set(faults) >= {"rate_limit", "http_500", "http_503", "slow", "drop", "malformed", "outage"}
    assert len(server.arrivals) - baseline_arrivals >= 2000
    assert peak_rss < small_rss + 150 * 1024 and peak_rss < 1024 * 1024


def test_a_failed_extraction_view_is_the_only_one_sent_again(responder_config, small_input, tmp_path):
    """A document whose extraction failed in one view for a passing reason gets no scaffold; the next
    run sends that view again, not the views already answered (they wait in the judgment cache)."""
    from scaffold_local.backends.protocol import Result
    from scaffold_local.backends.responder import ResponderBackend

    sent: list[list[str]] = []

    class Responder(ResponderBackend):
        fail_entities = True

        def generate(self, requests):
            sent[-1].extend(r.context["task"] for r in requests)
            return [Result(id=r.id, text=None, finish_reason="error", error="HTTP 503", failure="server_error")
                    if self.fail_entities and r.context["task"] == "extract_entities" else result
                    for r, result in zip(requests, super().generate(requests))]

    def run(fail: bool):
        sent.append([])
        Responder.fail_entities = fail
        pipeline = Pipeline(responder_config, tmp_path / "store", backend_factory=Responder)
        try:
            return pipeline.score(load_input(small_input))
        finally:
            pipeline.close()

    first = run(fail=True)
    assert len(first.failed_summaries) == 4 and first.usage.extraction.failures == {"server_error": 2}
    assert Counter(sent[0]) == {"extract_facts": 2, "extract_questions": 2, "extract_entities": 2}
    second = run(fail=False)
    assert [t for t in sent[1] if t.startswith("extract_")] == ["extract_entities"] * 2
    assert not second.failed_summaries and second.extraction.computed == 2
