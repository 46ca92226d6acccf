"""Inputs: JSONL, CSV, Parquet or a Hugging Face `datasets` dataset saved on disk -> documents and
candidate summaries.

Input is long format: one record per (document, system) pair, mapped through FieldMap. A bad record
never stops the load: it becomes an InputIssue naming the record and the field, and the rest loads.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from .text import normalize, sha256_text


class FieldMap(BaseModel):
    document: str = "document"
    summary: str = "summary"
    system: str = "system"
    reference: str | None = "reference"  # optional column; a string or a list of strings
    doc_id: str | None = "doc_id"  # optional column; without it documents are identified by content


@dataclass(frozen=True)
class Document:
    doc_id: str
    text: str
    sha256: str


@dataclass(frozen=True)
class Candidate:
    record: int  # 1-based position in the input
    doc_id: str
    system: str
    summary: str
    references: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.doc_id}/{self.system}"


class InputIssue(BaseModel):
    record: int | None
    field: str | None
    severity: Literal["error", "warning"]
    message: str

    def __str__(self) -> str:
        where = f"record {self.record}" if self.record is not None else "input"
        if self.field:
            where += f", field {self.field!r}"
        return f"{self.severity}: {where}: {self.message}"


@dataclass
class LoadedInput:
    source: str
    fingerprint: str  # file contents + field mapping + split
    fields: FieldMap = field(default_factory=FieldMap)
    split: str | None = None
    documents: dict[str, Document] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    issues: list[InputIssue] = field(default_factory=list)

    @property
    def systems(self) -> list[str]:
        return list(dict.fromkeys(c.system for c in self.candidates))


class InputError(ValueError):
    """The input as a whole cannot be read (missing file, unknown format, missing column)."""


# ---------------------------------------------------------------- raw records per format

RawRecord = tuple[int, dict[str, Any] | None, str | None]  # (record number, fields or None, problem)


def _jsonl_records(path: Path) -> Iterator[RawRecord]:
    # Decode line by line: one line in another encoding is one bad record, not a failed file.
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield (number, None,
                       f"line {number} is not valid UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1})")
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, None, f"line {number} is not valid JSON: {exc.msg} (column {exc.colno})"
                continue
            if not isinstance(value, dict):
                yield number, None, f"line {number} is a JSON {type(value).__name__}, expected an object"
                continue
            yield number, value, None


def _csv_records(path: Path) -> Iterator[RawRecord]:
    # surrogateescape keeps undecodable bytes as lone surrogates, so each bad field is found and named.
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    reader = csv.DictReader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
    for number, row in enumerate(reader, 1):
        bad = [name for name, value in row.items() if isinstance(value, str) and _has_surrogates(value)]
        if bad:
            yield number, None, f"row {number}: field {bad[0]!r} is not valid UTF-8"
            continue
        yield number, dict(row), None


def _has_surrogates(value: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in value)


def _arrow_records(table: Any) -> Iterator[RawRecord]:
    for number, row in enumerate(table.to_pylist(), 1):
        yield number, row, None


def _raw_records(path: Path, split: str | None) -> Iterator[RawRecord]:
    if path.is_dir():
        try:
            import datasets  # only needed for datasets saved with save_to_disk
        except ImportError as exc:  # pragma: no cover - datasets is a core dependency
            raise InputError(f"{path} looks like a saved dataset, but `datasets` is not installed") from exc
        try:
            loaded = datasets.load_from_disk(str(path))
        except Exception as exc:  # datasets raises several types for foreign folders
            raise InputError(f"{path} is not a dataset saved with `save_to_disk`: {exc}") from None
        if isinstance(loaded, datasets.DatasetDict):
            names = list(loaded)
            if split is None and len(names) != 1:
                raise InputError(f"{path} has splits {names}; choose one with --split")
            loaded = loaded[split or names[0]]
        elif split is not None:
            raise InputError(f"{path} is a single dataset; --split {split!r} does not apply")
        return _arrow_records(loaded.data.table)
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".ndjson"}:
        return _jsonl_records(path)
    if suffix == ".csv":
        return _csv_records(path)
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return _arrow_records(pq.read_table(path))
    raise InputError(f"{path}: unknown input format {suffix!r} (use .jsonl, .csv, .parquet or a saved dataset folder)")


def fingerprint_path(path: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------- records -> documents and candidates


class _Rejected(Exception):
    def __init__(self, field_name: str | None, message: str):
        super().__init__(message)
        self.field_name = field_name


def _text_field(record: dict[str, Any], name: str) -> str:
    value = record[name]
    if not isinstance(value, str):
        raise _Rejected(name, f"is not text (got {type(value).__name__}: {str(value)[:40]!r})")
    return normalize(value)


def _references(record: dict[str, Any], name: str | None) -> tuple[str, ...]:
    if not name or record.get(name) is None:
        return ()
    value = record[name]
    if isinstance(value, str):
        return (normalize(value),) if value.strip() else ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(normalize(v) for v in value if v.strip())
    raise _Rejected(name, f"is not text or a list of texts (got {type(value).__name__})")


def load_input(path: str | Path, fields: FieldMap | None = None, split: str | None = None) -> LoadedInput:
    path = Path(path)
    fields = fields or FieldMap()
    if not path.exists():
        raise InputError(f"input not found: {path}")
    identity = fingerprint_path(path) + fields.model_dump_json() + str(split)
    loaded = LoadedInput(source=str(path), fingerprint=hashlib.sha256(identity.encode()).hexdigest(),
                         fields=fields, split=split)
    first_record_of: dict[str, int] = {}

    def read(number: int, record: dict[str, Any]) -> Candidate:
        missing = [n for n in (fields.document, fields.summary, fields.system) if record.get(n) is None]
        if missing:
            raise _Rejected(missing[0], f"missing field (record has: {', '.join(sorted(record)) or 'nothing'})")
        document = _text_field(record, fields.document)
        summary = _text_field(record, fields.summary)
        references = _references(record, fields.reference)
        system = str(record[fields.system]).strip()
        if not document:
            raise _Rejected(fields.document, "document is empty: there is nothing to extract a scaffold from")
        if not system:
            raise _Rejected(fields.system, "system name is empty")

        sha = sha256_text(document)
        given_id = record.get(fields.doc_id) if fields.doc_id else None
        doc_id = str(given_id).strip() if given_id not in (None, "") else f"doc-{sha[:12]}"
        known = loaded.documents.get(doc_id)
        if known and known.sha256 != sha:
            raise _Rejected(fields.document, f"doc_id {doc_id!r} was first seen with a different document text")
        candidate = Candidate(record=number, doc_id=doc_id, system=system, summary=summary, references=references)
        if candidate.key in first_record_of:
            raise _Rejected(fields.system, f"duplicate (document {doc_id!r}, system {system!r}) pair, "
                                           f"first seen in record {first_record_of[candidate.key]}")
        loaded.documents.setdefault(doc_id, Document(doc_id=doc_id, text=document, sha256=sha))
        first_record_of[candidate.key] = number
        return candidate

    for number, record, problem in _raw_records(path, split):
        try:
            if record is None:
                raise _Rejected(None, problem or "unreadable record")
            candidate = read(number, record)
        except _Rejected as rejected:
            loaded.issues.append(InputIssue(record=number, field=rejected.field_name, severity="error",
                                            message=f"{rejected}; record skipped"))
            continue
        if not candidate.summary:
            loaded.issues.append(InputIssue(record=number, field=fields.summary, severity="warning",
                                            message="summary is empty: scored with zero coverage; "
                                                    "F and Fact Focus undefined"))
        loaded.candidates.append(candidate)
    return loaded
