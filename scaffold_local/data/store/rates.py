"""The engine rates a store has measured, per machine: for one judge, method version and task (extracting facts,
reading key facts, checking sentences, ...), the engine seconds spent on so many requests and so much new prompt text.
A command reads them to say, before it sends anything, about how long the sending will take."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ...provenance import cpu_info

RATES_FILE = "engine_rates.json"


@dataclass(frozen=True)
class Work:
    """What an engine is asked to compute: requests, and the prompt characters that no request sent just before
    shares (a prefix cache or a saved prompt part skips the shared ones)."""

    requests: int = 0
    characters: int = 0

    def __add__(self, other: Work) -> Work:
        return Work(self.requests + other.requests, self.characters + other.characters)


@dataclass(frozen=True)
class Rate:
    work: Work
    seconds: float

    def seconds_for(self, work: Work) -> float:
        """Engine seconds for `work` at this rate, by new prompt characters."""
        return self.seconds * work.characters / max(self.work.characters, 1)


def this_machine() -> str:
    """The machine a rate holds for: the CPU model and the cores this process may use (a store copied to another
    machine does not take its rates along)."""
    cpu = cpu_info()
    return f"{cpu.get('model') or 'unknown CPU'} x{cpu['cores']}"


class EngineRates:
    """The store's measured rates (one small JSON file), keyed by machine, judge, method version and task."""

    def __init__(self, root: Path, machine: str | None = None):
        self.path = Path(root) / RATES_FILE
        self.machine = machine or this_machine()

    def _key(self, judge: str, method_version: int, task: str) -> str:
        return f"{self.machine} | {judge} | method version {method_version} | {task}"

    def _read(self) -> dict[str, dict]:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # none yet, or unreadable: a rate is measured again, nothing else depends on it
            return {}

    def get(self, judge: str, method_version: int, task: str) -> Rate | None:
        entry = self._read().get(self._key(judge, method_version, task))
        if not entry or entry.get("seconds", 0) <= 0:
            return None
        return Rate(Work(entry["requests"], entry["characters"]), entry["seconds"])

    def by_task(self, judge: str, method_version: int) -> dict[str, Rate]:
        """Every task's rate measured on this machine for one judge and method version."""
        prefix = self._key(judge, method_version, "")
        return {key[len(prefix):]: Rate(Work(entry["requests"], entry["characters"]), entry["seconds"])
                for key, entry in self._read().items() if key.startswith(prefix)}

    def add(self, judge: str, method_version: int, measured: dict[str, tuple[Work, float]]) -> None:
        """Add one engine call's measurement of each task it computed (work, seconds) to the task's rate, in one write
        (every call measured on this machine counts alike)."""
        if not self.path.parent.is_dir():
            return  # a store not created yet has nowhere to keep rates; the next run measures again
        rates = self._read()
        updated = datetime.now(UTC).isoformat(timespec="seconds")
        for task, (work, seconds) in measured.items():
            key = self._key(judge, method_version, task)
            old = rates.get(key, {})
            rates[key] = {"requests": old.get("requests", 0) + work.requests,
                          "characters": old.get("characters", 0) + work.characters,
                          "seconds": round(old.get("seconds", 0.0) + seconds, 3), "updated": updated}
        temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(rates, indent=1, sort_keys=True), encoding="utf-8")
        temporary.replace(self.path)  # whole or not at all: a reader never sees half a file
