"""Inputs: JSONL, CSV, Parquet or a Hugging Face `datasets` dataset saved on disk (`load_input`), or
records already in memory (`load_records`) -> documents and candidate summaries.

Input is long format: one record per (document, system) pair, mapped through FieldMap. A bad record
never stops the load: it becomes an InputIssue naming the record (and the CSV line it starts on, its
document and system where they are known) and the field, and the rest loads. Only a file that cannot
be read at all is an InputError (missing, unknown format, UTF-16/32, an unreadable CSV header).
Whether each document fits the judge's context is checked later, against a judge
(requests.fit_context).
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, SerializerFunctionWrapHandler, field_validator, model_serializer

from .errors import InputError
from .text import normalize, sha256_text


class FieldMap(BaseModel):
    document: str = "document"
    summary: str = "summary"
    system: str = "system"
    reference: str | None = "reference"  # optional column; a string or a list of strings
    doc_id: str | None = "doc_id"  # optional column; without it documents are identified by content
    # Optional column: records sharing a group hold one summary of all the group's documents.
    group: str | None = "group"

    @model_serializer(mode="wrap")
    def _as_before_groups(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The default group field is left out: the fingerprints (and so the run ids) of inputs read
        before groups existed stay as they were."""
        data = handler(self)
        if data.get("group") == "group":
            del data["group"]
        return data


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
    record: int | None  # 1-based: the JSONL line, the CSV data row (header not counted), the table row
    field: str | None
    severity: Literal["error", "warning"]
    message: str
    line: int | None = None  # CSV: the file line the row starts on (rows can span lines), where it differs
    doc_id: str | None = None  # the record's document and system, where they are known
    system: str | None = None
    group: str | None = None  # and its group, where it has one

    @field_validator("field", "message", "doc_id", "system", "group")
    @classmethod
    def _writable(cls, value: str | None) -> str | None:
        # Input can smuggle lone surrogates (undecodable bytes, "\\ud800" escapes) into a message
        # (e.g. a field name it quotes); escape them so the issue can be printed and written as UTF-8.
        return None if value is None else value.encode("utf-8", "backslashreplace").decode("utf-8")

    def __str__(self) -> str:
        where = f"record {self.record}" if self.record is not None else "input"
        if self.line is not None and self.line != self.record:
            where += f" (line {self.line})"
        if self.field:
            where += f", field {self.field!r}"
        known = [f"{name} {value!r}" for name, value in (("group", self.group), ("document", self.doc_id),
                                                         ("system", self.system)) if value is not None]
        return f"{self.severity}: {where}: {self.message}" + (f" [{', '.join(known)}]" if known else "")


@dataclass
class LoadedInput:
    """Documents and summaries. A summary of a group has the group's id as its `doc_id`; `groups`
    names each group's member documents (in `documents`), in the order the input first gave them."""

    source: str
    fingerprint: str  # file contents + field mapping + split
    fields: FieldMap = field(default_factory=FieldMap)
    split: str | None = None
    documents: dict[str, Document] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    issues: list[InputIssue] = field(default_factory=list)
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Chunked mode (long_documents.py), decided against a judge by requests.fit_context: the chunks of
    # each document longer than its context, and for each summary of one (by candidate key) the
    # passages its sentence check and direct score read.
    chunks: dict[str, tuple[Document, ...]] = field(default_factory=dict)
    excerpts: dict[str, Document] = field(default_factory=dict)

    @property
    def systems(self) -> list[str]:
        return list(dict.fromkeys(c.system for c in self.candidates))

    def source_of(self, doc_id: str) -> Document:
        """What a summary summarises: its document, or its group's documents as one text."""
        if doc_id not in self.groups:
            return self.documents[doc_id]
        return group_document(doc_id, [self.documents[m] for m in self.groups[doc_id]])

    def to_extract(self, doc_ids: Iterable[str]) -> list[Document]:
        """What is extracted for these summaries: each document (a long one: its chunks) and each
        group's members, once each."""
        wanted = dict.fromkeys(m for d in doc_ids for m in self.groups.get(d, (d,)))
        return [chunk for d in wanted for chunk in self.chunks.get(d, (self.documents[d],))]


