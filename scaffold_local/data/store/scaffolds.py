"""Scaffolds, content-addressed and shared by every run of the store:

    <store>/scaffolds/<key[:2]>/<key>.json   a scaffold + the raw extraction records it came from

A key is a hash of what made the scaffold: the extraction requests (document, judge, prompts,
schemas, sampling) for extracted ones, the items themselves for user-given ones. Files are written
whole (a temporary file, then a rename), so a reader never sees half a scaffold.
"""

from __future__ import annotations

import os
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from ... import faults
from ...method.scaffold import Scaffold
from ...records import Record


class StoredScaffold(BaseModel):
    scaffold: Scaffold
    records: list[Record]
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


def atomic_write(path: Path, text: str) -> None:
    """Write a whole file or nothing: a private temporary file (so two processes writing the same
    path never mix), then an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    with tmp.open("w", encoding="utf-8", newline="") as handle:  # the text as given (CSV rows end in \r\n)
        handle.write(text[: len(text) // 2])
        handle.flush()
        faults.point("write", path.name)  # tests kill here: half a file on disk, under its temporary name
        handle.write(text[len(text) // 2 :])
    os.replace(tmp, path)


def remove_stale_temporaries(folder: Path) -> None:
    """Remove the temporary files of writes whose process was killed before its rename (the process
    id in the name no longer runs); a live process's temporaries are left alone."""
    for tmp in folder.glob(".*.tmp"):
        pid = tmp.name.rsplit(".", 3)[1]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            tmp.unlink(missing_ok=True)
        except OSError:  # alive, another user's
            pass


# Keys are hashes; a key read from a file (a run's spec) must still name a file inside the store.
_KEY = re.compile(r"[A-Za-z0-9_-]+")


class ScaffoldStore:
    def __init__(self, root: Path):
        self.root = root / "scaffolds"

    def path(self, key: str) -> Path:
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a scaffold key: {key!r}")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> StoredScaffold | None:
        if not _KEY.fullmatch(key):
            return None  # no scaffold is stored under such a key
        path = self.path(key)
        if not path.is_file():
            return None
        return StoredScaffold.model_validate_json(path.read_text(encoding="utf-8"))

    def put(self, stored: StoredScaffold) -> Path:
        path = self.path(stored.scaffold.key)
        if path.parent.is_dir():
            remove_stale_temporaries(path.parent)  # e.g. this scaffold's, from a run killed while writing it
        atomic_write(path, stored.model_dump_json(indent=1))
        return path
