"""On-disk state: content-addressed scaffolds shared by all runs, and one folder per run.

    <store>/scaffolds/<key[:2]>/<key>.json   scaffold + the raw extraction records it came from
    <store>/runs/<run id>/spec.json          what the run is: input, judge, engine, prompts, versions
    <store>/runs/<run id>/records.jsonl      one line per judgment request, appended as results arrive
    <store>/runs/<run id>/input_issues.jsonl bad input records, by record number and field
    <store>/runs/<run id>/summaries.*        per-summary metrics (jsonl, csv, parquet)
    <store>/runs/<run id>/systems.*          per-system means (json, csv)

Records are appended and flushed batch by batch, so a crash loses at most the batch in flight;
a torn last line (crash mid-write) is ignored on load. Re-running the same command reuses every
finished record: only missing requests and engine errors are sent again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .schemas import Scaffold
from .tasks import Record


class StoredScaffold(BaseModel):
    scaffold: Scaffold
    records: list[Record]
    created_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
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
        _atomic_write(path, stored.model_dump_json(indent=1))
        return path


class SpecMismatch(RuntimeError):
    pass


class RunStore:
    def __init__(self, root: Path, run_id: str):
        self.run_id = run_id
        self.dir = root / "runs" / run_id
        self.records_path = self.dir / "records.jsonl"

    @property
    def spec_path(self) -> Path:
        return self.dir / "spec.json"

    def exists(self) -> bool:
        return self.spec_path.is_file()

    def read_spec(self) -> dict[str, Any]:
        return json.loads(self.spec_path.read_text(encoding="utf-8"))

    def open(self, spec: dict[str, Any], identity_keys: Iterable[str]) -> bool:
        """Create the run, or check that an existing one is the same run. Returns True when resuming."""
        if self.exists():
            old = self.read_spec()
            differs = [k for k in identity_keys if old.get(k) != spec.get(k)]
            if differs:
                raise SpecMismatch(
                    f"run folder {self.dir} holds a different run (differs in: {', '.join(differs)}); "
                    "choose another --run-name or remove that folder"
                )
            return True
        _atomic_write(self.spec_path, json.dumps(spec, indent=2))
        return False

    def load_records(self) -> dict[str, Record]:
        """Finished records by cache key; the newest wins, engine errors are left out (retried)."""
        records: dict[str, Record] = {}
        if not self.records_path.is_file():
            return records
        with self.records_path.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    record = Record.model_validate_json(line)
                except ValueError:
                    continue  # a line torn by a crash mid-write
                if record.done:
                    records[record.cache_key] = record
        return records

    def append(self, records: Iterable[Record]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.records_path.open("a", encoding="utf-8") as handle:
            for record in records:
                handle.write(record.model_dump_json() + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def write_json(self, name: str, value: Any) -> Path:
        path = self.dir / name
        _atomic_write(path, json.dumps(value, indent=2, ensure_ascii=False))
        return path

    def write_jsonl(self, name: str, rows: Iterable[BaseModel | dict[str, Any]]) -> Path:
        lines = [(r.model_dump_json() if isinstance(r, BaseModel) else json.dumps(r, ensure_ascii=False)) for r in rows]
        path = self.dir / name
        _atomic_write(path, "".join(line + "\n" for line in lines))
        return path
