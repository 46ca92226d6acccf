"""Extending the method from outside the package: a "numbers" view (the numbers a document states,
each kept by a summary or not) defined here, in the tests alone, with its own templates
(tests/data/numbers_view/), added to a method version of its own and run end to end by `score` on
the responder, touching no package file; the versions that do not name it are unchanged."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field
from typer.testing import CliRunner

from scaffold_local import ModelConfig, runs
from scaffold_local.backends.responder_rules import ResponderRules, register_rules, unregister_rules
from scaffold_local.cli import app
from scaffold_local.data.inputs import Document
from scaffold_local.data.store import ScaffoldStore
from scaffold_local.judging.judge import Judge
from scaffold_local.judging.prompts import load_prompts
from scaffold_local.method.schemas import Label, SchemaLimits, statement, strict_model
from scaffold_local.method.text import split_sentences
from scaffold_local.method.versions import METHOD_VERSIONS, PAPER_VIEWS, MethodVersion
from scaffold_local.method.views import (
    METRICS,
    JudgedItem,
    ReadingRules,
    ViewSpec,
    ViewVerdicts,
    register,
    tasks_of,
    unregister,
)
from scaffold_local.method.views.assembly import unique
from scaffold_local.method.views.scoring import Scores, verdicts_of

from .helpers import FACTORY, RESPONDER_CONFIG


class Number(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    value: str
    claim: str
    label: Label


def extraction_model(limits: SchemaLimits, method: MethodVersion) -> type[BaseModel]:
    item = strict_model("ExtractedNumber", value=(str, Field(min_length=1, max_length=20)),
                        claim=(statement(limits), ...), label=(Label, ...))
    return strict_model("NumberExtraction", numbers=(list[item], Field(max_length=20)))  # a document may state none


@lru_cache
def alignment_model(ids: tuple[str, ...]) -> type[BaseModel]:
    verdict = strict_model("NumberVerdict", stated=(bool, ...))
    return strict_model("NumberAlignment", **{i: (verdict, ...) for i in ids})


def assemble(parsed: Mapping[str, Any]) -> Any:
    items, notes = unique(parsed["numbers"], "value", "numbers", lambda i: f"N{i}", "number")
    return tuple(Number(id=f"N{i}", value=n["value"], claim=n["claim"], label=n["label"])
                 for i, n in enumerate(items, 1)), notes


def score(out: Scores, judged: Sequence[JudgedItem], verdicts: ViewVerdicts, n_sentences: int) -> None:
    out.share("nps", verdicts_of(judged, verdicts), "number", "the document states no number")


def respond_extract(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Each number of the document, with its sentence; the first is the main point."""
    found = [(value, sentence) for sentence in split_sentences(ctx["document"])
             for value in re.findall(r"\b\d+\b", sentence)]
    return {"numbers": [{"value": value, "claim": sentence, "label": "main point" if i == 0 else "supporting detail"}
                        for i, (value, sentence) in enumerate(found)]}


