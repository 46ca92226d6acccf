"""Scaffolds from any source: another judge's stored scaffolds, a finished run's, a user's file."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scaffold_local import runs
from scaffold_local.cli import app
from scaffold_local.data.loading import load_input
from scaffold_local.judging.config import ModelConfig
from scaffold_local.records import ScaffoldSource
from scaffold_local.runs.pipeline import Pipeline

from .helpers import RESPONDER_CONFIG, write_jsonl
from .test_pipeline import EXPECTED, CountingFactory


def _judge_b(tmp_path) -> ModelConfig:
    """A second judge: another config (its own fingerprint), answering by the same rules."""
    path = tmp_path / "judge-b.toml"
    path.write_text(f'extends = "{RESPONDER_CONFIG}"\nname = "judge-b"\nseed = 7\n', encoding="utf-8")
    return ModelConfig.load(str(path))


def test_judge_b_aligned_on_judge_a_scaffolds_gives_verdict_pairs_by_item_id(responder_config, small_input, tmp_path):
    store = tmp_path / "store"
    a = Pipeline(responder_config, store, backend_factory=CountingFactory()).score(load_input(small_input))
    factory = CountingFactory()
    judge_b = _judge_b(tmp_path)
    source = ScaffoldSource(kind="judge", reference=str(RESPONDER_CONFIG))
    b = Pipeline(judge_b, store, backend_factory=factory, scaffolds=source).score(load_input(small_input))
    assert not any("/extract/" in r for r in factory.requests)  # judge B extracted nothing
    assert b.requests_sent == 20  # its own judgments (its fingerprint is in every cache key)
    run_a, run_b = runs.load(a.run_dir), runs.load(b.run_dir)
    assert run_b.spec.scaffold_source.kind == "judge" and run_b.spec.scaffold_source.fingerprint == responder_config.fingerprint()
    assert run_b.spec.scaffold_keys == run_a.spec.scaffold_keys  # the very same scaffolds
    for doc_id, system in EXPECTED:
        verdicts_a = run_a.records_for(doc_id, system)["facts"].parsed
        verdicts_b = run_b.records_for(doc_id, system)["facts"].parsed
        assert list(verdicts_a) == list(verdicts_b)  # item by item: F1..Fn of one scaffold
        assert [v["inferred"] for v in verdicts_a.values()] == [v["inferred"] for v in verdicts_b.values()]


def test_a_judge_without_stored_scaffolds_leaves_its_documents_unjudged(responder_config, small_input, tmp_path):
    source = ScaffoldSource(kind="judge", reference=str(RESPONDER_CONFIG))
    factory = CountingFactory()
    outcome = Pipeline(_judge_b(tmp_path), tmp_path / "store", backend_factory=factory, scaffolds=source).score(
        load_input(small_input))
    assert factory.started == 0 and outcome.summaries == []
    assert set(outcome.failed_summaries) == {"factory/brief", "factory/details", "library/brief", "library/details"}
    assert "judge responder has no stored scaffold" in outcome.failed_summaries["factory/brief"]


def test_a_finished_run_lends_its_scaffolds(responder_config, small_input, tmp_path):
    store = tmp_path / "store"
    first = Pipeline(responder_config, store, backend_factory=CountingFactory()).score(load_input(small_input))
    factory = CountingFactory()
    source = ScaffoldSource(kind="run", reference=str(first.run_dir))
    second = Pipeline(_judge_b(tmp_path), store, backend_factory=factory, scaffolds=source).score(load_input(small_input))
    assert not any("/extract/" in r for r in factory.requests) and len(second.summaries) == 4
    assert runs.load(second.run_dir).spec.scaffold_source.reference == str(first.run_dir.resolve())


HUMAN_KEY_FACTS = [
    {"doc_id": "factory", "facts": ["Alpha Corp opened a factory in Denton on Monday.",
                                    {"text": "The factory employs 200 local workers.", "label": "supporting detail"},
                                    "alpha corp opened a factory in denton on monday."]},  # a repeat, dropped
    {"doc_id": "library", "facts": ["The Oakvale library now lends bicycles to members."],
     "entities": [{"name": "Oakvale Cycling Club", "kind": "org",
                   "attributes": ["The bicycles were donated by Oakvale Cycling Club."]}]},
    {"doc_id": "nowhere", "facts": ["Not in the input."]},
    {"doc_id": "factory", "facts": ["A second line for one document."]},
    {"doc_id": "library", "facts": [{"label": "main point"}]},
]


def test_a_user_scaffold_file_scores_with_no_extraction(responder_config, small_input, tmp_path):
    scaffold_file = write_jsonl(tmp_path / "key_facts.jsonl", HUMAN_KEY_FACTS)
    factory = CountingFactory()
    source = ScaffoldSource(kind="file", reference=str(scaffold_file), default_label="main point")
    outcome = Pipeline(responder_config, tmp_path / "store", backend_factory=factory, scaffolds=source).score(
        load_input(small_input))
    assert not any("/extract/" in r for r in factory.requests)
    # factory: F1 main, F2 supporting; questions and entities not given: never asked about.
    assert sorted(factory.requests) == sorted(f"{d}/{s}/{kind}" for d, s in EXPECTED
                                              for kind in (["facts", "faithfulness", "direct_score"]
                                                           + (["entities"] if d == "library" else [])))
    scores = {(s.doc_id, s.system): s for s in outcome.summaries}
    brief = scores["factory", "brief"]
    assert brief.values["main_fc"] == 1.0 and brief.values["supp_fc"] == 1.0 and brief.values["fps"] == 0.0
    assert brief.values["qps"] is None and brief.undefined["qps"] == "question view unavailable: not given in the scaffold file"
    assert scores["library", "details"].values["eps"] == 1.0
    issues = [(i.record, i.field, i.severity) for i in outcome.extraction.issues]
    assert issues == [(3, "doc_id", "warning"), (4, "doc_id", "error"), (5, "facts.0.text", "error")]
    scaffold = runs.load(outcome.run_dir).scaffold(runs.load(outcome.run_dir).spec.scaffold_keys["factory"])
    assert scaffold.origin == "user" and [n.action for n in scaffold.notes] == ["dropped duplicate"]


def test_cli_scaffold_sources(monkeypatch, small_input, tmp_path):
    from scaffold_local import cli

    monkeypatch.setattr(cli.console, "width", 220)
    monkeypatch.setattr(cli.err, "width", 220)
    runner = CliRunner()
    store = tmp_path / "store"
    base = ["score", str(small_input), "--store", str(store)]
    scaffold_file = write_jsonl(tmp_path / "key_facts.jsonl", HUMAN_KEY_FACTS[:2])
    result = runner.invoke(app, [*base, "-m", str(RESPONDER_CONFIG), "--scaffold-file", str(scaffold_file),
                                 "--default-label", "supporting detail"])
    assert result.exit_code == 0, result.output
    assert f"scaffolds: user scaffolds from {scaffold_file}" in result.output.replace("\n", "")
    run_dir = next((store / "runs").iterdir())
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["scaffold_source"]["kind"] == "file" and spec["scaffold_source"]["default_label"] == "supporting detail"
    shown = runner.invoke(app, ["show", str(run_dir)])
    assert "scaffolds: user scaffolds from" in shown.output

    both = runner.invoke(app, [*base, "-m", str(RESPONDER_CONFIG), "--scaffold-file", str(scaffold_file),
                               "--scaffolds-from", str(run_dir)])
    assert both.exit_code == 2 and "not both" in both.output
    missing = runner.invoke(app, [*base, "-m", str(RESPONDER_CONFIG), "--scaffold-file", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 2 and "scaffold file not found" in missing.output
    from_run = runner.invoke(app, [*base, "-m", str(RESPONDER_CONFIG), "--scaffolds-from", str(run_dir)])
    assert from_run.exit_code == 0, from_run.output
    assert "the scaffolds of run" in from_run.output.replace("\n", "")


@pytest.mark.parametrize("kind", ["judge", "run", "file"])
def test_the_source_is_part_of_the_run_identity(kind, responder_config, small_input, tmp_path):
    store = tmp_path / "store"
    first = Pipeline(responder_config, store, backend_factory=CountingFactory()).score(load_input(small_input))
    reference = {"judge": str(RESPONDER_CONFIG), "run": str(first.run_dir),
                 "file": str(write_jsonl(tmp_path / "s.jsonl", HUMAN_KEY_FACTS[:2]))}[kind]
    other = Pipeline(responder_config, store, backend_factory=CountingFactory(),
                     scaffolds=ScaffoldSource(kind=kind, reference=reference)).score(load_input(small_input))
    assert other.run_dir != first.run_dir


def test_extracted_scaffolds_written_to_a_file_score_as_the_extraction_did(monkeypatch, small_input, tmp_path):
    """`extract --out` writes a judge's scaffolds as a scaffold file, each line naming the judge and version that
    extracted it; scored against that file, every judgment is the extracted run's (the same prompts: nothing sent)
    and the metrics are the same; the run says where its scaffolds came from and how to extract them afresh."""
    from scaffold_local import cli

    monkeypatch.setattr(cli.err, "width", 220)
    runner = CliRunner()
    store, shipped = tmp_path / "store", tmp_path / "small.scaffolds.jsonl"
    common = [str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store), "--method-version", "15"]
    assert runner.invoke(app, ["score", *common]).exit_code == 0
    extracted = next((store / "runs").iterdir())
    assert runner.invoke(app, ["extract", *common, "--out", str(shipped)]).exit_code == 0
    lines = [json.loads(line) for line in shipped.read_text().splitlines()]
    assert {line["extracted_by"] for line in lines} == {"responder, method version 15"}
    result = runner.invoke(app, ["score", *common, "--scaffold-file", str(shipped), "--run-name", "shipped"])
    assert result.exit_code == 0, result.output
    said = result.output.replace("\n", "")
    assert f"scaffolds: extracted once by responder, method version 15, read from {shipped}" in said
    assert f"to extract them afresh: scaffold-local score {small_input}" in said
    assert "judgments: 0 sent" in said
    assert json.loads((store / "runs" / "shipped" / "systems.json").read_text()) == \
        json.loads((extracted / "systems.json").read_text())