def group_document(group: str, members: list[Document]) -> Document:
    """A group's documents as one text, each under a heading that names it, for the judgments that
    read the source (the sentence check, the direct score)."""
    text = "\n\n".join(f"Document {i} of {len(members)} ({m.doc_id}):\n{m.text}" for i, m in enumerate(members, 1))
    return Document(doc_id=group, text=text, sha256=sha256_text(text))


# ---------------------------------------------------------------- raw records per format

# (record number, fields or None, problem, line the record starts on where it differs from the number)
RawRecord = tuple[int, dict[str, Any] | None, str | None, int | None]

_UTF16_32_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
                  (b"\xfe\xff", "UTF-16"))
_ENCODING_HINT = "is the file in another encoding, e.g. Latin-1 or Windows-1252? Convert it to UTF-8"


def _check_encoding(path: Path, head: bytes) -> None:
    """A file in UTF-16 or UTF-32 would fail on every line; say so once, for the whole file."""
    for bom, encoding in _UTF16_32_BOMS:
        if head.startswith(bom):
            raise InputError(f"{path} is {encoding} (it starts with a {encoding} byte-order mark); input must be "
                             f"UTF-8: convert it, e.g. `iconv -f {encoding} -t UTF-8`")


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) < len(pairs):
        keys = [k for k, _ in pairs]
        repeated = next(k for k in keys if keys.count(k) > 1)
        raise _RepeatedKey(repeated)
    return value


class _RepeatedKey(ValueError):
    pass


def _jsonl_records(path: Path) -> Iterator[RawRecord]:
    # Decode line by line: one line in another encoding is one bad record, not a failed file.
    with path.open("rb") as handle:
        _check_encoding(path, handle.read(4))
        handle.seek(0)
        for number, raw in enumerate(handle, 1):
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark (Windows editors write one)
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield (number, None, f"line {number} is not valid UTF-8 (byte {raw[exc.start]:#04x} at column "
                                     f"{exc.start + 1}; {_ENCODING_HINT})", None)
                continue
            try:
                value = json.loads(line, object_pairs_hook=_no_repeated_keys)
            except _RepeatedKey as exc:
                yield number, None, f"line {number} has the key {exc.args[0]!r} twice (which value is meant?)", None
                continue
            except json.JSONDecodeError as exc:
                yield number, None, f"line {number} is not valid JSON: {exc.msg} (column {exc.colno})", None
                continue
            except ValueError as exc:  # e.g. an integer longer than Python converts (4300 digits)
                yield number, None, f"line {number} is not valid JSON: {exc}", None
                continue
            except RecursionError:
                yield number, None, f"line {number} is not valid JSON: nested too deeply", None
                continue
            if not isinstance(value, dict):
                yield number, None, f"line {number} is a JSON {type(value).__name__}, expected an object", None
                continue
            yield number, value, None, None


# Documents are long: csv's default limit (128 KiB per field) would stop a whole file at one long
# document. 2**31 - 1 is the largest value every platform's csv module accepts.
_CSV_FIELD_LIMIT = 2**31 - 1


def _csv_problem(exc: csv.Error, number: int, first: int, last: int) -> str:
    where = f"row {number} (line {first})" if first == last else f"row {number} (lines {first}-{last})"
    message = str(exc)
    if "unexpected end of data" in message:
        return (f"{where}: a quoted field opened there is never closed: it runs to the end of the file, so the "
                "rows after it are not read (a stray \" in a field? quote the field and double every \" inside it)")
    if "expected after" in message:
        return (f"{where}: a quoted field goes on after its closing quote (a \" inside a quoted field must be "
                "written twice: \"\")")
    return f"{where} is not readable as CSV: {message}"


