"""Inputs: JSONL, CSV, Parquet or a Hugging Face `datasets` dataset saved on disk, or records already
in memory (loading.py) -> documents and candidate summaries, held in a LoadedInput.

Input is long format: one record per (document, system) pair, mapped through FieldMap. A bad record
never stops the load: it becomes an InputIssue naming the record (and the CSV line it starts on, its
document and system where they are known) and the field, and the rest loads. Whether each document
fits the judge's context is checked later, against a judge (judging/context_fit.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, SerializerFunctionWrapHandler, field_validator, model_serializer

from ..errors import InputError
from ..method.text import sha256_text

# The option that maps each required field, for the hint when a field is missing (the CLI's names).
OPTION_OF = {"document": "--document-field", "summary": "--summary-field", "system": "--system-field"}


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
    # Chunked mode (long_documents.py), decided against a judge by judging/context_fit.py: the chunks of
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


def missing_from_every_record(loaded: LoadedInput) -> InputError | None:
    """One error for a required field that no record has (a column named otherwise: every record would
    say so), with the option that maps it; None where records differ."""
    if loaded.candidates or not loaded.issues:
        return None
    fields = {i.field for i in loaded.issues}
    if len(fields) != 1 or not all(i.severity == "error" and i.message.startswith("missing field") for i in loaded.issues):
        return None
    name = fields.pop()
    role = next((role for role in OPTION_OF if getattr(loaded.fields, role) == name), None)
    has = loaded.issues[0].message.split("(record has: ", 1)[-1].split(")")[0]
    option = OPTION_OF[role] if role else "the --*-field options"
    return InputError(f"no record of {loaded.source} has the field {name!r} ({len(loaded.issues):,} records; the first "
                      f"has: {has})", hint=f"map the field that holds it with {option} NAME")


def no_usable_records(loaded: LoadedInput) -> str:
    """Why nothing of an input can be scored, in a sentence."""
    if not loaded.issues:
        return f"the input ({loaded.source}) holds no records: it is empty or only blank lines"
    return f"no usable records in the input ({loaded.source})" + most_common_issue(loaded.issues)


def most_common_issue(issues: list[InputIssue]) -> str:
    """The most frequent problem, by field and message (a renamed column fails every record alike)."""
    if not issues:
        return ""
    counts = Counter((i.field, i.message.split(" (record has")[0].split("; ")[0]) for i in issues)
    (field_name, message), n = counts.most_common(1)[0]
    example = next(i for i in issues if i.field == field_name and i.message.startswith(message))
    where = f"field {field_name!r}: " if field_name else ""
    return f"; most common: {where}{message} ({n:,} records; e.g. {example})"

