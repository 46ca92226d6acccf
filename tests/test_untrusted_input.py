"""Untrusted input stays data: run names, document ids and system names never lead a file out of the
store, and the hosted backend's API key never reaches a file, a log or the console."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold_local import runs
from scaffold_local.backends.responder import ResponderBackend
from scaffold_local.cli import app
from scaffold_local.data.loading import load_input
from scaffold_local.data.store import RunFolder, RunNameError, ScaffoldStore
from scaffold_local.errors import RunNotReadable
from scaffold_local.judging.config import ModelConfig
from scaffold_local.runs.pipeline import Pipeline

from .helpers import FACTORY, LIBRARY, RESPONDER_CONFIG, hosted_config_file, minimal_instance, write_jsonl
from .test_openai_backend import Stub

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("wide_console")


def files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def assert_all_inside(folder: Path, store: Path, allowed: set[Path] = frozenset()) -> None:
    """Every file under `folder` is in the store, or one of `allowed` (the test's own inputs)."""
    outside = [p for p in files_under(folder) if p not in allowed and not p.resolve().is_relative_to(store.resolve())]
    assert outside == []


@pytest.mark.parametrize("name", ["../../escape", "../escape", "/tmp/escape", "a/b", "a\\b", "..", "...", ".", "",
                                  "a\0b", "run..name", "ünïcode", "x" * 201])
def test_score_refuses_a_run_name_that_is_not_one_plain_folder(small_input, tmp_path, name):
    store = tmp_path / "store"
    result = runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store),
                                 "--run-name", name])
    assert result.exit_code == 2, result.output
    assert f"--run-name {name!r} is not a valid run name" in result.output.replace("\n", "")
    assert "letters A-Z and a-z, digits 0-9, '.', '_' and '-'" in result.output
    assert files_under(tmp_path) == [small_input]  # checked before anything is read or written
    assert not (tmp_path / "escape").exists()


def test_the_python_api_refuses_it_too(responder_config, small_input, tmp_path):
    pipeline = Pipeline(responder_config, tmp_path / "store", backend_factory=ResponderBackend)
    try:
        with pytest.raises(RunNameError, match=r"run_name '\.\./\.\./escape' is not a valid run name"):
            pipeline.score(load_input(small_input), "../../escape")
    finally:
        pipeline.close()
    assert not (tmp_path / "escape").exists() and not (tmp_path / "store" / "runs").exists()
    with pytest.raises(RunNameError, match="not a single folder name"):
        RunFolder(tmp_path / "store", "../x")  # whoever derives a run id


def test_a_plain_run_name_is_used_as_given(responder_config, small_input, tmp_path):
    pipeline = Pipeline(responder_config, tmp_path / "store", backend_factory=ResponderBackend)
    try:
        outcome = pipeline.score(load_input(small_input), "news_v2.1-final")
    finally:
        pipeline.close()
    assert outcome.run_dir == tmp_path / "store" / "runs" / "news_v2.1-final"


def test_path_like_doc_ids_and_system_names_are_scored_and_written_only_inside_the_store(tmp_path):
    work = tmp_path / "deep" / "er"
    work.mkdir(parents=True)
    store = work / "store"
    rows = [
        {"doc_id": "a/../../b", "document": FACTORY, "system": "../../sys", "summary": "Alpha Corp opened a factory."},
        {"doc_id": "a/../../b", "document": FACTORY, "system": "x/y", "summary": "The factory employs 200 local workers."},
        {"doc_id": "/etc/../../..", "document": LIBRARY, "system": "..", "summary": "The library lends bicycles."},
    ]
    source = write_jsonl(work / "in.jsonl", rows)
    scaffold_file = work / "scaffolds.jsonl"
    scaffold_file.write_text(json.dumps({"doc_id": "/etc/../../..", "facts": ["The library lends bicycles."]}) + "\n")
    base = ["score", str(source), "-m", str(RESPONDER_CONFIG), "--store", str(store)]
    # the scaffold file gives one document's scaffold only: the other's summaries are not judged (partial, allowed)
    for args in (base, [*base, "--scaffold-file", str(scaffold_file), "--run-name", "given", "--allow-partial"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output

    assert_all_inside(tmp_path, store, allowed={source, scaffold_file})
    run_dirs = list((store / "runs").iterdir())
    assert len(run_dirs) == 2 and all(d.parent == store / "runs" for d in run_dirs)
    extracted = next(d for d in run_dirs if d.name != "given")
    scored = {(s["doc_id"], s["system"]) for s in map(json.loads, (extracted / "summaries.jsonl").read_text().splitlines())}
    assert scored == {("a/../../b", "../../sys"), ("a/../../b", "x/y"), ("/etc/../../..", "..")}  # ids kept as data
    evidence = runner.invoke(app, ["show", str(store / "runs" / "given"), "--summary", "/etc/../../../.."])
    assert evidence.exit_code == 0, evidence.output


def test_a_scaffold_key_read_from_a_file_cannot_name_a_path(tmp_path):
    store = ScaffoldStore(tmp_path / "store")
    assert store.get("../../../etc/passwd") is None
    with pytest.raises(ValueError, match="not a scaffold key"):
        store.path("../x")


def test_a_judge_name_cannot_be_a_path(tmp_path):
    config = tmp_path / "judge.toml"
    config.write_text(f'extends = "{RESPONDER_CONFIG}"\nname = "../../judge"\n')
    with pytest.raises(ValueError, match="name '../../judge' must be usable as a folder name"):
        ModelConfig.load(str(config))


def test_run_open_of_a_dot_path_is_not_a_run(tmp_path):
    with pytest.raises(RunNotReadable, match="not a run folder"):
        runs.load(tmp_path / "..")


SECRET = "sk-test-7f3a9c-DO-NOT-LEAK-e41b"


def test_the_api_key_goes_only_to_the_server(small_input, tmp_path, monkeypatch, caplog):
    def answer(body: dict) -> tuple[int, str]:
        schema = body["response_format"]["json_schema"]["schema"]
        return 200, json.dumps(minimal_instance(schema))

    stub = Stub(answer)
    try:
        monkeypatch.setenv("SCAFFOLD_TEST_API_KEY", SECRET)
        config = hosted_config_file(tmp_path / "hosted.toml", stub.url, api_key_env="SCAFFOLD_TEST_API_KEY",
                                    method_version=2, max_retries=0)
        store = tmp_path / "store"
        caplog.set_level(logging.DEBUG)
        result = runner.invoke(app, ["score", str(small_input), "-m", str(config), "--store", str(store)])
    finally:
        stub.close()
    assert result.exit_code == 0, result.output
    assert len(stub.headers) == 26  # 2 documents x 3 extractions + 4 summaries x 5 judgments
    assert all(h.get("Authorization") == f"Bearer {SECRET}" for h in stub.headers)

    run_dir = next((store / "runs").iterdir())
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["judge"]["engine"]["api_key_env"] == "SCAFFOLD_TEST_API_KEY"  # the variable's name, never its value
    written = files_under(tmp_path)
    assert any(p.name == "cache.sqlite" for p in written) and any(p.parent == run_dir for p in written)
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in result.output and SECRET not in caplog.text
