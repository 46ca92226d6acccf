"""The real embedded model (SmolLM2-135M-Instruct) through the transformers backend on CPU.

These tests assert the machinery, not judge quality: every stored output is valid JSON for its
own schema, and every scaffold item received exactly one verdict, in order.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from scaffold_local.config import ModelConfig
from scaffold_local.data import load_input
from scaffold_local.pipeline import Pipeline
from scaffold_local.store import ScaffoldStore
from scaffold_local.text import split_sentences

from .helpers import SUMMARIES, write_jsonl

pytestmark = pytest.mark.real_model


def _keys_in_order(text: str) -> list[str]:
    pairs = json.loads(text, object_pairs_hook=lambda p: p)  # keep duplicates visible
    return [k for k, _ in pairs]


@pytest.fixture(scope="module")
def embedded_run(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    path = write_jsonl(tmp_path_factory.mktemp("in") / "in.jsonl", [
        {"doc_id": d, "document": text, "system": s, "summary": summary} for d, text, s, summary in SUMMARIES
    ])
    config = ModelConfig.load()  # the default: embedded model, transformers backend
    assert config.model == "embedded:smollm2-135m-instruct"
    pipeline = Pipeline(config, store)
    loaded = load_input(path)
    try:
        outcome = pipeline.score(loaded)
    finally:
        pipeline.close()
    return config, store, loaded, outcome, pipeline


def test_every_extraction_output_is_schema_valid(embedded_run):
    config, store, loaded, outcome, pipeline = embedded_run
    assert outcome.extraction.computed == len(loaded.documents)
    for document in loaded.documents.values():
        stored = ScaffoldStore(store).get(pipeline.judge.scaffold_key(document))
        planned = {p.task: p.request for p in pipeline.judge.extraction_requests(document)}
        assert len(stored.records) == 3
        for record in stored.records:
            assert record.finish_reason == "stop", (record.request_id, record.text)
            jsonschema.validate(json.loads(record.text), planned[record.task].json_schema)
            assert record.parsed is not None
        assert stored.scaffold.facts and stored.scaffold.questions and stored.scaffold.entities


def test_every_judgment_is_schema_valid_with_one_verdict_per_item(embedded_run):
    config, store, loaded, outcome, pipeline = embedded_run
    records = {r["cache_key"]: r for r in (json.loads(l) for l in (outcome.run_dir / "records.jsonl").read_text().splitlines())}
    checked = 0
    for candidate in loaded.candidates:
        scaffold = outcome.extraction.scaffolds[candidate.doc_id]
        n_sentences = len(split_sentences(candidate.summary))
        for planned in pipeline.judge.judgment_requests(scaffold, loaded.documents[candidate.doc_id], candidate):
            record = records[planned.cache_key]
            assert record["finish_reason"] == "stop", (record["request_id"], record["text"])
            jsonschema.validate(json.loads(record["text"]), planned.request.json_schema)
            keys = _keys_in_order(record["text"])
            expected = {
                "align_facts": [f.id for f in scaffold.facts],
                "align_questions": [q.id for q in scaffold.questions],
                "align_entities": [e.id for e in scaffold.entities if e.attributes],
                "check_faithfulness": [f"S{i}" for i in range(1, n_sentences + 1)],
                "direct_score": ["rationale", "faithfulness", "completeness", "understandability", "hallucination"],
            }[planned.task]
            assert keys == expected, (planned.request.id, keys)
            checked += 1
    assert checked == len(loaded.candidates) * 5


def test_metrics_are_computed_for_every_summary(embedded_run):
    config, store, loaded, outcome, pipeline = embedded_run
    assert len(outcome.summaries) == len(loaded.candidates) and outcome.engine_errors == 0
    for summary in outcome.summaries:
        for key in ("fc", "qc", "eps", "f", "ds_faithfulness"):
            value = summary.values[key]
            assert value is not None or key in summary.undefined, (summary.doc_id, summary.system, key)
            if value is not None:
                assert 0.0 <= value <= 10.0


def test_rerun_is_served_from_the_store(embedded_run):
    config, store, loaded, outcome, pipeline = embedded_run
    started = []
    again = Pipeline(config, store, backend_factory=lambda c: started.append(c) or pytest.fail("engine started"))
    second = again.score(loaded)
    assert started == [] and second.requests_sent == 0
    assert [s.values for s in second.summaries] == [s.values for s in outcome.summaries]
