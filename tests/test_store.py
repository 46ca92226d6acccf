"""The store's judgment cache shared by every run, failure classes that decide what is sent again,
two processes on one store, runs written before the cache, and stores on network filesystems."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold_local import runs
from scaffold_local.data.store import JudgmentCache, StoreError
from scaffold_local.data.store.cache import filesystem_type
from scaffold_local.errors import RunNotReadable
from scaffold_local.judging.config import ModelConfig
from scaffold_local.records import RETRYABLE_FAILURES, Record

from .helpers import FACTORY, RESPONDER_CONFIG, SUMMARIES, write_jsonl
from .test_pipeline import EXPECTED, CountingFactory, run


def _rows(pairs) -> list[dict]:
    return [{"doc_id": d, "document": text, "system": s, "summary": summary} for d, text, s, summary in pairs]


def test_a_new_input_sharing_half_its_pairs_sends_only_the_new_half(responder_config, tmp_path):
    store = tmp_path / "store"
    first = run(responder_config, store, write_jsonl(tmp_path / "a.jsonl", _rows(SUMMARIES[:2])))
    assert first.requests_sent == 10
    extra = ("factory", FACTORY, "third", "The plant cost 50 million dollars to build.")
    factory = CountingFactory()
    second = run(responder_config, store, write_jsonl(tmp_path / "b.jsonl", _rows([SUMMARIES[1], extra])), factory)
    assert second.run_dir != first.run_dir  # another input: another run folder, one shared cache
    assert second.requests_reused == 5 and second.requests_sent == 5
    assert sorted(factory.requests) == sorted(f"factory/third/{k}" for k in
                                              ("facts", "questions", "entities", "faithfulness", "direct_score"))
    index = [json.loads(line) for line in (second.run_dir / "requests.jsonl").read_text().splitlines()]
    assert len(index) == 10 and {row["system"] for row in index} == {"details", "third"}
    exported = [json.loads(line) for line in (second.run_dir / "records.jsonl").read_text().splitlines()]
    assert sorted(r["cache_key"] for r in exported) == sorted(row["cache_key"] for row in index)


def test_context_overflow_is_not_sent_again_until_the_config_changes(responder_config, small_input, tmp_path):
    store = tmp_path / "store"
    # About 150 prompt tokens + a 96-token budget per fact fit 8192, not 600: the alignment
    # requests with several facts overflow, the others fit.
    tight = responder_config.model_copy(update={"max_model_len": 600})
    first = run(tight, store, small_input)
    overflowed = first.failures.get("context_overflow", 0)
    assert overflowed > 0 and first.engine_errors == 0  # not a passing failure
    factory = CountingFactory()
    again = run(tight, store, small_input, factory)
    assert factory.requests == [] and factory.started == 0  # nothing retried, no engine started
    assert again.failures["context_overflow"] == overflowed
    wider = run(responder_config, store, small_input, CountingFactory())  # max_model_len 8192: new cache keys
    assert "context_overflow" not in wider.failures
    assert wider.requests_sent == 20  # every judgment is a new request under the new judge config


def test_a_truncated_output_is_retried_once_with_twice_the_budget(responder_config, small_input, tmp_path):
    # The responder's direct score answer is about 130 characters (33 tokens at 4 characters a token).
    tight = responder_config.model_copy(update={"budget": responder_config.budget.model_copy(update={"direct_score": 20})})
    outcome = run(tight, tmp_path / "store", small_input)
    retried = [r for r in runs.load(outcome.run_dir).records.values() if r.task == "direct_score"]
    assert len(retried) == 4 and all(r.attempts == 2 and r.max_tokens == 40 and r.parsed for r in retried)
    assert outcome.usage.judgments.truncation_retries == 4 and "truncated" not in outcome.failures

    # 8 tokens per item are far too few for the alignment verdicts, even doubled.
    tiny = responder_config.model_copy(update={"budget": responder_config.budget.model_copy(update={"base": 1, "per_item": 8})})
    cut = run(tiny, tmp_path / "store2", small_input)
    truncated = [r for r in runs.load(cut.run_dir).records.values() if r.failure == "truncated"]
    assert truncated and cut.failures["truncated"] == len(truncated)
    assert all(r.attempts == 2 and r.text and r.validation_error.endswith("(output cut off at max_tokens)")
               for r in truncated)  # recorded with the raw text of the second attempt
    factory = CountingFactory()
    run(tiny, tmp_path / "store2", small_input, factory)
    assert factory.requests == []  # a truncated output would be truncated again: not re-sent


def test_failure_classes_decide_what_is_retried():
    def record(failure):
        return Record(request_id="d/s/facts", cache_key="k", task="align_facts", prompt="align_facts.v2",
                      schema_sha256=None, doc_id="d", text=None, finish_reason="error", failure=failure)

    assert {f for f in ("rate_limit", "server_error", "timeout", "engine_crash") if record(f).retryable} == RETRYABLE_FAILURES
    for lasting in ("context_overflow", "invalid_request", "truncated", "validation"):
        assert not record(lasting).retryable
    legacy = record(None)  # written before failure classes: engine errors were retried
    assert legacy.retryable


def test_two_score_processes_on_one_store_keep_every_record_exactly_once(tmp_path):
    store = tmp_path / "store"
    config = tmp_path / "slow.toml"
    config.write_text(f'extends = "{RESPONDER_CONFIG}"\nname = "responder"\nrequests_per_call = 8\n\n'
                      '[engine]\ndelay_s = 0.3\n', encoding="utf-8")
    inputs = [write_jsonl(tmp_path / f"in{i}.jsonl", _rows(SUMMARIES if i == 0 else SUMMARIES[::-1])) for i in range(2)]
    processes = [subprocess.Popen([sys.executable, "-m", "scaffold_local.cli", "score", str(path), "-m", str(config),
                                   "--store", str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for path in inputs]
    outputs = [p.communicate(timeout=300) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], [err[-2000:] for _, err in outputs]
    cache = JudgmentCache(store)
    # 4 summaries x 5 judgments and 2 documents x 3 extractions, each stored once whichever process sent it
    assert len(cache) == 26
    run_dirs = sorted((store / "runs").iterdir())
    assert len(run_dirs) == 2
    for run_dir in run_dirs:
        opened = runs.load(run_dir)
        assert opened.spec.status == "complete" and len(opened.records) == 20
        got = {(s.doc_id, s.system): s.values["fps"] for s in opened.summaries}
        assert got == {k: pytest.approx(v["fps"]) for k, v in EXPECTED.items()}


def _as_format_1(run_dir: Path) -> None:
    """Rewrite a run folder as scaffold_local wrote it before the shared cache and typed specs."""
    spec = json.loads((run_dir / "spec.json").read_text())
    for key in ("format_version", "status", "scaffold_source", "scaffold_keys", "updated_at"):
        spec.pop(key, None)
    spec["default_run_id"] = spec.pop("run_id")
    (run_dir / "spec.json").write_text(json.dumps(spec))
    (run_dir / "requests.jsonl").unlink()


def test_a_run_written_before_the_cache_opens_and_resumes_without_sending(responder_config, small_input, tmp_path):
    old_store = tmp_path / "old"
    first = run(responder_config, old_store, small_input)
    _as_format_1(first.run_dir)
    (old_store / "cache.sqlite").unlink()  # no cache existed then
    for extra in old_store.glob("cache.sqlite-*"):
        extra.unlink()
    opened = runs.load(first.run_dir)
    assert opened.spec.format_version == 1 and opened.spec.status == "unknown"
    assert opened.spec.run_id == first.run_dir.name and len(opened.records) == 20
    assert opened.systems[0].metrics["fps"].mean is not None

    factory = CountingFactory()
    resumed = run(responder_config, old_store, small_input, factory)
    assert resumed.run_dir == first.run_dir and resumed.resumed  # the same run id as before
    assert factory.requests == [] and resumed.requests_reused == 20  # its records went to the cache
    assert runs.load(first.run_dir).spec.format_version == 2


def test_a_run_from_a_newer_version_is_refused_with_its_format(responder_config, small_input, tmp_path):
    outcome = run(responder_config, tmp_path / "store", small_input)
    spec = json.loads((outcome.run_dir / "spec.json").read_text())
    (outcome.run_dir / "spec.json").write_text(json.dumps({**spec, "format_version": 9, "new_field": 1}))
    with pytest.raises(RunNotReadable, match="run format 9; this version of scaffold_local reads formats 1 to 2"):
        runs.load(outcome.run_dir)
    with pytest.raises(RunNotReadable, match="not a run folder"):
        runs.load(tmp_path)


MOUNTS = """\
/dev/sda1 / ext4 rw,relatime 0 0
server:/export/home /home nfs4 rw,relatime 0 0
/dev/sdb1 /home/me/scratch xfs rw 0 0
lustre@tcp:/fs /lustre lustre rw 0 0
"""


def test_filesystem_type_takes_the_deepest_mount():
    assert filesystem_type(Path("/home/me/store"), MOUNTS) == "nfs4"
    assert filesystem_type(Path("/home/me/scratch/store"), MOUNTS) == "xfs"
    assert filesystem_type(Path("/lustre/project"), MOUNTS) == "lustre"
    assert filesystem_type(Path("/tmp/x"), MOUNTS) == "ext4"
    assert filesystem_type(Path("/tmp/x"), None) is None


def test_a_store_on_a_network_filesystem_is_refused_with_the_reason(monkeypatch, tmp_path):
    monkeypatch.setattr("scaffold_local.data.store.cache._read_mounts",
                        lambda: f"/dev/sda1 / ext4 rw 0 0\nserver:/x {tmp_path} nfs rw 0 0\n")
    with pytest.raises(StoreError, match=r"on a nfs filesystem.*WAL mode.*local disk"):
        JudgmentCache(tmp_path / "store")


def test_misspelt_engine_setting_is_an_error_naming_the_key_and_file(tmp_path):
    config = tmp_path / "typo.toml"
    config.write_text('extends = "smollm2-135m-vllm"\n\n[engine]\ngpu_memory_utilisation = 0.5\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"typo.toml: invalid model config: invalid vllm engine settings: "
                                         r"\[engine\] gpu_memory_utilisation: Extra inputs are not permitted "
                                         r"\(did you mean 'gpu_memory_utilization'\?\)"):
        ModelConfig.load(str(config))


def test_store_cli_message_for_a_network_store(monkeypatch, small_input, tmp_path):
    from typer.testing import CliRunner

    from scaffold_local.cli import app

    monkeypatch.setattr("scaffold_local.data.store.cache._read_mounts", lambda: f"server:/x {tmp_path} nfs4 rw 0 0\n")
    result = CliRunner().invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG),
                                      "--store", str(tmp_path / "store")])
    assert result.exit_code == 2 and "nfs4 filesystem" in result.output


def test_cache_keys_keep_their_definition_when_the_schema_text_is_passed_in():
    """Keys computed with a schema dumped once per schema are the documented hash, byte for byte
    (a changed key would make every store re-send everything)."""
    import hashlib

    from scaffold_local.backends.protocol import Request, Sampling
    from scaffold_local.records import Message

    request = Request(id="d/s/facts", messages=(Message(role="user", content='naïve "quoted"\ntext'),),
                      json_schema={"type": "object", "properties": {"b": {"z": 1, "a": [2, None]}}},
                      sampling=Sampling(max_tokens=9, top_logprobs=3))
    documented = hashlib.sha256(json.dumps({
        "judge": "fp", "messages": [m.model_dump() for m in request.messages], "schema": request.json_schema,
        "sampling": request.sampling.key_fields()}, sort_keys=True).encode()).hexdigest()
    assert request.cache_key("fp") == documented
    assert request.cache_key("fp", json.dumps(request.json_schema, sort_keys=True)) == documented
    no_schema = request.model_copy(update={"json_schema": None})
    assert no_schema.cache_key("fp") == hashlib.sha256(json.dumps({
        "judge": "fp", "messages": [m.model_dump() for m in request.messages], "schema": None,
        "sampling": request.sampling.key_fields()}, sort_keys=True).encode()).hexdigest()


def test_sentence_splits_are_kept_in_the_store_per_splitter(tmp_path):
    cache = JudgmentCache(tmp_path / "store")
    calls: list[str] = []

    def split(text: str) -> list[str]:
        calls.append(text)
        return text.split(". ")

    first = cache.sentences(["A. B", "C", "A. B"], "rules/1", split)
    assert first == {"A. B": ["A", "B"], "C": ["C"]} and calls == ["A. B", "C"]
    reopened = JudgmentCache(tmp_path / "store")
    assert reopened.sentences(["C", "A. B"], "rules/1", split) == first and len(calls) == 2  # nothing split again
    assert reopened.sentences(["C"], "rules/2", split) == {"C": ["C"]} and calls[-1] == "C"  # another splitter: split


def test_runs_open_still_reads_a_run_and_says_its_new_name():
    """`runs.open`, the name before `runs.load` (it shadowed the built-in), keeps working for scripts."""
    with pytest.warns(DeprecationWarning, match="runs.load"):
        assert runs.open is runs.load
