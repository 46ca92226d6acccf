"""Kill the real OpenAI-compatible server in the middle of a run: the run records per-item engine
errors instead of crashing, and a rerun against a restarted server completes with nothing lost. Under method version
2, five requests per summary whatever its scaffold, so every request can be counted; the default method's readings
on this server are tests/test_real_engines.py's."""

from __future__ import annotations

import threading
import time

import pytest

from scaffold_local.data.loading import load_input
from scaffold_local.data.store import JudgmentCache
from scaffold_local.judging.config import ModelConfig
from scaffold_local.runs.pipeline import Pipeline

from .helpers import EXAMPLE_SUMMARIES, EXAMPLES, VllmServer, hosted_config_file

pytestmark = pytest.mark.real_model


def _done_records(store) -> int:
    """Summaries' judgments in the store's cache that need no new request (read while the run writes);
    the documents' extractions, which the cache also keeps, are not counted."""
    if not (store / "cache.sqlite").is_file():
        return 0
    cache = JudgmentCache(store)
    try:
        return sum(r.system is not None and not r.retryable for r in cache)
    finally:
        cache.close()


def test_server_killed_mid_run_then_resumed(tmp_path, vllm_server):
    loaded = load_input(EXAMPLES)
    store = tmp_path / "store"
    first_server = VllmServer(tmp_path / "first.log").wait_ready()
    fast_failure = {"max_retries": 1, "backoff_s": 0.2, "connect_timeout_s": 2, "concurrency": 4}
    config = ModelConfig.load(str(hosted_config_file(tmp_path / "a.toml", first_server.base_url, method_version=2, **fast_failure)))
    config = config.model_copy(update={"requests_per_call": 8})  # small calls: records land often

    outcome = {}
    worker = threading.Thread(target=lambda: outcome.update(first=Pipeline(config, store).score(loaded)))
    worker.start()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and _done_records(store) < 8:
        time.sleep(0.2)
    assert _done_records(store) >= 8, "no judgment was recorded before the deadline"
    first_server.kill()
    worker.join(timeout=600)
    first = outcome["first"]
    done_before = _done_records(store)
    requests = EXAMPLE_SUMMARIES * 5
    assert 8 <= done_before < requests and first.engine_errors > 0
    assert first.engine_errors + done_before == requests  # every request is accounted for, none crashed the run

    # Another server on another port (the session's): the address is transport, not identity, so
    # nothing is recomputed.
    assert vllm_server.base_url != first_server.base_url
    config_b = ModelConfig.load(str(hosted_config_file(tmp_path / "b.toml", vllm_server.base_url, method_version=2)))
    second = Pipeline(config_b, store).score(loaded)
    assert second.run_dir == first.run_dir and second.resumed
    assert second.requests_reused == done_before and second.requests_sent == requests - done_before
    assert second.engine_errors == 0 and not second.failed_summaries
    assert second.usage.judgments.finish_reasons == {"stop": requests}
    assert len(second.summaries) == EXAMPLE_SUMMARIES