def respond_align(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A number is kept where the summary writes it."""
    return {n["id"]: {"stated": re.search(rf"\b{n['value']}\b", ctx["summary"]) is not None} for n in ctx["numbers"]}


NUMBERS = ViewSpec(
    name="numbers", noun="number", title="Numbers", item_model=Number,
    extraction_model=extraction_model,
    item_counts=lambda limits: (0, 20),
    assemble=assemble,
    judged=lambda numbers: [JudgedItem(n.id, n.label, f"{n.value}: {n.claim}") for n in numbers],
    prompt_items=lambda numbers: [{"id": n.id, "value": n.value, "claim": n.claim} for n in numbers],
    alignment_model=lambda numbers, n_sentences, limits, method: alignment_model(tuple(n.id for n in numbers)),
    read=lambda parsed: ViewVerdicts(kept={i: v["stated"] for i, v in parsed.items()}),
    metrics={"nps": "NPS"},
    score=score,
    templates=Path(__file__).parent / "data" / "numbers_view",
    # Method versions that read their verdicts ask about one number at a time (align_numbers.v7.jinja).
    reading=ReadingRules("stated", lambda numbers: [{"id": n.id, "value": n.value, "claim": n.claim} for n in numbers]),
)
# How the test double answers the view's requests (and reads its verdicts), computed from each request.
NUMBERS_RESPONDER = ResponderRules(
    respond_extract, respond_align,
    p_true=lambda item, sentences: 0.9 if re.search(rf"\b{item['value']}\b", " ".join(sentences)) else 0.1)
# The newest method version that reads its verdicts (the view's newest templates are readings), with the numbers
# view after the paper's three, as the next version; it keeps the base version's own prompts for every other task.
NEWEST = max(METHOD_VERSIONS)
BASE = METHOD_VERSIONS[max(v for v, m in METHOD_VERSIONS.items() if m.reads_verdicts)]
BASE_PROMPTS = load_prompts(version=BASE.number, tasks=tasks_of(BASE), pins=dict(BASE.prompt_pins))
WITH_NUMBERS = dataclasses.replace(BASE, number=NEWEST + 1, views=(*PAPER_VIEWS, "numbers"),
                                   prompt_pins=tuple((task, t.version) for task, t in BASE_PROMPTS.items()))


def scaffold_keys(config: ModelConfig) -> dict[int, str]:
    document = Document(doc_id="factory", text=FACTORY, sha256="0" * 64)
    return {v: Judge(config, method).extraction.scaffold_key(document) for v, method in METHOD_VERSIONS.items()}


@pytest.fixture
def numbers_view(monkeypatch):
    register(NUMBERS)
    register_rules("numbers", NUMBERS_RESPONDER)
    monkeypatch.setitem(METHOD_VERSIONS, NEWEST + 1, WITH_NUMBERS)
    yield NUMBERS
    unregister("numbers")
    unregister_rules("numbers")


def test_registering_a_view_changes_no_version_that_does_not_name_it():
    config = ModelConfig.load(str(RESPONDER_CONFIG))
    before, columns = scaffold_keys(config), list(METRICS)
    register(NUMBERS)
    try:
        assert scaffold_keys(config) == before  # every stored scaffold of every version is still found
        assert list(METRICS) == ["fps", "qps", "eps", "nps", *columns[3:]]  # headline scores first, in view order
    finally:
        unregister("numbers")
    assert list(METRICS) == columns


def test_score_runs_end_to_end_with_a_view_defined_in_the_tests(numbers_view, small_input, tmp_path):
    store = tmp_path / "store"
    result = CliRunner().invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store),
                                      "--method-version", str(NEWEST + 1), "--run-name", "numbers"])
    assert result.exit_code == 0, result.output
    assert "scaffolds: 2 extracted" in result.output and "NPS" in result.output
    run = runs.load(store / "runs" / "numbers")
    nps = {(s.doc_id, s.system): s.values["nps"] for s in run.summaries}
    # factory states 200 (N1) and 50 (N2): "brief" writes 200, "details" writes 50 (and an invented 900).
    assert nps[("factory", "brief")] == 0.5 and nps[("factory", "details")] == 0.5
    assert nps[("library", "brief")] is None  # the library document states no number (seven is a word)
    library = next(s for s in run.summaries if s.doc_id == "library")
    assert library.undefined["nps"] == "the document states no number"
    assert {s.system: s.values["fps"] for s in run.summaries if s.doc_id == "factory"} == {"brief": 1.0, "details": 0.0}  # the paper's views unchanged

    stored = json.loads(ScaffoldStore(store).path(run.spec.scaffold_keys["factory"]).read_text(encoding="utf-8"))
    assert list(stored["scaffold"])[:7] == ["key", "doc_id", "document_sha256", "facts", "questions", "entities",
                                            "numbers"]
    assert [n["value"] for n in stored["scaffold"]["numbers"]] == ["200", "50"]
    asked = [r for r in run.records.values() if r.task == "align_numbers"]
    assert sorted(r.request_id for r in asked) == [f"factory/{s}/numbers/N{i}" for s in ("brief", "details")
                                                   for i in (1, 2)]  # one number per request, as version 5 asks

    shown = CliRunner().invoke(app, ["show", str(run.dir), "--summary", "factory/brief"])
    assert shown.exit_code == 0, shown.output
    numbers_table = shown.output[shown.output.index("Numbers"):]
    assert re.search(r"N1\s.*kept", numbers_table) and re.search(r"N2\s.*missed", numbers_table)
