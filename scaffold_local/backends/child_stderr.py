"""Engine output: kept in a log file, not on the user's screen, with the first error line of
engine processes that fail to start.

vLLM starts its engine core (and workers) as child processes. When one of them fails, the parent
only learns "Engine core initialization failed. See root cause above."; the root cause was printed
by the child to the stderr it inherited. `ChildStderr` points fd 2 at a pipe while children are
started, so they inherit the pipe, and a thread copies everything to the engine log (or, when
asked, the real stderr) while remembering the first error line: the error raised in the parent can
name the root cause, and a user sees one progress bar and the result, not pages of engine notes.
"""

from __future__ import annotations

import logging
import os
import re
import select
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from .embedded import cache_root

# Where engines' own output goes: a file per engine start under <cache>/logs/ by default; "-" keeps
# it on the console (`scaffold-local --verbose` sets that), a path names one file (appended to).
ENGINE_LOG_ENV = "SCAFFOLD_LOCAL_ENGINE_LOG"

# A Python exception line ("ValueError: ...", "torch.OutOfMemoryError: ...") or, failing that, a
# vLLM log record at ERROR level.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception): \S")
_ERROR_RECORD = re.compile(r"^(?:\([^)]*\)\s*)?ERROR \d\d-\d\d ")


def first_error_line(text: str) -> str | None:
    """The first exception line in a log (e.g. a child's traceback), else the first ERROR record."""
    lines = [line.strip() for line in re.split(r"[\r\n]+", text)]
    for pattern in (_EXCEPTION_LINE, _ERROR_RECORD):
        for line in lines:
            if pattern.match(line):
                return line
    return None


def engine_log_path(engine: str) -> Path | None:
    """The file this engine start logs to, or None for the console."""
    chosen = os.environ.get(ENGINE_LOG_ENV, "")
    if chosen == "-":
        return None
    if chosen:
        path = Path(chosen).expanduser()
    else:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        path = cache_root() / "logs" / f"{engine}-{stamp}-{os.getpid()}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def log_to_file(logger_name: str, path: Path | None) -> None:
    """An engine's in-process logger writes to its log file instead of the console (its format kept)."""
    if path is None:
        return
    logger = logging.getLogger(logger_name)
    streams = [h for h in logger.handlers if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)]
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(streams[0].formatter if streams else logging.Formatter("%(levelname)s %(name)s %(message)s"))
    for stream in streams:
        logger.removeHandler(stream)
    logger.addHandler(handler)


class ChildStderr:
    """Context manager: children started inside it write their stderr through a pipe that is copied
    to `log` (else the real stderr) for as long as they live; `first_error()` returns their first
    error line."""

    _KEEP_CHARS = 200_000  # enough for any start-up traceback; later output is only copied

    def __init__(self, log: Path | None = None) -> None:
        self.log = log
        self._seen: list[str] = []
        self._kept = 0
        self._last_read = time.monotonic()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ChildStderr:
        sys.stderr.flush()
        self._real_stderr = os.dup(2)
        self._destination = (os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if self.log
                             else os.dup(2))
        read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)
        self._thread = threading.Thread(target=self._copy, args=(read_end,), name="child-stderr", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        sys.stderr.flush()
        os.dup2(self._real_stderr, 2)  # the children keep the pipe; this process writes directly again
        os.close(self._real_stderr)

    def _copy(self, read_end: int) -> None:
        while True:
            ready, _, _ = select.select([read_end], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(read_end, 65536)
            if not chunk:  # every child has exited
                break
            self._last_read = time.monotonic()
            os.write(self._destination, chunk)
            if self._kept < self._KEEP_CHARS:
                text = chunk.decode("utf-8", "replace")
                self._seen.append(text)
                self._kept += len(text)
        os.close(read_end)
        os.close(self._destination)

    def first_error(self, settle_s: float = 0.5, timeout_s: float = 5.0) -> str | None:
        """The children's first error line, once their output has settled (a failed child may still
        be flushing when the parent notices the failure)."""
        deadline = time.monotonic() + timeout_s
        while self._thread is not None and self._thread.is_alive() and time.monotonic() < deadline:
            if time.monotonic() - self._last_read >= settle_s:
                break
            time.sleep(0.05)
        return first_error_line("".join(self._seen))