def _csv_records(path: Path) -> Iterator[RawRecord]:
    data = path.read_bytes()
    _check_encoding(path, data[:4])
    # surrogateescape keeps undecodable bytes as lone surrogates, so each bad field is found and named.
    text = data.decode("utf-8", errors="surrogateescape")
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    # strict: a malformed quote is an error for its row (which the reader then skips), never a silent
    # merge of the following rows into one field.
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    try:
        header = next(reader, [])
    except csv.Error as exc:
        raise InputError(f"{path}: the header row is not readable as CSV: {exc}") from None
    bad_header = [i for i, name in enumerate(header, 1) if _has_surrogates(name)]
    if bad_header:
        raise InputError(f"{path}: the header row is not valid UTF-8 (column {bad_header[0]}; {_ENCODING_HINT})")
    repeated = sorted({name for name in header if name and header.count(name) > 1})
    if repeated:
        raise InputError(f"{path}: the header names the column {repeated[0]!r} twice "
                         f"(columns {', '.join(str(i) for i, n in enumerate(header, 1) if n == repeated[0])})")
    number = 0
    while True:
        first = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # strict mode: the row is skipped, and reading goes on after it
            number += 1
            yield number, None, _csv_problem(exc, number, first, max(first, reader.line_num)), first
            continue
        if not row:  # a blank line
            continue
        number += 1
        line = first if first != number else None
        where = f"row {number}" + (f" (line {first})" if line else "")
        extra = row[len(header):]
        if any(value.strip() for value in extra):  # (empty ones: trailing commas, harmless)
            yield (number, None, f"{where} has {len(row)} fields but the header names {len(header)} "
                                 f"(an unquoted comma?)", line)
            continue
        values = dict(zip(header, row))  # a short row lacks its last columns: named as missing if needed
        bad = [name for name, value in values.items() if _has_surrogates(value)]
        if bad:
            yield number, None, f"{where}: field {bad[0]!r} is not valid UTF-8 ({_ENCODING_HINT})", line
            continue
        yield number, values, None, line


def _has_surrogates(value: str) -> bool:
    # Lone surrogates: undecodable bytes (surrogateescape) or "\\ud800"-style escapes in JSON.
    return any("\ud800" <= ch <= "\udfff" for ch in value)


def _arrow_records(table: Any) -> Iterator[RawRecord]:
    for number, row in enumerate(table.to_pylist(), 1):
        yield number, row, None, None


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


def _unicode(name: str, value: str) -> str:
    """The value, if it is valid Unicode text: it is hashed, written to UTF-8 files and sent to a judge."""
    if _has_surrogates(value):
        raise _Rejected(name, "is not valid Unicode text (it holds a lone surrogate, e.g. a \\ud800 escape)")
    return value


def _shown(value: Any) -> str:
    return repr(str(value)[:40])


def _text_field(record: dict[str, Any], name: str) -> str:
    value = record[name]
    if not isinstance(value, str):
        raise _Rejected(name, f"is not text (got {type(value).__name__}: {_shown(value)})")
    return normalize(_unicode(name, value))


def _identifier(record: dict[str, Any], name: str) -> str:
    """A system name or document id: text, or a whole number (ids read from Parquet or CSV often are).
    Lists, objects, booleans and non-finite numbers are not ids: their str() would be an accident."""
    value = record[name]
    if isinstance(value, bool) or not isinstance(value, str | int | float) or (
            isinstance(value, float) and not math.isfinite(value)):
        raise _Rejected(name, f"is not text or a number (got {type(value).__name__}: {_shown(value)})")
    return _unicode(name, str(value).strip())


def _references(record: dict[str, Any], name: str | None) -> tuple[str, ...]:
    if not name or record.get(name) is None:
        return ()
    value = record[name]
    if isinstance(value, str):
        return (normalize(_unicode(name, value)),) if value.strip() else ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(normalize(_unicode(name, v)) for v in value if v.strip())
    raise _Rejected(name, f"is not text or a list of texts (got {type(value).__name__})")


# The option that maps each field, for the hint when a field is missing (the CLI's names).
_OPTION_OF = {"document": "--document-field", "summary": "--summary-field", "system": "--system-field"}


def _missing(record: dict[str, Any], role: str, name: str) -> str:
    """Why a required field has no value, with the record's likely name for it where one is close."""
    if name in record:  # present, with no value
        return "has no value (null)"
    keys = [k for k in record if isinstance(k, str)]
    close = [k for k in keys if k.strip().lower() == name.strip().lower()] or difflib.get_close_matches(name, keys, 1, 0.6)
    hint = f"; did you mean {close[0]!r}? (map it with {_OPTION_OF[role]} {close[0]!r})" if close else ""
    return f"missing field (record has: {', '.join(sorted(map(str, record))) or 'nothing'}){hint}"


