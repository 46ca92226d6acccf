"""The Inspect AI scorer: Inspect's mock model writes the summaries, the responder judges; FPS as
`score` gives it on the same (document, summary) pairs, and a second Inspect run extracts no scaffold."""

from __future__ import annotations

import math

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate

from scaffold_local import ModelConfig, Pipeline, load_input
from scaffold_local.integrations.inspect_scorer import SCORED, scaffold_scorer

from .helpers import FACTORY, LIBRARY, RESPONDER_CONFIG, SUMMARIES, write_jsonl

MOCK = "mockllm/model"
# The mock model answers each sample, in order, with the "details" summary of its document.
DETAILS = {d: summary for d, _, system, summary in SUMMARIES if system == "details"}


def _answer(summary: str) -> ModelOutput:
    output = ModelOutput.from_content(model=MOCK, content=summary)
    # Usage given: without it the mock model counts tokens with tiktoken, which downloads its encoding.
    output.usage = ModelUsage(input_tokens=1, output_tokens=len(summary.split()), total_tokens=1 + len(summary.split()))
    return output


def _run(tmp_path, store):
    model = get_model(MOCK, custom_outputs=[_answer(DETAILS[d]) for d in ("factory", "library")])
    task = Task(dataset=[Sample(input=FACTORY, id="factory"), Sample(input=LIBRARY, id="library")], solver=generate(),
                scorer=scaffold_scorer(judge=str(RESPONDER_CONFIG), store=str(store)))
    [log] = inspect_eval(task, model=model, max_samples=1, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    return log


def test_the_scorer_gives_what_score_gives_and_a_second_run_extracts_nothing(tmp_path):
    store = tmp_path / "store"
    log = _run(tmp_path, store)
    rows = [{"doc_id": d, "document": {"factory": FACTORY, "library": LIBRARY}[d], "system": MOCK, "summary": DETAILS[d]}
            for d in ("factory", "library")]
    expected = Pipeline(ModelConfig.load(str(RESPONDER_CONFIG)), tmp_path / "other").score(
        load_input(write_jsonl(tmp_path / "same.jsonl", rows)))
    by_doc = {s.doc_id: s.values for s in expected.summaries}
    for sample in log.samples:
        score = sample.scores["scaffold_scorer"]
        assert score.value["fps"] == by_doc[sample.id]["fps"] and score.value["fc"] == by_doc[sample.id]["fc"]
        assert score.metadata["scaffold"] == "extracted"
    means = {s.name: s.metrics["mean"].value for s in log.results.scores}
    assert math.isclose(means["fps"], sum(v["fps"] for v in by_doc.values()) / 2)
    assert set(means) == set(SCORED)

    scaffolds = sorted(p.name for p in (store / "scaffolds").rglob("*") if p.is_file())
    again = _run(tmp_path, store)
    assert [s.scores["scaffold_scorer"].metadata["scaffold"] for s in again.samples] == ["from the store"] * 2
    assert sorted(p.name for p in (store / "scaffolds").rglob("*") if p.is_file()) == scaffolds
    assert [s.scores["scaffold_scorer"].value for s in again.samples] == [s.scores["scaffold_scorer"].value
                                                                           for s in log.samples]
