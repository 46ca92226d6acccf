"""One judgment cache per store, shared by every run: the record of each judge request, by its
cache key (judge, messages, schema, sampling), as lm-evaluation-harness's CachingLM keeps them.

SQLite in WAL mode: each batch of records is one transaction, so a kill at any instant leaves every
committed record whole and nothing half-written; several processes may read and write the same
store at once (writers take turns; a writer waits up to `BUSY_TIMEOUT_S` for another). WAL relies
on shared memory and POSIX locks that network filesystems do not provide reliably, so a store on
one (NFS, Lustre, SMB, ...) is refused with the reason and the way out.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ... import faults
from ...errors import StoreError
from ...records import Record

BUSY_TIMEOUT_S = 120
NETWORK_FILESYSTEMS = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "cephfs", "glusterfs",
    "fuse.glusterfs", "fuse.sshfs", "fuse.s3fs", "9p", "afs", "panfs", "wekafs", "orangefs", "fuse.beegfs",
})


def _read_mounts() -> str | None:
    try:
        return Path("/proc/mounts").read_text(encoding="utf-8")
    except OSError:  # not Linux: no mount table to read
        return None


def filesystem_type(path: Path, mounts: str | None) -> str | None:
    """The type of the filesystem holding `path`, from a /proc/mounts text; None when unknown."""
    if mounts is None:
        return None
    target = str(path.resolve())
    best_point, best_type = "", None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best_point):
            best_point, best_type = point, fields[2]
    return best_type


def check_local_filesystem(root: Path) -> None:
    kind = filesystem_type(root, _read_mounts())
    if kind in NETWORK_FILESYSTEMS:
        raise StoreError(
            f"the store {root} is on a {kind} filesystem. Its judgment cache is SQLite in WAL mode, which needs "
            "shared memory and file locks that network filesystems do not provide reliably (concurrent runs could "
            "corrupt it). Put the store on a local disk (--store, or SCAFFOLD_LOCAL_STORE, e.g. node-local scratch "
            "or /tmp); run folders and scaffolds are plain files that can be copied to shared storage afterwards.")


class JudgmentCache:
    """The latest record of every request, by cache key. Records whose failure is retryable are
    kept for audit but read back as missing, so they are sent again."""

    def __init__(self, root: Path):
        root.mkdir(parents=True, exist_ok=True)
        check_local_filesystem(root)
        self.path = root / "cache.sqlite"
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        self._set_up()

    def _set_up(self) -> None:
        """WAL mode (kept in the file once set) and the table. Two processes creating the store at the
        same moment can meet SQLITE_BUSY here, where SQLite's busy timeout does not apply: retry."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                if self._db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")  # in WAL mode: durable across process kills
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS records (cache_key TEXT PRIMARY KEY, task TEXT NOT NULL, "
                    "doc_id TEXT NOT NULL, failure TEXT, record TEXT NOT NULL, written_at TEXT NOT NULL)")
                self._db.execute("CREATE TABLE IF NOT EXISTS sentences (text_key TEXT PRIMARY KEY, sentences TEXT NOT NULL)")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def close(self) -> None:
        self._db.close()

    def get(self, keys: Iterable[str]) -> dict[str, Record]:
        """Stored records for these keys (any outcome)."""
        found: dict[str, Record] = {}
        for chunk in _chunks(list(dict.fromkeys(keys)), 500):
            marks = ",".join("?" * len(chunk))
            for key, text in self._db.execute(f"SELECT cache_key, record FROM records WHERE cache_key IN ({marks})", chunk):
                found[key] = Record.model_validate_json(text)
        return found

    def finished(self, keys: Iterable[str]) -> dict[str, Record]:
        """Stored records that need no new request: parsed, or failed in a way that would repeat."""
        return {key: record for key, record in self.get(keys).items() if not record.retryable}

    def put(self, records: Sequence[Record]) -> None:
        """Store records in one transaction (a record replaces an older one for the same key)."""
        if not records:
            return
        now = datetime.now(UTC).isoformat(timespec="seconds")
        rows = [(r.cache_key, r.task, r.doc_id, r.failure, r.model_dump_json(), now) for r in records]
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?, ?)", rows)
            faults.point("cache_put", keys=[r.cache_key for r in records])  # tests kill here: written, not committed
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def sentences(self, texts: Iterable[str], splitter: str, split: Callable[[str], list[str]]) -> dict[str, list[str]]:
        """Each text's sentences: kept from an earlier run where there is one (a summary's split takes
        about a millisecond and every request's cache key depends on it, so on a rerun splitting was
        most of the time), split now and kept otherwise. `splitter` names the splitter and its version."""
        keys = {hashlib.sha256(f"{splitter}\0{text}".encode()).hexdigest(): text for text in dict.fromkeys(texts)}
        found: dict[str, list[str]] = {}
        for chunk in _chunks(list(keys), 500):
            marks = ",".join("?" * len(chunk))
            for key, stored in self._db.execute(f"SELECT text_key, sentences FROM sentences WHERE text_key IN ({marks})",
                                                chunk):
                found[keys[key]] = json.loads(stored)
        new = [(key, text, split(text)) for key, text in keys.items() if text not in found]
        if new:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR IGNORE INTO sentences VALUES (?, ?)",
                                     [(key, json.dumps(sentences)) for key, _, sentences in new])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            found.update({text: sentences for _, text, sentences in new})
        return found

    def __iter__(self) -> Iterator[Record]:
        """Every stored record (for audits and tools; runs look records up by key)."""
        for (text,) in self._db.execute("SELECT record FROM records"):
            yield Record.model_validate_json(text)

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM records").fetchone()[0]


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]

