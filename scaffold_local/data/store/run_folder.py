"""One folder per run, beside the shared judgment cache:

    <store>/runs/<run id>/spec.json           what the run is (RunSpec: format version, status, input,
                                              judge, method, prompts, schemas, scaffold source, engines)
    <store>/runs/<run id>/requests.jsonl      every judgment request it used: cache key, request id, task
    <store>/runs/<run id>/records.jsonl       an export of those requests' records, for people who read files
    <store>/runs/<run id>/candidates.jsonl    each summary as judged: numbered sentences, scaffold key
    <store>/runs/<run id>/summaries.*         per-summary metrics (jsonl, csv, parquet)
    <store>/runs/<run id>/systems.*           per-system means (json, csv)
    <store>/runs/<run id>/usage.json          tokens, prefix-cache hits, finish reasons, failures by class
    <store>/runs/<run id>/input_issues.jsonl  bad input records, by record number and field
    <store>/runs/<run id>/member_scores.jsonl a group's summaries' scores per member document (groups only)
    <store>/runs/<run id>/holistic_pairs.json the holistic pairwise baseline's preferences (score --pairwise)

The records themselves live in the store's judgment cache, shared by all runs; running the same
command again continues the run (only what the cache lacks, or holds as a retryable failure, is
sent). Every file here is written whole or not at all.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ...errors import RunNameError, SpecMismatch
from ...method.metrics import SummaryScores, SystemScores
from ...records import RUN_FORMAT_VERSION, Record, RunSpec, RunStatus, RunUsage
from .cache import JudgmentCache
from .scaffolds import atomic_write, remove_stale_temporaries
from .score_tables import write_tables

HOLISTIC_PAIRS = "holistic_pairs.json"

RUN_NAME_CHARACTERS = "letters A-Z and a-z, digits 0-9, '.', '_' and '-'"
_RUN_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")


def check_run_name(name: str, option: str = "--run-name") -> str:
    """A run name given by a person or a caller: a plain folder name, or RunNameError naming `option`."""
    if not _RUN_NAME.fullmatch(name) or ".." in name or not name.strip("."):
        raise RunNameError(f"{option} {name!r} is not a valid run name: use 1 to 200 of {RUN_NAME_CHARACTERS}, "
                           "without '..' and not only dots (it names one folder under <store>/runs/)")
    return name


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class RunFolder:
    def __init__(self, store_root: Path, run_id: str):
        # Every run folder is one level under runs/, whoever named it (derived ids, API callers).
        if run_id in ("", ".", "..") or any(c in run_id for c in ("/", "\\", "\0")):
            raise RunNameError(f"run name {run_id!r} is not a single folder name")
        self.run_id = run_id
        self.dir = store_root / "runs" / run_id
        self.spec_path = self.dir / "spec.json"

    def read_spec(self) -> RunSpec:
        return RunSpec.model_validate_json(self.spec_path.read_text(encoding="utf-8"))

    def write_spec(self, spec: RunSpec) -> None:
        atomic_write(self.spec_path, spec.model_dump_json(indent=2))

    def open(self, spec: RunSpec, cache: JudgmentCache) -> tuple[RunSpec, bool]:
        """Create the run, or continue it if this folder holds the same run (else SpecMismatch).
        Returns the spec to keep updating and whether the run is resumed. A run written before the
        shared cache (format 1) hands its finished records to the cache, so nothing is sent again."""
        if self.dir.is_dir():
            remove_stale_temporaries(self.dir)  # left by a run killed while writing a file
        if not self.spec_path.is_file():
            spec = spec.model_copy(update={"status": "running", "format_version": RUN_FORMAT_VERSION})
            self.write_spec(spec)
            return spec, False
        old = self.read_spec()
        new_identity, old_identity = spec.identity(), old.identity()
        differs = [key for key in set(new_identity) | set(old_identity) if new_identity.get(key) != old_identity.get(key)]
        if differs:
            raise SpecMismatch(f"run folder {self.dir} holds a different run (differs in: {', '.join(sorted(differs))}); "
                               "choose another --run-name or remove that folder")
        if old.format_version < 2:
            cache.put([r for r in self.exported_records() if not r.retryable])
        kept = {"created_at": old.created_at or spec.created_at, "engines": old.engines}
        spec = spec.model_copy(update={**kept, "status": "running", "format_version": RUN_FORMAT_VERSION})
        self.write_spec(spec)
        return spec, True

    def set_status(self, spec: RunSpec, status: RunStatus) -> RunSpec:
        spec = spec.model_copy(update={"status": status, "updated_at": now()})
        self.write_spec(spec)
        return spec

    def previous_engine_seconds(self) -> float:
        return self.usage().engine_seconds or 0.0

    def previous_retries(self, stage: str) -> Counter[str]:
        """Retries (by failure class) that earlier invocations of this run recorded for a stage."""
        return Counter(getattr(self.usage(), stage).retries)

    def usage(self) -> RunUsage:
        """The usage.json of the run's earlier invocations (empty where there is none)."""
        path = self.dir / "usage.json"
        return RunUsage.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else RunUsage()

    def exported_records(self) -> list[Record]:
        """records.jsonl as written (the newest line per cache key wins; a torn line is skipped)."""
        path = self.dir / "records.jsonl"
        records: dict[str, Record] = {}
        for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
            try:
                record = Record.model_validate_json(line)
            except ValueError:
                continue
            records[record.cache_key] = record
        return list(records.values())

    # ------------------------------------------------------------ what a scoring run writes, each file whole

    def write_input_issues(self, issues: Iterable[BaseModel]) -> None:
        self._write_jsonl("input_issues.jsonl", issues)

    def write_failures(self, rows: Iterable[dict[str, Any]]) -> None:
        self._write_jsonl("failures.jsonl", rows)

    def write_requests(self, rows: Iterable[dict[str, Any]]) -> None:
        self._write_jsonl("requests.jsonl", rows)

    def write_results(self, usage: RunUsage, summaries: Sequence[SummaryScores], systems: Sequence[SystemScores],
                      candidates: Iterable[dict[str, Any]], members: Iterable[dict[str, Any]] | None,
                      records: Iterable[Record]) -> None:
        """What the run found: its usage, the scores (as JSON, CSV and Parquet), each summary as judged,
        a group's summaries' scores per member document (`members`, for inputs with groups) and the
        records it used."""
        self._write_json("usage.json", usage.model_dump())
        self._write_jsonl("summaries.jsonl", summaries)
        self._write_json("systems.json", [s.model_dump() for s in systems])
        write_tables(self.dir, summaries, systems)
        self._write_jsonl("candidates.jsonl", candidates)
        if members is not None:
            self._write_jsonl("member_scores.jsonl", members)
        self._write_jsonl("records.jsonl", records)

    def write_holistic_pairs(self, setup: dict[str, Any], pairs: list[dict[str, Any]]) -> None:
        """The holistic pairwise baseline's preferences (runs/holistic_pairs.py) and how they were read."""
        self._write_json(HOLISTIC_PAIRS, {**setup, "pairs": pairs})

    def holistic_pairs(self) -> dict[str, Any] | None:
        path = self.dir / HOLISTIC_PAIRS
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def _write_json(self, name: str, value: Any) -> None:
        atomic_write(self.dir / name, json.dumps(value, indent=2, ensure_ascii=False))

    def _write_jsonl(self, name: str, rows: Iterable[BaseModel | dict[str, Any]]) -> None:
        lines = [(r.model_dump_json() if isinstance(r, BaseModel) else json.dumps(r, ensure_ascii=False)) for r in rows]
        atomic_write(self.dir / name, "".join(line + "\n" for line in lines))
