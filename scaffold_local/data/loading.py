"""Loading an input: `load_input` (a file or a saved dataset) and `load_records` (records in memory)
read every record through one RecordReader, which turns records into documents and candidates and
each bad record into an InputIssue naming it and its field."""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..method.text import normalize, sha256_text
from .formats import RawRecord, fingerprint_path, has_surrogates, raw_records
from .inputs import OPTION_OF, Candidate, Document, FieldMap, InputIssue, LoadedInput


def load_input(path: str | Path, fields: FieldMap | None = None, split: str | None = None) -> LoadedInput:
    path = Path(path)
    fields = fields or FieldMap()
    if not path.exists():
        raise InputError(f"input not found: {path}")
    identity = fingerprint_path(path) + fields.model_dump_json() + str(split)
    loaded = LoadedInput(source=str(path), fingerprint=hashlib.sha256(identity.encode()).hexdigest(),
                         fields=fields, split=split)
    return RecordReader(loaded).read_all(raw_records(path, split))


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
    return RecordReader(loaded).read_all(raw)


class _Rejected(Exception):
    def __init__(self, field_name: str | None, message: str):
        super().__init__(message)
        self.field_name = field_name


@dataclass
class RecordReader:
    """Reads records into `loaded`, one at a time, remembering what earlier records established."""

    loaded: LoadedInput
    first_record_of: dict[str, int] = field(default_factory=dict)  # candidate or group member key -> record
    group_summaries: dict[str, Candidate] = field(default_factory=dict)  # "group/system" -> its first candidate
    known: dict[str, str | None] = field(default_factory=dict)  # the current record's document, system, group

    @property
    def fields(self) -> FieldMap:
        return self.loaded.fields

    def read_all(self, raw: Iterable[RawRecord]) -> LoadedInput:
        for number, record, problem, line in raw:
            self.known.clear()
            try:
                if record is None:
                    raise _Rejected(None, problem or "unreadable record")
                candidate = self.read(number, record)
            except _Rejected as rejected:
                group = self.known.pop("group", None)
                self.loaded.issues.append(InputIssue(record=number, line=line, field=rejected.field_name,
                                                     severity="error", message=f"{rejected}; record skipped",
                                                     **self.known, group=group))
                continue
            if candidate is None:
                continue
            self.loaded.issues.extend(_warnings(record, candidate, self.loaded.source_of(candidate.doc_id),
                                                self.fields, line))
            self.loaded.candidates.append(candidate)
        return self.loaded

    def read(self, number: int, record: dict[str, Any]) -> Candidate | None:
        fields = self.fields
        for role, name in (("document", fields.document), ("summary", fields.summary), ("system", fields.system)):
            if record.get(name) is None:
                self._name_what_is_known(record)
                raise _Rejected(name, _missing(record, role, name))
        system = _identifier(record, fields.system)
        self.known["system"] = system or None
        document = _text_field(record, fields.document)
        summary = _text_field(record, fields.summary)
        references = _references(record, fields.reference)
        self._check_document(document)
        if not system:
            raise _Rejected(fields.system, "system name is empty")
        sha = sha256_text(document)
        given_id = _identifier(record, fields.doc_id) if fields.doc_id and record.get(fields.doc_id) is not None else ""
        doc_id = self.known["doc_id"] = given_id or f"doc-{sha[:12]}"
        first = self.loaded.documents.get(doc_id)
        if first and first.sha256 != sha:
            raise _Rejected(fields.document, f"doc_id {doc_id!r} was first seen with a different document text")
        if doc_id in self.loaded.groups:
            raise _Rejected(fields.doc_id or fields.document, f"doc_id {doc_id!r} is already the id of a group")
        group = _identifier(record, fields.group) if fields.group and record.get(fields.group) is not None else ""
        if group:
            return self.read_member(number, group, Document(doc_id=doc_id, text=document, sha256=sha),
                                    system, summary, references)
        candidate = Candidate(record=number, doc_id=doc_id, system=system, summary=summary, references=references)
        if candidate.key in self.first_record_of:
            raise _Rejected(fields.system, f"duplicate (document {doc_id!r}, system {system!r}) pair, "
                                           f"first seen in record {self.first_record_of[candidate.key]}")
        self.loaded.documents.setdefault(doc_id, first or Document(doc_id=doc_id, text=document, sha256=sha))
        self.first_record_of[candidate.key] = number
        return candidate

    def _name_what_is_known(self, record: dict[str, Any]) -> None:
        """The document and system of a record that is skipped, where it gives them, so its error names them."""
        for key, name in (("doc_id", self.fields.doc_id), ("system", self.fields.system)):
            value = record.get(name) if name else None
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
                self.known[key] = str(value).strip()

    def _check_document(self, document: str) -> None:
        name = self.fields.document
        if not document:
            raise _Rejected(name, "document is empty (or only whitespace): there is nothing to extract a scaffold from")
        if not any(ch.isalnum() for ch in document):
            raise _Rejected(name, f"document has no letter or digit ({_shown(document)}): there is nothing to "
                                  "extract a scaffold from")

    def read_member(self, number: int, group: str, document: Document, system: str, summary: str,
                    references: tuple[str, ...]) -> Candidate | None:
        """A record of a group: one member document with the group's summary by one system. The first
        record of a (group, system) pair makes the candidate; the others add members, and must repeat
        its summary. None: the candidate exists already."""
        fields, loaded, doc_id = self.fields, self.loaded, document.doc_id
        self.known["group"] = group
        if group in loaded.documents:
            raise _Rejected(fields.group, f"group {group!r} is already the id of a document")
        member_key = f"{group}/{doc_id}/{system}"
        if member_key in self.first_record_of:
            raise _Rejected(fields.system, f"duplicate (group {group!r}, document {doc_id!r}, system {system!r}), "
                                           f"first seen in record {self.first_record_of[member_key]}")
        candidate = Candidate(record=number, doc_id=group, system=system, summary=summary, references=references)
        earlier = self.group_summaries.get(candidate.key)
        if earlier is not None and earlier.summary != summary:
            raise _Rejected(fields.summary, f"group {group!r}, system {system!r}: not the summary of record "
                                            f"{earlier.record} (a group has one summary per system, repeated "
                                            "in the record of each of its documents)")
        loaded.documents.setdefault(doc_id, document)
        members = loaded.groups.setdefault(group, ())
        if doc_id not in members:
            loaded.groups[group] = (*members, doc_id)
        self.first_record_of[member_key] = number
        if earlier is not None:
            return None
        self.group_summaries[candidate.key] = candidate
        return candidate


def _unicode(name: str, value: str) -> str:
    """The value, if it is valid Unicode text: it is hashed, written to UTF-8 files and sent to a judge."""
    if has_surrogates(value):
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


def _missing(record: dict[str, Any], role: str, name: str) -> str:
    """Why a required field has no value, with the record's likely name for it where one is close."""
    if name in record:  # present, with no value
        return "has no value (null)"
    keys = [k for k in record if isinstance(k, str)]
    close = [k for k in keys if k.strip().lower() == name.strip().lower()] or difflib.get_close_matches(name, keys, 1, 0.6)
    hint = f"; did you mean {close[0]!r}? (map it with {OPTION_OF[role]} {close[0]!r})" if close else ""
    return f"missing field (record has: {', '.join(sorted(map(str, record))) or 'nothing'}){hint}"


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
