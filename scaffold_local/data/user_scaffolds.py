"""Scaffolds given by the user (`score --scaffold-file`): human key facts (pyramid SCUs, annotated
key points), questions and entities scored with no extraction at all.

One JSON object per line, one line per document; every view is optional, and an item without a
label gets `default_label`:

    {"doc_id": "d1",
     "facts": ["Alpha Corp opened a factory.", {"text": "It employs 200 people.", "label": "supporting detail"}],
     "questions": [{"question": "What opened?", "expected_answer": "A factory.", "label": "main point"}],
     "entities": [{"name": "Alpha Corp", "kind": "org", "attributes": ["Alpha Corp opened a factory."]}]}

`extract --out FILE` writes a judge's scaffolds in this format, each line naming who extracted it
(`"extracted_by": "<judge>, method version N"`), so that they can be shipped and scored without extraction.

A bad line is reported by line number and field and skipped; the other documents are scored. Items
get ids and duplicates are dropped exactly as for extracted scaffolds (views/). The file
gives the paper's three views; a view added to the registry is extracted, not read from here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import InputError
from ..method.scaffold import Scaffold
from ..method.schemas import ASSEMBLY_VERSION, Label
from ..method.views import VIEW_SPECS
from .inputs import Document, InputIssue

_STRICT = ConfigDict(extra="forbid")
Text = Field(min_length=1)


class _Item(BaseModel):
    model_config = _STRICT
    text: str = Text
    label: Label | None = None

    @model_validator(mode="before")
    @classmethod
    def _plain_text(cls, data: Any) -> Any:
        return {"text": data} if isinstance(data, str) else data  # a bare string is an item without a label


class _Question(BaseModel):
    model_config = _STRICT
    question: str = Text
    expected_answer: str = Text
    provenance: str = ""
    label: Label | None = None


class _Entity(BaseModel):
    model_config = _STRICT
    name: str = Text
    kind: str = "other"
    attributes: list[_Item] = Field(min_length=1)


class _Line(BaseModel):
    model_config = _STRICT
    doc_id: str = Text
    extracted_by: str | None = None  # a judge's scaffolds written by `extract --out`: which judge, which version
    facts: list[_Item] | None = None
    questions: list[_Question] | None = None
    entities: list[_Entity] | None = None


def _item(item: _Item, default_label: str) -> tuple[str, str]:
    return item.text, item.label or default_label


def _as_extraction_output(line: _Line, default_label: str) -> dict[str, dict[str, Any] | None]:
    """Each view in the shape the judge's extraction output has, so one assembly serves both."""
    return {
        "facts": None if line.facts is None else {"facts": [
            {"fact": text, "label": label} for text, label in (_item(f, default_label) for f in line.facts)]},
        "questions": None if line.questions is None else {"questions": [
            {"question": q.question, "expected_answer": q.expected_answer, "provenance": q.provenance,
             "label": q.label or default_label} for q in line.questions]},
        "entities": None if line.entities is None else {"entities": [
            {"name": e.name, "kind": e.kind, "attributes": [
                {"attribute": text, "label": label} for text, label in (_item(a, default_label) for a in e.attributes)]}
            for e in line.entities]},
    }


@dataclass
class UserScaffolds:
    scaffolds: dict[str, Scaffold] = field(default_factory=dict)  # by doc_id
    issues: list[InputIssue] = field(default_factory=list)
    sha256: str = ""  # of the file: identifies the source in run specs


def read_scaffold_file(path: Path, documents: dict[str, Document], default_label: str) -> UserScaffolds:
    """Scaffolds for the input's documents from a scaffold file (format in the module docstring)."""
    if not path.is_file():
        raise InputError(f"scaffold file not found: {path}")
    raw = path.read_bytes()
    out = UserScaffolds(sha256=hashlib.sha256(raw).hexdigest())
    seen: set[str] = set()
    for number, text in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = _Line.model_validate_json(text)
        except ValidationError as exc:
            for error in exc.errors()[:3]:
                where = ".".join(str(part) for part in error["loc"]) or None
                out.issues.append(InputIssue(record=number, field=where, severity="error", message=error["msg"]))
            continue
        if line.doc_id in seen:
            out.issues.append(InputIssue(record=number, field="doc_id", severity="error",
                                         message=f"document {line.doc_id!r} already has a scaffold in this file"))
            continue
        seen.add(line.doc_id)
        document = documents.get(line.doc_id)
        if document is None:
            out.issues.append(InputIssue(record=number, field="doc_id", severity="warning",
                                         message=f"no document {line.doc_id!r} in the input; line ignored"))
            continue
        out.scaffolds[line.doc_id] = _scaffold(line, document, default_label)
    return out


def _scaffold(line: _Line, document: Document, default_label: str) -> Scaffold:
    outputs = _as_extraction_output(line, default_label)
    views: dict[str, Any] = {}
    failures: dict[str, str] = {}
    notes = []
    for name, output in outputs.items():
        if output is None:
            views[name], failures[name] = None, "not given in the scaffold file"
            continue
        views[name], view_notes = VIEW_SPECS[name].assemble(output)
        notes.extend(view_notes)
    # Content address: the document and the items themselves.
    key = hashlib.sha256(json.dumps(["user", document.sha256, outputs], sort_keys=True).encode()).hexdigest()
    return Scaffold(key=key, doc_id=document.doc_id, document_sha256=document.sha256, origin="user",
                    views=views, failures=failures, notes=tuple(notes), assembly=ASSEMBLY_VERSION)


def extracted_by(path: Path) -> str | None:
    """Who extracted the scaffolds of a file (its lines' `extracted_by`, one or several), or None."""
    found: dict[str, None] = {}
    for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(text).get("extracted_by") if text.strip() else None
        except (ValueError, AttributeError):
            continue  # reported by read_scaffold_file with its line number
        if isinstance(value, str):
            found[value] = None
    return "; ".join(found) or None


def scaffold_line(scaffold: Scaffold, extracted_by: str) -> dict[str, Any]:
    """A scaffold as one line of a scaffold file: read back, it assembles into the same items and labels."""
    line: dict[str, Any] = {"doc_id": scaffold.doc_id, "extracted_by": extracted_by}
    if (facts := scaffold.view("facts")) is not None:
        line["facts"] = [{"text": f.text, "label": f.label} for f in facts]
    if (questions := scaffold.view("questions")) is not None:
        line["questions"] = [{"question": q.question, "expected_answer": q.expected_answer, "provenance": q.provenance,
                              "label": q.label} for q in questions]
    if (entities := scaffold.view("entities")) is not None:
        line["entities"] = [{"name": e.name, "kind": e.kind, "attributes": [{"text": a.text, "label": a.label}
                                                                             for a in e.attributes]} for e in entities]
    return line
