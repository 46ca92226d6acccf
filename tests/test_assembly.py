"""Scaffold assembly: ids, exact duplicates dropped, same-named entities merged, every change noted."""

from __future__ import annotations

import json

from scaffold_local.backends.responder import ResponderBackend
from scaffold_local.data.loading import load_input
from scaffold_local.data.store import ScaffoldStore
from scaffold_local.method.metrics import SummaryVerdicts, score_summary
from scaffold_local.method.scaffold import Scaffold
from scaffold_local.method.views import ViewVerdicts
from scaffold_local.method.views.entities import assemble_entities
from scaffold_local.method.views.facts import assemble_facts
from scaffold_local.method.views.questions import assemble_questions
from scaffold_local.runs.pipeline import Pipeline

from .test_pipeline import EXPECTED, CountingFactory


def _attribute(text: str, label: str = "main point") -> dict:
    return {"attribute": text, "label": label}


def test_entities_with_the_same_name_keep_all_their_attributes():
    parsed = {"entities": [
        {"name": "Alpha Corp", "kind": "org", "attributes": [_attribute("Alpha Corp opened a factory.")]},
        {"name": "Denton", "kind": "other", "attributes": [_attribute("Denton is in Texas.")]},
        {"name": "alpha  corp", "kind": "product", "attributes": [
            _attribute("Alpha Corp employs 200 people.", "supporting detail"),
            _attribute("alpha corp opened a factory.", "other")]},  # an exact repeat, case aside
    ]}
    entities, notes = assemble_entities(parsed)
    assert [(e.id, e.name, e.kind) for e in entities] == [("E1", "Alpha Corp", "org"), ("E2", "Denton", "other")]
    assert [(a.id, a.text, a.label) for a in entities[0].attributes] == [
        ("E1.A1", "Alpha Corp opened a factory.", "main point"),
        ("E1.A2", "Alpha Corp employs 200 people.", "supporting detail")]
    assert [(n.action, n.detail) for n in notes] == [
        ("merged entities", "'Alpha Corp' was listed 2 times; their attributes are merged into E1 (kinds org, product; kept org)"),
        ("dropped duplicate", "attribute of E1 'alpha corp opened a factory.' repeats E1.A1"),
    ]
    # Every merged attribute is in the EPS denominator: 1 kept of 3.
    scaffold = Scaffold(key="k", doc_id="d", document_sha256="0" * 64, facts=(), questions=(), entities=entities)
    eps = score_summary(scaffold, SummaryVerdicts(views={"entities": ViewVerdicts(kept={"E1.A2": True})}), system="s", n_sentences=1)
    assert eps.values["eps"] == 1 / 3


def test_repeated_facts_and_questions_are_dropped_with_a_note_naming_the_kept_item():
    facts, notes = assemble_facts({"facts": [
        {"fact": "The plant opened.", "label": "main point"},
        {"fact": "It cost $50m.", "label": "supporting detail"},
        {"fact": "the plant  OPENED.", "label": "supporting detail"}]})
    assert [f.id for f in facts] == ["F1", "F2"]
    assert [n.detail for n in notes] == ["fact 'the plant  OPENED.' repeats F1"]
    question = {"question": "What opened?", "expected_answer": "The plant.", "provenance": "Sentence 1", "label": "main point"}
    questions, notes = assemble_questions({"questions": [question, question]})
    assert len(questions) == 1 and notes[0].view == "questions" and notes[0].detail.endswith("repeats Q1")


def test_a_scaffold_stored_under_older_assembly_rules_is_rebuilt_without_the_engine(responder_config, small_input, tmp_path):
    store = tmp_path / "store"
    Pipeline(responder_config, store, backend_factory=ResponderBackend).extract(list(load_input(small_input).documents.values()))
    paths = sorted((store / "scaffolds").rglob("*.json"))
    for path in paths:  # as written before notes existed: no notes, no assembly version
        data = json.loads(path.read_text())
        del data["scaffold"]["notes"], data["scaffold"]["assembly"]
        path.write_text(json.dumps(data))
    factory = CountingFactory()
    outcome = Pipeline(responder_config, store, backend_factory=factory).score(load_input(small_input))
    assert not any("/extract/" in r for r in factory.requests)
    assert {(s.doc_id, s.system): s.values["eps"] for s in outcome.summaries} == {k: v["eps"] for k, v in EXPECTED.items()}
    rebuilt = [ScaffoldStore(store).get(path.stem) for path in paths]
    assert all(s is not None and s.scaffold.assembly == 2 for s in rebuilt)
