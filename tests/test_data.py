"""Input loading: every format, field mapping, and bad records named by record and field."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from scaffold_local.data.inputs import FieldMap, InputError, no_usable_records
from scaffold_local.data.loading import load_input
from scaffold_local.data.user_scaffolds import extracted_by, read_scaffold_file
from scaffold_local.judging.config import ModelConfig
from scaffold_local.method.versions import method_version

from .helpers import FACTORY, LIBRARY, write_jsonl

ROWS = [
    {"id": "f", "src": FACTORY, "model": "a", "text": "Alpha Corp opened a factory.", "ref": "Alpha opened a plant."},
    {"id": "f", "src": FACTORY, "model": "b", "text": "A factory opened.", "ref": "Alpha opened a plant."},
    {"id": "l", "src": LIBRARY, "model": "a", "text": "The library lends bicycles.", "ref": None},
]
FIELDS = FieldMap(document="src", summary="text", system="model", reference="ref", doc_id="id")


def _check(loaded) -> None:
    assert not loaded.issues
    assert list(loaded.documents) == ["f", "l"]
    assert [(c.doc_id, c.system) for c in loaded.candidates] == [("f", "a"), ("f", "b"), ("l", "a")]
    assert loaded.candidates[0].references == ("Alpha opened a plant.",)
    assert loaded.candidates[2].references == ()


def test_jsonl(tmp_path: Path):
    _check(load_input(write_jsonl(tmp_path / "in.jsonl", ROWS), FIELDS))


def test_csv(tmp_path: Path):
    path = tmp_path / "in.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(ROWS[0]))
        writer.writeheader()
        writer.writerows([{k: v or "" for k, v in r.items()} for r in ROWS])
    _check(load_input(path, FIELDS))


def test_parquet(tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path)
    _check(load_input(path, FIELDS))


def test_saved_hf_dataset_and_split(tmp_path: Path):
    import datasets

    dataset = datasets.Dataset.from_list(ROWS)
    dataset.save_to_disk(str(tmp_path / "single"))
    _check(load_input(tmp_path / "single", FIELDS))
    datasets.DatasetDict({"test": dataset, "dev": dataset}).save_to_disk(str(tmp_path / "dict"))
    with pytest.raises(InputError, match="choose one with --split"):
        load_input(tmp_path / "dict", FIELDS)
    _check(load_input(tmp_path / "dict", FIELDS, split="test"))


def test_documents_without_ids_are_identified_by_content(tmp_path: Path):
    rows = [{"document": FACTORY, "summary": "x.", "system": s} for s in ("a", "b")]
    loaded = load_input(write_jsonl(tmp_path / "in.jsonl", rows))
    assert len(loaded.documents) == 1 and next(iter(loaded.documents)).startswith("doc-")


def test_bad_records_are_named_and_the_rest_loads(tmp_path: Path):
    path = tmp_path / "bad.jsonl"
    lines = [
        json.dumps({"doc_id": "f", "document": FACTORY, "system": "a", "summary": "Fine."}).encode(),  # 1 ok
        json.dumps({"doc_id": "e", "document": "   ", "system": "a", "summary": "x"}).encode(),  # 2 empty document
        json.dumps({"doc_id": "f", "document": FACTORY, "system": "b", "summary": ""}).encode(),  # 3 empty summary
        json.dumps({"doc_id": "f", "document": FACTORY, "summary": "no system"}).encode(),  # 4 missing field
        json.dumps({"doc_id": "f", "document": FACTORY, "system": "a", "summary": "Again."}).encode(),  # 5 duplicate
        "{\"doc_id\": \"l\", \"document\": \"caf\xe9\", \"system\": \"a\", \"summary\": \"x\"}".encode("latin-1"),  # 6
        b"{not json",  # 7
        json.dumps({"doc_id": "f", "document": FACTORY, "system": "c", "summary": 42}).encode(),  # 8 not text
        json.dumps({"doc_id": "l", "document": LIBRARY, "system": "a", "summary": "Bikes."}).encode(),  # 9 ok
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    loaded = load_input(path)
    issues = {i.record: i for i in loaded.issues}
    assert [(c.record, c.system) for c in loaded.candidates] == [(1, "a"), (3, "b"), (9, "a")]
    assert (issues[2].field, issues[2].severity) == ("document", "error") and "document is empty" in issues[2].message
    assert (issues[3].field, issues[3].severity) == ("summary", "warning")
    assert issues[4].field == "system" and "missing field" in issues[4].message
    assert "duplicate (document 'f', system 'a') pair, first seen in record 1" in issues[5].message
    assert "not valid UTF-8 (byte 0xe9" in issues[6].message
    assert "not valid JSON" in issues[7].message
    assert issues[8].field == "summary" and "is not text (got int" in issues[8].message
    assert str(issues[4]).startswith("error: record 4, field 'system':") and str(issues[4]).endswith("[document 'f']")


def test_a_missing_summary_names_the_document_and_system_the_record_has(tmp_path: Path):
    rows = [{"doc_id": "f", "document": FACTORY, "system": "a", "summary": "Fine."},
            {"doc_id": "f", "document": FACTORY, "system": "b", "sumary": "Misspelt."}]
    issue = load_input(write_jsonl(tmp_path / "in.jsonl", rows)).issues[0]
    assert (issue.record, issue.field, issue.doc_id, issue.system) == (2, "summary", "f", "b")
    assert "did you mean 'sumary'?" in str(issue) and str(issue).endswith("[document 'f', system 'b']")


def test_a_csv_file_named_jsonl_is_called_csv_once(tmp_path: Path):
    path = tmp_path / "in.jsonl"
    path.write_text("doc_id,document,summary,system\nf,The factory opened.,It opened.,a\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"looks like CSV, not JSON Lines .*'doc_id,document,summary,system'"):
        load_input(path)
    # A bad line after valid JSON stays one bad record, whatever it looks like.
    later = tmp_path / "later.jsonl"
    later.write_text(json.dumps({"document": FACTORY, "summary": "x.", "system": "a"}) + "\na,b,c\n", encoding="utf-8")
    assert "not valid JSON" in load_input(later).issues[0].message


def test_an_empty_input_says_it_is_empty(tmp_path: Path):
    (tmp_path / "empty.jsonl").write_text("\n\n", encoding="utf-8")
    loaded = load_input(tmp_path / "empty.jsonl")
    assert no_usable_records(loaded) == f"the input ({tmp_path / 'empty.jsonl'}) holds no records: it is empty or only blank lines"
    bad = load_input(write_jsonl(tmp_path / "bad.jsonl", [{"document": FACTORY, "summary": "x."}]))
    assert no_usable_records(bad).startswith(f"no usable records in the input ({tmp_path / 'bad.jsonl'}); most common: "
                                             "field 'system': missing field")


def test_non_utf8_csv_field_is_named(tmp_path: Path):
    path = tmp_path / "in.csv"
    path.write_bytes(b"document,summary,system\nGood text.,Fine.,a\nBad caf\xe9 text.,Fine.,b\n")
    loaded = load_input(path)
    assert [c.system for c in loaded.candidates] == ["a"]
    assert loaded.issues[0].record == 2 and "field 'document' is not valid UTF-8" in loaded.issues[0].message


def test_conflicting_document_for_one_id(tmp_path: Path):
    rows = [{"doc_id": "x", "document": FACTORY, "system": "a", "summary": "s."},
            {"doc_id": "x", "document": LIBRARY, "system": "b", "summary": "s."}]
    loaded = load_input(write_jsonl(tmp_path / "in.jsonl", rows))
    assert loaded.issues[0].record == 2 and "different document text" in loaded.issues[0].message


def test_unknown_format_and_missing_file(tmp_path: Path):
    (tmp_path / "in.xml").write_text("<a/>")
    with pytest.raises(InputError, match="unknown input format '.xml'"):
        load_input(tmp_path / "in.xml")
    with pytest.raises(InputError, match="input not found"):
        load_input(tmp_path / "nope.jsonl")


def test_the_demo_input_holds_every_kind_of_system_on_every_document():
    """`make demo` scores examples/news.jsonl: each document with two faithful systems, one that pads with
    supporting details, one that drops the main facts and one that contradicts the source."""
    loaded = load_input(Path(__file__).parent.parent / "examples" / "news.jsonl")
    assert loaded.issues == []
    systems = {"lead-2", "concise", "verbose", "drops-main", "contradicts"}
    for doc_id in loaded.documents:
        assert {c.system for c in loaded.candidates if c.doc_id == doc_id} == systems
    assert len(loaded.documents) == 3


def test_the_demo_ships_a_scaffold_for_each_of_its_documents_and_says_who_extracted_them():
    """`make demo` scores against examples/news.scaffolds.jsonl: one scaffold per document, every view given."""
    examples = Path(__file__).parent.parent / "examples"
    loaded = load_input(examples / "news.jsonl")
    shipped = read_scaffold_file(examples / "news.scaffolds.jsonl", loaded.documents, "main point")
    assert shipped.issues == []
    assert set(shipped.scaffolds) == set(loaded.documents)
    assert all(not s.failures and s.view("facts") for s in shipped.scaffolds.values())
    default = ModelConfig.load(None)  # the demo follows the default judge and its method
    expected = f"{default.name}, method version {method_version(default.method_version).number}"
    assert extracted_by(examples / "news.scaffolds.jsonl") == expected
