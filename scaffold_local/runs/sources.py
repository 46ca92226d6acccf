"""Where a run's scaffolds come from, besides its own judge's extraction (pipeline.py): another
judge's stored scaffolds, a finished run's, or a scaffold file from the user. Each gives the
scaffolds it has and, for every other document, the reason it has none."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..data.inputs import Document, InputIssue
from ..data.store import ScaffoldStore, StoredScaffold
from ..data.user_scaffolds import extracted_by, read_scaffold_file
from ..errors import InputError, UsageError
from ..judging.config import ModelConfig
from ..judging.judge import Judge
from ..method.scaffold import Scaffold
from ..records import Record, ScaffoldSource
from .run import load as load_run


@dataclass
class ScaffoldSet:
    scaffolds: dict[str, Scaffold] = field(default_factory=dict)  # by doc_id
    unavailable: dict[str, str] = field(default_factory=dict)  # doc_id -> why it has no scaffold
    records: list[Record] = field(default_factory=list)  # extraction records behind the scaffolds
    computed: int = 0
    reused: int = 0
    issues: list[InputIssue] = field(default_factory=list)  # bad lines of a scaffold file


def source_from_options(scaffolds_from: str | None = None, scaffold_file: Path | None = None,
                        default_label: str = "main point") -> ScaffoldSource:
    """Where the scaffolds come from, as a user names it: another judge (a config) or a finished run
    (a folder with spec.json) with `scaffolds_from`, a file with `scaffold_file`, else extraction."""
    if scaffolds_from and scaffold_file:
        raise UsageError("give --scaffolds-from or --scaffold-file, not both")
    if scaffold_file:
        return ScaffoldSource(kind="file", reference=str(scaffold_file), default_label=default_label)
    if scaffolds_from:
        kind = "run" if (Path(scaffolds_from) / "spec.json").is_file() else "judge"
        return ScaffoldSource(kind=kind, reference=scaffolds_from)
    return ScaffoldSource()


def identify(source: ScaffoldSource) -> ScaffoldSource:
    """The source with the fingerprint of what it points at (a judge config, a run, a file), so a
    run spec says exactly which scaffolds it used. Raises FileNotFoundError / ValueError early."""
    if source.kind == "judge":
        return source.model_copy(update={"fingerprint": ModelConfig.load(source.reference).fingerprint()})
    if source.kind == "run":
        return source.model_copy(update={"reference": str(Path(source.reference or "").resolve()),
                                         "fingerprint": load_run(source.reference or "").spec.identity_hash()})
    if source.kind == "file":
        path = Path(source.reference or "")
        if not path.is_file():
            raise InputError(f"scaffold file not found: {path}")
        return source.model_copy(update={"fingerprint": hashlib.sha256(path.read_bytes()).hexdigest(),
                                         "extracted_by": extracted_by(path)})
    return source


def from_judge(judge: Judge, documents: list[Document], store: ScaffoldStore) -> ScaffoldSet:
    """Another judge's stored scaffolds (isolates judging from extraction in a comparison)."""
    out = ScaffoldSet()
    for document in documents:
        stored = store.get(judge.extraction.scaffold_key(document))
        if stored is None:
            out.unavailable[document.doc_id] = (f"judge {judge.config.name} has no stored scaffold for this document "
                                                f"(run `scaffold-local extract -m {judge.config.name}` first)")
        else:
            out.scaffolds[document.doc_id] = stored.scaffold.model_copy(update={"doc_id": document.doc_id})
            out.reused += 1
    return out


def from_run(run_dir: str, documents: list[Document], store: ScaffoldStore) -> ScaffoldSet:
    """The scaffolds a finished run used, matched by document id and text."""
    run = load_run(run_dir)
    keys = run.spec.scaffold_keys or {c["doc_id"]: c["scaffold_key"] for c in run.candidates if c.get("scaffold_key")}
    out = ScaffoldSet()
    for document in documents:
        stored = store.get(keys[document.doc_id]) if document.doc_id in keys else None
        if stored is None:
            out.unavailable[document.doc_id] = f"run {run.dir.name} has no scaffold for this document"
        elif stored.scaffold.document_sha256 != document.sha256:
            out.unavailable[document.doc_id] = f"run {run.dir.name} scaffolded a different text under this document id"
        else:
            out.scaffolds[document.doc_id] = stored.scaffold
            out.reused += 1
    return out


def from_file(path: Path, documents: list[Document], store: ScaffoldStore, default_label: str) -> ScaffoldSet:
    """The user's scaffolds, stored content-addressed so that later runs and `show` find them."""
    given = read_scaffold_file(path, {d.doc_id: d for d in documents}, default_label)
    out = ScaffoldSet(issues=given.issues)
    for document in documents:
        scaffold = given.scaffolds.get(document.doc_id)
        if scaffold is None:
            out.unavailable[document.doc_id] = f"no scaffold for this document in {path}"
            continue
        store.put(StoredScaffold(scaffold=scaffold, records=[]))
        out.scaffolds[document.doc_id] = scaffold
        out.computed += 1
    return out
