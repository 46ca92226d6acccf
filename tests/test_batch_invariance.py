"""The same verdict whatever shares the batch, on the real embedded judge (Qwen2.5-Coder-1.5B on llama.cpp):
under method version 7 (each reading decoded alone) and version 17 (each task's readings of a summary decoded
together) a document scored alone and inside a larger file gets identical probabilities for every item, to the bit,
and under version 17 (the default) with the file's lines in another order too. Scaffolds come from a file written
here, so no extraction runs (about 2 minutes a version on 2 cores)."""

from __future__ import annotations

import json

import pytest

from scaffold_local.data.loading import load_input
from scaffold_local.judging.config import DEFAULT_MODEL, ModelConfig
from scaffold_local.records import ScaffoldSource
from scaffold_local.runs.pipeline import Pipeline

from .helpers import TESTS, write_jsonl

pytestmark = pytest.mark.real_model

SCAFFOLDS = [
    {"doc_id": "seed-library",
     "facts": [{"text": "The Oakdale Public Library opened a seed library.", "label": "main point"},
               {"text": "Residents borrow seeds for free.", "label": "main point"},
               {"text": "The program started with 3000 donated packets.", "label": "supporting detail"},
               {"text": "Posted in Community News.", "label": "other"}],
     "questions": [{"question": "What can residents borrow?", "expected_answer": "Vegetable and flower seeds.",
                    "label": "main point"}],
     "entities": [{"name": "Priya Nair", "kind": "person", "attributes": [
         {"text": "Priya Nair is the librarian.", "label": "supporting detail"},
         {"text": "Priya Nair said tomatoes were popular.", "label": "other"}]}]},
    {"doc_id": "heater-recall",
     "facts": [{"text": "Brightway Appliances is recalling 85000 portable heaters.", "label": "main point"},
               {"text": "A faulty switch can overheat.", "label": "main point"}],
     "questions": [{"question": "How many heaters are recalled?", "expected_answer": "85000.", "label": "main point"}],
     "entities": [{"name": "Brightway Appliances", "kind": "org", "attributes": [
         {"text": "Brightway Appliances makes portable heaters.", "label": "main point"}]}]},
]


def _alternatives(outcome, doc_id: str) -> dict[str, dict[str, float]]:
    records = [json.loads(line) for line in (outcome.run_dir / "records.jsonl").read_text().splitlines()]
    return {r["request_id"]: r["next_token"] for r in records if r["doc_id"] == doc_id}


@pytest.mark.parametrize("version", [7, 17])  # each reading decoded alone; each task's readings of a summary together
def test_a_document_alone_inside_a_larger_file_and_in_another_order_reads_the_same(tmp_path, version):
    lines = [json.loads(line) for line in (TESTS / "data" / "news.jsonl").read_text().splitlines()]
    scaffolds = write_jsonl(tmp_path / "scaffolds.jsonl", SCAFFOLDS)
    config = ModelConfig.load(DEFAULT_MODEL)

    def score(name: str, rows: list[dict]) -> object:
        pipeline = Pipeline(config, tmp_path / name, method=version, scaffolds=ScaffoldSource(kind="file", reference=str(scaffolds)))
        try:
            return pipeline.score(load_input(write_jsonl(tmp_path / f"{name}.jsonl", rows)))
        finally:
            pipeline.close()

    together = score("together", lines)
    alone = score("alone", [row for row in lines if row["doc_id"] == "seed-library"])
    first = _alternatives(together, "seed-library")
    # every verdict, sentence, category and grade reading of the document: 2 summaries, nothing generated
    assert len(first) > 30 and all(first.values()) and together.usage.judgments.completion_tokens == 0
    assert not any(request.endswith(("/F4", "/F4/evidence")) for request in first)  # "other" facts are not asked
    assert _alternatives(alone, "seed-library") == first  # to the bit
    assert [s.values for s in alone.summaries] == [s.values for s in together.summaries if s.doc_id == "seed-library"]
    if version == 17:  # the default's readings in another order too (a minute on 2 cores; version 7's alone suffices)
        reversed_order = score("reversed", lines[::-1])
        assert _alternatives(reversed_order, "seed-library") == first
        assert _alternatives(reversed_order, "heater-recall") == _alternatives(together, "heater-recall")


def test_the_engine_reports_each_reading_as_it_finishes(tmp_path):
    """What a kill keeps: llama.cpp hands each reading over as it finishes, before its call returns (the
    dispatcher stores it then), the same result the call returns."""
    from scaffold_local.backends import create_backend
    from scaffold_local.data.inputs import Candidate, Document
    from scaffold_local.judging.judge import Judge
    from scaffold_local.method.scaffold import Scaffold
    from scaffold_local.method.versions import method_version
    from scaffold_local.method.views.facts import Fact

    config = ModelConfig.load("smollm2-135m-llama-cpp")
    judge = Judge(config, method_version(7))
    document = Document(doc_id="d", text="A storm cut power to 3,000 homes. Crews fix it by Sunday.", sha256="0" * 64)
    scaffold = Scaffold(key="k", doc_id="d", document_sha256=document.sha256, questions=(), entities=(),
                        facts=(Fact(id="F1", text="A storm cut power.", label="main point"),
                               Fact(id="F2", text="Crews fix it by Sunday.", label="supporting detail")))
    planned = judge.plan(scaffold, document, Candidate(record=1, doc_id="d", system="s", summary="A storm cut power."))
    backend = create_backend(config)
    reported: list[tuple[int, object]] = []
    backend.on_result = lambda index, result: reported.append((index, result))
    try:
        results = backend.generate([p.request for p in planned])
    finally:
        backend.close()
    assert [i for i, _ in reported] == list(range(len(planned))) and [r for _, r in reported] == results
