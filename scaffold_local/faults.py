"""Named points where tests kill the process (SIGKILL) to prove that a run survives a kill anywhere.

A no-op unless one of two environment variables is set:

- ``SCAFFOLD_LOCAL_KILL_AT="<site>:<n>"``: the process kills itself with SIGKILL (as ``kill -9`` or
  an out-of-memory killer would: no handler, no flush, no clean-up) at its n-th passage through
  <site>. A site is counted under its own name and under ``<site>/<name>`` when the caller names
  what it is doing there: ``write:3`` is the third file written, ``write/records.jsonl:1`` the first
  write of the records export.
- ``SCAFFOLD_LOCAL_FAULT_LOG=<file>``: every passage is appended to <file> as one JSON line (process
  id, site, name, count, details such as the cache keys of an engine call), before any kill, so a
  test knows what a process sent and where it died.

Sites: ``engine_call`` (a batch about to go to the engine), ``engine_done`` (its results back, not yet
stored), ``cache_put`` (records written inside their transaction, not yet committed), ``write`` (half
of a file's text written to its temporary file, or a table written and not yet renamed).
"""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from typing import Any

KILL_AT = "SCAFFOLD_LOCAL_KILL_AT"
FAULT_LOG = "SCAFFOLD_LOCAL_FAULT_LOG"

_passages: Counter[str] = Counter()


def point(site: str, name: str | None = None, **details: Any) -> None:
    kill_at, log = os.environ.get(KILL_AT), os.environ.get(FAULT_LOG)
    if not kill_at and not log:
        return
    counted = [site] if name is None else [site, f"{site}/{name}"]
    for key in counted:
        _passages[key] += 1
    due = bool(kill_at) and any(kill_at == f"{key}:{_passages[key]}" for key in counted)
    if log:
        line = json.dumps({"pid": os.getpid(), "site": site, "name": name, "n": _passages[site], "kill": due,
                           **details}) + "\n"
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    if due:
        os.kill(os.getpid(), signal.SIGKILL)
