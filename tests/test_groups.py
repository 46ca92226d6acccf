"""Document groups: records with a group field, the union of the members' scaffolds (each member
extracted once, reused by every grouping), coverage per group and per member worked out by hand, a
member too long for the context, and an individual run beside a grouped run (`report --individual`)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scaffold_local import evaluate, runs
from scaffold_local.analysis.groups import grouped_vs_individual
from scaffold_local.cli import app
from scaffold_local.data.inputs import FieldMap
from scaffold_local.data.loading import load_input, load_records
from scaffold_local.judging.config import ModelConfig
from scaffold_local.judging.context_fit import fit_context
from scaffold_local.judging.judge import Judge
from scaffold_local.method.document_groups import union_scaffold
from scaffold_local.method.scaffold import Scaffold
from scaffold_local.runs.pipeline import Pipeline

from .helpers import FACTORY, LIBRARY, RESPONDER_CONFIG, write_jsonl
from .test_hostile_input import LONG

runner = CliRunner()

# With the responder's rules (tests/helpers.py): factory F1, F2 main, F3, F4 supporting, F5 other;
# library F1, F2 main, F3 supporting, F4 other. In the union: factory's F1-F5, library's as F6-F9.
FACTORY_ONLY = "Alpha Corp opened a factory in Denton on Monday. The factory employs 200 local workers."
BOTH = "Alpha Corp opened a factory in Denton on Monday. The Oakvale library now lends bicycles to members."


pytestmark = pytest.mark.usefixtures("wide_console")


def grouped_rows(group: str = "town", members=(("factory", FACTORY), ("library", LIBRARY))) -> list[dict]:
    return [{"group": group, "doc_id": d, "document": text, "system": system, "summary": summary}
            for system, summary in (("one", FACTORY_ONLY), ("both", BOTH)) for d, text in members]


def test_records_of_a_group_make_one_summary_per_system_with_its_members():
    loaded = load_records(grouped_rows())
    assert not loaded.issues
    assert loaded.groups == {"town": ("factory", "library")}
    assert set(loaded.documents) == {"factory", "library"}
    assert [(c.doc_id, c.system, c.record) for c in loaded.candidates] == [("town", "one", 1), ("town", "both", 3)]
    joined = loaded.source_of("town").text
    assert joined.startswith("Document 1 of 2 (factory):\n" + FACTORY) and "Document 2 of 2 (library):" in joined
    assert [d.doc_id for d in loaded.to_extract(["town", "factory"])] == ["factory", "library"]


def test_bad_group_records_are_named_and_the_rest_loads():
    rows = grouped_rows()
    rows[1] = {**rows[1], "summary": "Another text."}  # the group's summary differs between its records
    rows.append({**rows[0]})  # the same (group, document, system) again
    rows.append({"group": "factory", "doc_id": "x", "document": "A different text.", "system": "one", "summary": "S."})
    loaded = load_records(rows)
    first, second, third = loaded.issues
    assert (first.record, first.field, first.group, first.system) == (2, "summary", "town", "one")
    assert "not the summary of record 1 (a group has one summary per system" in first.message
    assert (second.record, second.field) == (5, "system") and "duplicate (group 'town', document 'factory'" in second.message
    assert (third.record, third.field) == (6, "group") and "is already the id of a document" in third.message
    assert "group 'town'" in str(first)
    assert loaded.groups == {"town": ("factory", "library")}  # record 4 still adds its member


def test_the_default_group_field_leaves_earlier_fingerprints_alone():
    assert "group" not in FieldMap().model_dump()
    assert FieldMap(group="cluster").model_dump()["group"] == "cluster"


def _scaffold(doc_id: str, facts: list[tuple[str, str]], entities: list | None = None, **extra) -> Scaffold:
    return Scaffold(key=f"k-{doc_id}", doc_id=doc_id, document_sha256="0" * 64,
                    facts=[{"id": f"F{i}", "text": t, "label": label} for i, (t, label) in enumerate(facts, 1)],
                    entities=entities or [], **extra)


def test_the_union_renumbers_items_and_keeps_each_items_document():
    a = _scaffold("a", [("A1", "main point"), ("A2", "other")], entities=[
        {"id": "E1", "name": "Ada", "kind": "person", "attributes": [
            {"id": "E1.A1", "text": "an engineer", "label": "main point"},
            {"id": "E1.A2", "text": "from Leeds", "label": "other"}]}])
    b = _scaffold("b", [("B1", "supporting detail")], entities=[
        {"id": "E1", "name": "Bo", "kind": "person", "attributes": [{"id": "E1.A1", "text": "a pilot", "label": "main point"}]}])
    union = union_scaffold("g", "f" * 64, [a, b])
    assert [(f.id, f.text, f.label) for f in union.items("facts")] == [
        ("F1", "A1", "main point"), ("F2", "A2", "other"), ("F3", "B1", "supporting detail")]
    assert [(e.id, [x.id for x in e.attributes]) for e in union.items("entities")] == [
        ("E1", ["E1.A1", "E1.A2"]), ("E2", ["E2.A1"])]
    assert union.item_sources == {"F1": "a", "F2": "a", "F3": "b", "E1": "a", "E2": "b"}
    assert union.members == ("a", "b") and union.doc_id == "g"
    # A view one member lacks fails for the group, naming the member.
    c = _scaffold("c", [("C1", "main point")]).model_copy(update={"entities": None, "failures": {"entities": "bad"}})
    assert union_scaffold("g", "f" * 64, [a, c]).failures == {"entities": "c: bad"}
    # Stored and read back with its members and sources; a plain scaffold's file has neither key.
    assert Scaffold.model_validate_json(union.model_dump_json()) == union
    assert "members" not in a.model_dump()


def test_group_coverage_by_hand_and_members_extracted_once(responder_config, tmp_path):
    store = tmp_path / "store"
    individual = load_input(write_jsonl(tmp_path / "single.jsonl", [
        {"doc_id": "factory", "document": FACTORY, "system": "one", "summary": FACTORY_ONLY},
        {"doc_id": "library", "document": LIBRARY, "system": "one", "summary": "The Oakvale library now lends bicycles to members."},
    ]))
    pipeline = Pipeline(responder_config, store)
    first = pipeline.score(individual)
    assert first.extraction.computed == 2
    grouped = pipeline.score(load_input(write_jsonl(tmp_path / "grouped.jsonl", grouped_rows())))
    assert (grouped.extraction.computed, grouped.extraction.reused) == (0, 2)  # the members' scaffolds, reused
    regrouped = pipeline.score(load_records(grouped_rows("other", (("library", LIBRARY), ("factory", FACTORY)))))
    assert regrouped.extraction.computed == 0  # grouped another way: still no extraction
    pipeline.close()

    one = next(s for s in grouped.summaries if s.system == "one")
    assert one.doc_id == "town"
    assert one.values["fc"] == pytest.approx(2 / 7)  # F1, F2 of 4 + 3 main and supporting facts
    assert one.values["main_fc"] == pytest.approx(2 / 4)
    members = {(r["doc_id"], r["system"]): r["values"]
               for r in map(json.loads, (grouped.run_dir / "member_scores.jsonl").read_text().splitlines())}
    assert members[("factory", "one")]["fc"] == pytest.approx(2 / 4) and members[("factory", "one")]["main_fc"] == 1.0
    assert members[("library", "one")]["fc"] == 0.0
    assert members[("factory", "both")]["main_fc"] == 0.5 and members[("library", "both")]["main_fc"] == 0.5
    assert "f" not in {k for v in members.values() for k in v} and "ds" not in members[("factory", "one")]
    # The union is stored: `show` finds it and names each item's document.
    result = runner.invoke(app, ["show", str(grouped.run_dir), "--summary", "town/one"])
    assert result.exit_code == 0, result.output
    assert "a group of 2 documents: factory, library" in result.output and "[library] The Oakvale library" in result.output

    side = grouped_vs_individual(runs.load(grouped.run_dir), runs.load(first.run_dir))
    assert side.systems == ["one"]
    assert side.member_fc[("factory", "one")] == (0.5, (0.5, 1))  # its own summary: F1, F2 of 4
    assert side.grouped["fc"]["one"] == (pytest.approx(2 / 7), 1)
    assert side.individual["fc"]["one"][1] == 2


def test_report_prints_member_coverage_and_the_individual_run_beside_the_grouped(tmp_path):
    store = tmp_path / "store"
    single = write_jsonl(tmp_path / "single.jsonl", [
        {"doc_id": d, "document": text, "system": "one", "summary": text.split(". ")[0] + "."}
        for d, text in (("factory", FACTORY), ("library", LIBRARY))])
    grouped = write_jsonl(tmp_path / "grouped.jsonl", grouped_rows())
    common = ["-m", str(RESPONDER_CONFIG), "--store", str(store)]
    assert runner.invoke(app, ["score", str(single), *common, "--run-name", "single"]).exit_code == 0
    result = runner.invoke(app, ["score", str(grouped), *common, "--run-name", "grouped"])
    assert result.exit_code == 0, result.output
    assert "coverage of each group and of its member documents: FC / Main FC" in result.output
    assert "factory" in result.output and "library" in result.output
    result = runner.invoke(app, ["report", str(store / "runs" / "grouped"), "--individual", str(store / "runs" / "single")])
    assert result.exit_code == 0, result.output
    assert "individual (single) vs grouped (grouped)" in result.output
    assert "FC of each member document: in its own summary / in the group summaries" in result.output
    report = store / "runs" / "grouped" / "report"
    assert (report / "grouped_vs_individual.csv").is_file() and (report / "member_coverage.csv").is_file()
    assert "analysis.json" in {p.name for p in report.iterdir()}  # not overwritten by the side-by-side's tables
    assert "Document groups: coverage" in (report / "report.html").read_text()
    # Two runs that share no documents are refused with the reason.
    wrong = runner.invoke(app, ["report", str(store / "runs" / "single"), "--individual", str(store / "runs" / "grouped")])
    assert wrong.exit_code != 0 and "has no document groups" in wrong.output


def test_a_member_too_long_for_the_context_skips_its_groups_only(responder_config, tmp_path):
    rows = [*grouped_rows(), *grouped_rows("long-group", (("factory", FACTORY), ("long", LONG)))]
    fit = fit_context(Judge(responder_config), load_records(rows))
    assert set(fit.skipped) == {"long-group"} and fit.skipped["long-group"].startswith("member long: document does not fit")
    assert [i.doc_id for i in fit.issues] == ["long"]  # one issue for the document, however many groups hold it
    assert fit.loaded.groups == {"town": ("factory", "library")} and "long" not in fit.loaded.documents
    assert {c.doc_id for c in fit.loaded.candidates} == {"town"}


def test_a_group_too_long_to_read_whole_reads_the_passages_relevant_to_each_summary(tmp_path):
    config = ModelConfig.load(str(RESPONDER_CONFIG)).model_copy(update={"max_model_len": 4096})
    text = " ".join(f"Sentence {i} of the report says that the council met again." for i in range(60))
    members = [(f"d{i}", f"Report {i}. {text}") for i in range(4)]
    fit = fit_context(Judge(config), load_records(grouped_rows("big", members)))
    assert not fit.skipped and not fit.issues  # each member's extraction fits; the group's text is excerpted
    assert set(fit.loaded.excerpts) == {"big/one", "big/both"}
    assert all(len(e.text) < len(fit.loaded.source_of("big").text) for e in fit.loaded.excerpts.values())


def test_evaluate_returns_each_members_coverage(tmp_path):
    result = evaluate(grouped_rows(), judge=str(RESPONDER_CONFIG), store=tmp_path / "store", progress=False)
    assert list(result.summaries["doc_id"]) == ["town", "town"]
    members = result.members.set_index(["member", "system"])
    assert members.loc[("factory", "one"), "fc"] == pytest.approx(0.5)
    assert members.loc[("library", "one"), "fc"] == 0.0
    assert set(result.members["group"]) == {"town"}
    assert evaluate([{"document": FACTORY, "system": "a", "summary": "S."}], judge=str(RESPONDER_CONFIG), store=tmp_path / "store",
                    progress=False).members is None  # no groups
