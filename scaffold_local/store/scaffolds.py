"""Scaffolds, content-addressed and shared by every run of the store:

    <store>/scaffolds/<key[:2]>/<key>.json   a scaffold + the raw extraction records it came from

A key is a hash of what made the scaffold: the extraction requests (document, judge, prompts,
schemas, sampling) for extracted ones, the items themselves for user-given ones. Files are written
whole (a temporary file, then a rename), so a reader never sees half a scaffold.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from ..records import Record
from ..schemas import Scaffold


class StoredScaffold(BaseModel):
    scaffold: Scaffold
    records: list[Record]
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


def atomic_write(path: Path, text: str) -> None:
    """Write a whole file or nothing: a private temporary file (so two processes writing the same
    path never mix), then an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class ScaffoldStore:
    def __init__(self, root: Path):
        self.root = root / "scaffolds"

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> StoredScaffold | None:
        path = self.path(key)
        if not path.is_file():
            return None
        return StoredScaffold.model_validate_json(path.read_text(encoding="utf-8"))

    def put(self, stored: StoredScaffold) -> Path:
        path = self.path(stored.scaffold.key)
        atomic_write(path, stored.model_dump_json(indent=1))
        return path
