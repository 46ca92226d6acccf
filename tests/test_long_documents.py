"""Chunked mode: a document longer than the judge's context is cut on paragraph boundaries with
overlap, extracted chunk by chunk, merged (repeats dropped, each item keeping its chunk), labelled
for the whole document by one judge pass, and its summaries' sentence checks and direct scores read
the passages relevant to them. No request ever exceeds the context."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold_local.backends.responder import ResponderTokens
from scaffold_local.cli import app
from scaffold_local.data.inputs import Document
from scaffold_local.data.loading import load_records
from scaffold_local.judging.config import ModelConfig
from scaffold_local.judging.context_fit import LONG_INPUT_CHARS, fit_context
from scaffold_local.judging.judge import Judge
from scaffold_local.judging.long_documents import (
    EXCERPT_GAP,
    PASSAGES_PER_SENTENCE,
    chunk,
    excerpt,
    merge,
    passages,
    with_labels,
)
from scaffold_local.method.scaffold import Scaffold
from scaffold_local.method.text import sha256_text
from scaffold_local.runs.pipeline import Pipeline

from .helpers import RESPONDER_CONFIG, write_jsonl
from .test_hostile_input import Counting, config_file

runner = CliRunner()

TOPICS = ["harbor", "school", "clinic", "festival", "bus", "lighthouse", "library", "market", "bridge", "park",
          "museum", "stadium", "airport", "ferry", "theatre", "zoo", "pier", "tunnel", "canal", "garden"]


def paragraph(topic: str) -> str:
    return " ".join(f"The {topic} plan of Port Ellis sets aside {n * 7 + len(topic)} thousand dollars for {topic} "
                    f"works in phase {n} of the plan." for n in range(1, 7))


REPORT = "Port Ellis annual report.\n\n" + "\n\n".join(paragraph(t) for t in TOPICS)
SUMMARY = ("The museum plan of Port Ellis sets aside 13 thousand dollars for museum works in phase 1 of the plan. "
           "The bridge plan of Port Ellis sets aside 20 thousand dollars for bridge works in phase 2 of the plan.")


pytestmark = pytest.mark.usefixtures("wide_console")


@pytest.fixture
def small_context() -> ModelConfig:
    """The responder with a context that REPORT (about 3,200 of its tokens) fits neither beside the
    extraction budget of 2,048 nor in one sentence check."""
    config = ModelConfig.load(str(RESPONDER_CONFIG))
    # Room in a chunk's extraction for each of its sentences, so the overlap repeats facts across chunks.
    limits = config.limits.model_copy(update={"max_facts": 60})
    return config.model_copy(update={"max_model_len": 3400, "limits": limits})


def doc(text: str, doc_id: str = "report") -> Document:
    return Document(doc_id=doc_id, text=text, sha256=sha256_text(text))


def test_chunks_follow_paragraphs_overlap_by_one_and_each_fits():
    def fits(text: str) -> bool:
        return len(text) <= 2000

    parts = chunk(doc(REPORT), fits)
    assert parts is not None and len(parts) > 2 and all(fits(p.text) for p in parts)
    assert [p.doc_id for p in parts[:2]] == ["report#1", "report#2"]
    paragraphs = REPORT.split("\n\n")
    for before, after in zip(parts, parts[1:]):
        assert after.text.split("\n\n")[0] == before.text.split("\n\n")[-1]  # the overlap
        assert after.text.split("\n\n")[0] in paragraphs  # cut on paragraph boundaries
    assert set(paragraphs) == {p for part in parts for p in part.text.split("\n\n")}  # nothing left out
    # A paragraph too long alone is cut on its sentences; a sentence too long alone cannot be cut.
    sentences = chunk(doc(paragraph("harbor")), lambda text: len(text) <= 200)
    assert sentences is not None and all(p.text.count(". ") <= 1 for p in sentences)
    assert chunk(doc("one sentence " * 50 + "."), lambda text: len(text) <= 100) is None


def _chunk_scaffold(doc_id: str, facts: list[tuple[str, str]], attributes: list[str]) -> Scaffold:
    return Scaffold(key=f"k-{doc_id}", doc_id=doc_id, document_sha256="0" * 64,
                    facts=[{"id": f"F{i}", "text": t, "label": label} for i, (t, label) in enumerate(facts, 1)],
                    entities=[{"id": "E1", "name": "Ana Ruiz", "kind": "person", "attributes": [
                        {"id": f"E1.A{i}", "text": a, "label": "supporting detail"} for i, a in enumerate(attributes, 1)]}])


def test_merge_drops_repeats_across_chunks_and_labels_for_the_whole_document():
    one = _chunk_scaffold("r#1", [("The council met.", "main point"), ("The bridge costs $40M.", "main point")], ["mayor"])
    two = _chunk_scaffold("r#2", [("the  council met.", "supporting detail"), ("Work starts in March.", "main point")],
                          ["mayor"])
    merged = merge(doc("x", "r"), [one, two], "merged-key")
    assert merged.key == "merged-key" and merged.members == ()
    assert [(f.id, f.text) for f in merged.items("facts")] == [
        ("F1", "The council met."), ("F2", "The bridge costs $40M."), ("F3", "Work starts in March.")]
    assert merged.item_sources == {"F1": "r#1", "F2": "r#1", "F3": "r#2", "E1": "r#1"}  # E1 of r#2 repeats E1
    dropped = [n.detail for n in merged.notes if n.action == "dropped duplicate"]
    assert dropped == ["F1 of r#2 repeats an item of r#1", "E1 of r#2 repeats an item of r#1"]
    labelled = with_labels(merged, {"F1": "supporting detail", "F2": "main point", "F3": "other",
                                    "E1.A1": "main point"})
    assert [f.label for f in labelled.items("facts")] == ["supporting detail", "main point", "other"]
    assert labelled.items("entities")[0].attributes[0].label == "main point"
    kept = with_labels(merged, {"F3": "other"}, "report/label_items/1: output not valid")
    assert [f.label for f in kept.items("facts")] == ["main point", "main point", "other"]
    assert kept.notes[-1].action == "labels of the parts kept"
    assert kept.notes[-1].detail == "report/label_items/1: output not valid"


def test_the_excerpt_holds_each_sentences_best_passage_in_document_order():
    found = passages(REPORT)
    assert len(found) == len(TOPICS) + 1
    sentences = ["The museum plan sets aside 13 thousand dollars.", "The bridge plan is in phase 2."]
    short = excerpt(doc(REPORT), sentences, lambda text: len(text) <= 2 * len(found[1]) + len(EXCERPT_GAP))
    museum, bridge = paragraph("museum"), paragraph("bridge")
    assert short.text == bridge + EXCERPT_GAP + museum  # bridge comes first in the document
    roomy = excerpt(doc(REPORT), sentences, lambda text: True)  # at most PASSAGES_PER_SENTENCE for each sentence
    taken = roomy.text.replace(EXCERPT_GAP, "\n\n").split("\n\n")
    assert museum in taken and bridge in taken and len(taken) <= 2 * PASSAGES_PER_SENTENCE < len(found)


def _run(config: ModelConfig, tmp_path, records: list[dict], counting: Counting, **fit_options):
    loaded = load_records(records)
    fit = fit_context(Judge(config), loaded, **fit_options)
    outcome = Pipeline(config, tmp_path / "store", backend_factory=counting).score(fit.loaded)
    return fit, outcome


def test_a_long_document_is_scored_in_chunked_mode_and_no_request_exceeds_the_context(small_context, tmp_path):
    records = [{"doc_id": "report", "document": REPORT, "system": "two-topics", "summary": SUMMARY},
               {"doc_id": "report", "document": REPORT, "system": "off", "summary": "The town built a zoo."}]
    counting = Counting()
    fit, outcome = _run(small_context, tmp_path, records, counting)
    [issue] = fit.issues
    assert issue.severity == "warning" and "scored in chunked mode: " in issue.message
    parts = fit.loaded.chunks["report"]
    assert len(parts) >= 2 and f"{len(parts)} chunks on paragraph boundaries" in issue.message

    # Every request sent fitted: prompt (counted as the responder counts) + max_tokens <= max_model_len.
    sizes = [(r.context["task"], ResponderTokens().count(r.messages) + r.sampling.max_tokens) for r in counting.requests]
    assert sizes and max(size for _, size in sizes) <= small_context.max_model_len
    tasks = [task for task, _ in sizes]
    assert tasks.count("extract_facts") == len(parts) and tasks.count("label_items") >= 1
    assert not outcome.failures and not outcome.failed_summaries

    # The merged scaffold: every item keeps its chunk, and has the label the labelling pass gave it (asked
    # in parts here: the merged list is too long for one answer in this context), not its chunk's.
    run_spec = json.loads((outcome.run_dir / "spec.json").read_text())
    assert "label_items" in run_spec["prompts"] and run_spec["counts"]["chunked_documents"] == 1
    scaffold = outcome.extraction.scaffolds["report"]
    assert set(scaffold.item_sources.values()) == {p.doc_id for p in parts}
    given = {i: label for r in outcome.extraction.records if r.task == "label_items" for i, label in r.parsed.items()}
    facts = scaffold.items("facts")
    assert {f.id: f.label for f in facts} == {f.id: given[f.id] for f in facts}
    from_chunks = {(f.text, f.label) for part in parts for f in Pipeline(small_context, tmp_path / "store").scaffolds_for(
        [part]).scaffolds[part.doc_id].items("facts")}
    assert {(f.text, f.label) for f in facts} != {(t, label) for t, label in from_chunks if t in {f.text for f in facts}}
    assert any(n.action == "dropped duplicate" and "repeats an item of report#" in n.detail for n in scaffold.notes)

    # The sentence check read the passages relevant to the summary, not the whole document.
    check = next(r for r in counting.requests if r.context["task"] == "check_faithfulness"
                 and r.context["summary"] == SUMMARY)
    assert paragraph("museum") in check.context["document"] and paragraph("bridge") in check.context["document"]
    assert len(check.context["document"]) < len(REPORT)
    scores = {s.system: s.values for s in outcome.summaries}
    assert scores["two-topics"]["f"] == 1.0  # both sentences found in their passages
    assert scores["two-topics"]["fc"] > scores["off"]["fc"] == 0.0

    # A second run sends nothing: chunk scaffolds, the merged scaffold and every judgment are stored.
    again = Counting()
    _, second = _run(small_context, tmp_path, records, again)
    assert not again.requests and second.extraction.scaffolds["report"] == scaffold


def test_fitting_a_long_input_to_the_context_shows_its_progress():
    """Counting and splitting 100,000 characters takes seconds before anything is sent: a progress line says what
    is happening; a short input gets none."""
    shown: list[tuple[str, int, int]] = []

    @contextlib.contextmanager
    def progress(label: str, total: int):
        done = [0]
        yield lambda n, detail="": done.__setitem__(0, done[0] + n)
        shown.append((label, total, done[0]))

    config = ModelConfig.load(str(RESPONDER_CONFIG))
    long = [{"doc_id": f"report-{i}", "document": REPORT * 5, "system": "a", "summary": SUMMARY} for i in range(2)]
    assert len(REPORT * 10) >= LONG_INPUT_CHARS
    fit_context(Judge(config), load_records(long), progress=progress)
    assert shown == [("fitting documents to the judge's context", 2, 2)]
    fit_context(Judge(config), load_records([{**long[0], "document": REPORT}]), progress=progress)
    assert len(shown) == 1


def test_chunk_tokens_forces_chunked_mode_from_the_command_line(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", [{"doc_id": "report", "document": REPORT, "system": "a",
                                                "summary": SUMMARY}])
    result = runner.invoke(app, ["score", str(path), "-m", str(RESPONDER_CONFIG), "--store", str(tmp_path / "s"),
                                 "--chunk-tokens", "600"])
    assert result.exit_code == 0, result.output
    assert "longer than --chunk-tokens 600; scored in chunked mode" in result.output
    scaffold_key = json.loads(next((tmp_path / "s" / "runs").glob("*/spec.json")).read_text())["scaffold_keys"]["report"]
    stored = json.loads(next((tmp_path / "s" / "scaffolds").glob(f"*/{scaffold_key}.json")).read_text())
    assert len(set(stored["scaffold"]["item_sources"].values())) >= 5  # 3,200 tokens in chunks of at most 600
    result = runner.invoke(app, ["show", str(next((tmp_path / "s" / "runs").iterdir())), "--summary", "report/a"])
    assert "[report#" in result.output  # each item names its chunk


EXAMPLE = Path(__file__).parent.parent / "examples" / "long.jsonl"


@pytest.mark.real_model
def test_the_long_example_on_the_embedded_model_in_chunked_mode_never_exceeds_its_context(tmp_path):
    """A summary of examples/long.jsonl (a report longer than SmolLM2-135M's 8,192 tokens) end to end on
    the real engine: chunked, every output schema-valid, and no request's prompt + max_tokens over the
    context, by the engine's own token counts."""
    config = ModelConfig.load("smollm2-135m-llama-cpp")
    text = json.loads(EXAMPLE.read_text(encoding="utf-8").splitlines()[0])["document"]
    from scaffold_local.judging.context_fit import token_counter
    from scaffold_local.records import Message

    assert token_counter(config).count((Message(role="user", content=text),)) > config.max_model_len
    store = tmp_path / "store"
    one = write_jsonl(tmp_path / "one.jsonl", [json.loads(EXAMPLE.read_text(encoding="utf-8").splitlines()[0])])
    result = runner.invoke(app, ["score", str(one), "-m", config.name, "--store", str(store), "--allow-partial"])  # one summary: time
    assert result.exit_code == 0, result.output
    assert "scored in chunked mode" in result.output and "llama_context" not in result.output
    run_dir = next((store / "runs").iterdir())
    judgments = [json.loads(line) for line in (run_dir / "records.jsonl").open()]
    stored = [json.loads(p.read_text())["records"] for p in (store / "scaffolds").rglob("*.json")]
    every = [*judgments, *(r for records in stored for r in records)]
    tasks = {r["task"] for r in every}
    assert {"extract_facts", "label_items", "align_facts", "check_faithfulness", "direct_score"} <= tasks
    assert all(r["parsed"] is not None and r["validation_error"] is None for r in every), [
        (r["task"], r["validation_error"] or r["error"]) for r in every if r["parsed"] is None]
    sizes = [r["usage"]["prompt_tokens"] + r["max_tokens"] for r in every]
    assert max(sizes) <= config.max_model_len and not any(r["failure"] == "context_overflow" for r in every)
    spec = json.loads((run_dir / "spec.json").read_text())
    scaffold = json.loads(next((store / "scaffolds").rglob(f"{spec['scaffold_keys']['port-ellis-annual-report']}.json"))
                          .read_text())["scaffold"]
    assert len(set(scaffold["item_sources"].values())) >= 2  # items from every chunk


def test_extract_alone_stores_the_merged_scaffold_that_score_then_reuses(tmp_path):
    config = config_file(tmp_path, max_model_len=3400)
    path = write_jsonl(tmp_path / "in.jsonl", [{"doc_id": "report", "document": REPORT, "system": "a",
                                                "summary": SUMMARY}])
    common = ["-m", str(config), "--store", str(tmp_path / "s")]
    result = runner.invoke(app, ["extract", str(path), *common])
    assert result.exit_code == 0, result.output
    assert "scored in chunked mode" in result.output and "report" in result.output
    counting = Counting()
    loaded = fit_context(Judge(ModelConfig.load(str(config))), load_records(
        [json.loads(path.read_text().splitlines()[0])])).loaded
    Pipeline(ModelConfig.load(str(config)), tmp_path / "s", backend_factory=counting).score(loaded)
    assert counting.requests and not {r.context["task"] for r in counting.requests} & {
        "extract_facts", "extract_questions", "extract_entities", "label_items"}  # nothing extracted again