def _has_content(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def load_input(path: str | Path, fields: FieldMap | None = None, split: str | None = None) -> LoadedInput:
    path = Path(path)
    fields = fields or FieldMap()
    if not path.exists():
        raise InputError(f"input not found: {path}")
    identity = fingerprint_path(path) + fields.model_dump_json() + str(split)
    loaded = LoadedInput(source=str(path), fingerprint=hashlib.sha256(identity.encode()).hexdigest(),
                         fields=fields, split=split)
    return _read_records(loaded, _raw_records(path, split))


def load_records(records: Iterable[Any], fields: FieldMap | None = None, source: str = "records") -> LoadedInput:
    """Records held in memory (dicts, one per summary, as a JSONL file's lines), read like a file: the
    same checks, the same issues. The fingerprint is their content's, so the same records resume the
    same run."""
    fields = fields or FieldMap()
    rows = list(records)
    content = json.dumps(rows, sort_keys=True, ensure_ascii=False, default=str)
    identity = hashlib.sha256(content.encode()).hexdigest() + fields.model_dump_json()
    loaded = LoadedInput(source=source, fingerprint=hashlib.sha256(identity.encode()).hexdigest(), fields=fields)
    raw = ((number, dict(row), None, None) if isinstance(row, Mapping)
           else (number, None, f"record is a {type(row).__name__}, not a mapping of field names to values", None)
           for number, row in enumerate(rows, 1))
    return _read_records(loaded, raw)


def _read_records(loaded: LoadedInput, raw_records: Iterable[RawRecord]) -> LoadedInput:
    fields = loaded.fields
    first_record_of: dict[str, int] = {}
    group_summaries: dict[str, Candidate] = {}  # "group/system" -> the candidate its first record made
    known: dict[str, str | None] = {}  # what is known of the record being read: its document and system

    def read(number: int, record: dict[str, Any]) -> Candidate | None:
        for role, name in (("document", fields.document), ("summary", fields.summary), ("system", fields.system)):
            if record.get(name) is None:
                raise _Rejected(name, _missing(record, role, name))
        system = _identifier(record, fields.system)
        known["system"] = system or None
        document = _text_field(record, fields.document)
        summary = _text_field(record, fields.summary)
        references = _references(record, fields.reference)
        if not document:
            raise _Rejected(fields.document, "document is empty (or only whitespace): there is nothing to extract "
                                             "a scaffold from")
        if not _has_content(document):
            raise _Rejected(fields.document, f"document has no letter or digit ({_shown(document)}): there is "
                                             "nothing to extract a scaffold from")
        if not system:
            raise _Rejected(fields.system, "system name is empty")

        sha = sha256_text(document)
        given_id = _identifier(record, fields.doc_id) if fields.doc_id and record.get(fields.doc_id) is not None else ""
        doc_id = given_id or f"doc-{sha[:12]}"
        known["doc_id"] = doc_id
        first = loaded.documents.get(doc_id)
        if first and first.sha256 != sha:
            raise _Rejected(fields.document, f"doc_id {doc_id!r} was first seen with a different document text")
        if doc_id in loaded.groups:
            raise _Rejected(fields.doc_id or fields.document, f"doc_id {doc_id!r} is already the id of a group")
        group = _identifier(record, fields.group) if fields.group and record.get(fields.group) is not None else ""
        if group:
            return read_member(number, group, doc_id, Document(doc_id=doc_id, text=document, sha256=sha),
                               system, summary, references)
        candidate = Candidate(record=number, doc_id=doc_id, system=system, summary=summary, references=references)
        if candidate.key in first_record_of:
            raise _Rejected(fields.system, f"duplicate (document {doc_id!r}, system {system!r}) pair, "
                                           f"first seen in record {first_record_of[candidate.key]}")
        loaded.documents.setdefault(doc_id, first or Document(doc_id=doc_id, text=document, sha256=sha))
        first_record_of[candidate.key] = number
        return candidate

    def read_member(number: int, group: str, doc_id: str, document: Document, system: str, summary: str,
                    references: tuple[str, ...]) -> Candidate | None:
        """A record of a group: one member document with the group's summary by one system. The first
        record of a (group, system) pair makes the candidate; the others add members, and must repeat
        its summary. None: the candidate exists already."""
        assert fields.group is not None
        known["group"] = group
        if group in loaded.documents:
            raise _Rejected(fields.group, f"group {group!r} is already the id of a document")
        member_key = f"{group}/{doc_id}/{system}"
        if member_key in first_record_of:
            raise _Rejected(fields.system, f"duplicate (group {group!r}, document {doc_id!r}, system {system!r}), "
                                           f"first seen in record {first_record_of[member_key]}")
        candidate = Candidate(record=number, doc_id=group, system=system, summary=summary, references=references)
        earlier = group_summaries.get(candidate.key)
        if earlier is not None and earlier.summary != summary:
            raise _Rejected(fields.summary, f"group {group!r}, system {system!r}: not the summary of record "
                                            f"{earlier.record} (a group has one summary per system, repeated "
                                            "in the record of each of its documents)")
        loaded.documents.setdefault(doc_id, document)
        members = loaded.groups.setdefault(group, ())
        if doc_id not in members:
            loaded.groups[group] = (*members, doc_id)
        first_record_of[member_key] = number
        if earlier is not None:
            return None
        group_summaries[candidate.key] = candidate
        return candidate

    for number, record, problem, line in raw_records:
        known.clear()
        try:
            if record is None:
                raise _Rejected(None, problem or "unreadable record")
            candidate = read(number, record)
        except _Rejected as rejected:
            group = known.pop("group", None)
            loaded.issues.append(InputIssue(record=number, line=line, field=rejected.field_name, severity="error",
                                            message=f"{rejected}; record skipped", **known, group=group))
            continue
        if candidate is None:
            continue
        loaded.issues.extend(_warnings(record, candidate, loaded.source_of(candidate.doc_id), fields, line))
        loaded.candidates.append(candidate)
    return loaded


def _warnings(record: dict[str, Any], c: Candidate, document: Document, fields: FieldMap,
              line: int | None) -> list[InputIssue]:
    """What is odd about a record that is still scored."""
    found: list[tuple[str, str]] = []
    if fields.doc_id and isinstance(record.get(fields.doc_id), str) and not record[fields.doc_id].strip():
        found.append((fields.doc_id, f"doc_id is empty: the document is identified by its content ({c.doc_id})"))
    if not c.summary:
        found.append((fields.summary, "summary is empty (or only whitespace): scored with zero coverage; "
                                      "F and Fact Focus undefined"))
    elif len(c.summary) > len(document.text):
        found.append((fields.summary, f"summary is longer than its document ({len(c.summary):,} characters "
                                      f"against {len(document.text):,}): still scored, as given (are the "
                                      "document and summary fields swapped?)"))
    return [InputIssue(record=c.record, line=line, field=field, severity="warning", message=message,
                       doc_id=c.doc_id, system=c.system) for field, message in found]


def missing_from_every_record(loaded: LoadedInput) -> InputError | None:
    """One error for a required field that no record has (a column named otherwise: every record would
    say so), with the option that maps it; None where records differ."""
    if loaded.candidates or not loaded.issues:
        return None
    fields = {i.field for i in loaded.issues}
    if len(fields) != 1 or not all(i.severity == "error" and i.message.startswith("missing field") for i in loaded.issues):
        return None
    name = fields.pop()
    role = next((role for role in _OPTION_OF if getattr(loaded.fields, role) == name), None)
    has = loaded.issues[0].message.split("(record has: ", 1)[-1].split(")")[0]
    option = _OPTION_OF[role] if role else "the --*-field options"
    return InputError(f"no record of {loaded.source} has the field {name!r} ({len(loaded.issues):,} records; the first "
                      f"has: {has})", hint=f"map the field that holds it with {option} NAME")


def most_common_issue(issues: list[InputIssue]) -> str:
    """The most frequent problem, by field and message (a renamed column fails every record alike)."""
    if not issues:
        return ""
    counts = Counter((i.field, i.message.split(" (record has")[0].split("; ")[0]) for i in issues)
    (field_name, message), n = counts.most_common(1)[0]
    example = next(i for i in issues if i.field == field_name and i.message.startswith(message))
    where = f"field {field_name!r}: " if field_name else ""
    return f"; most common: {where}{message} ({n:,} records; e.g. {example})"

