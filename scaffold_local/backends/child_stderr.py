"""The first error line of engine processes that fail to start.

vLLM starts its engine core (and workers) as child processes. When one of them fails, the parent
only learns "Engine core initialization failed. See root cause above."; the root cause was printed
by the child to the stderr it inherited. `ChildStderr` points fd 2 at a pipe while children are
started, so they inherit the pipe, and a thread copies everything to the real stderr while
remembering the first error line. Users still see the engine's full log, and the error raised in the
parent can name the root cause.
"""

from __future__ import annotations

import os
import re
import select
import sys
import threading
import time

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


class ChildStderr:
    """Context manager: children started inside it write their stderr through a pipe that is copied
    to the real stderr for as long as they live; `first_error()` returns their first error line."""

    _KEEP_CHARS = 200_000  # enough for any start-up traceback; later output is only forwarded

    def __init__(self) -> None:
        self._seen: list[str] = []
        self._kept = 0
        self._last_read = time.monotonic()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ChildStderr:
        sys.stderr.flush()
        self._real_stderr = os.dup(2)
        read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)
        self._thread = threading.Thread(target=self._copy, args=(read_end,), name="child-stderr", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        sys.stderr.flush()
        os.dup2(self._real_stderr, 2)  # the children keep the pipe; this process writes directly again

    def _copy(self, read_end: int) -> None:
        while True:
            ready, _, _ = select.select([read_end], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(read_end, 65536)
            if not chunk:  # every child has exited
                break
            self._last_read = time.monotonic()
            os.write(self._real_stderr, chunk)
            if self._kept < self._KEEP_CHARS:
                text = chunk.decode("utf-8", "replace")
                self._seen.append(text)
                self._kept += len(text)
        os.close(read_end)
        os.close(self._real_stderr)

    def first_error(self, settle_s: float = 0.5, timeout_s: float = 5.0) -> str | None:
        """The children's first error line, once their output has settled (a failed child may still
        be flushing when the parent notices the failure)."""
        deadline = time.monotonic() + timeout_s
        while self._thread is not None and self._thread.is_alive() and time.monotonic() < deadline:
            if time.monotonic() - self._last_read >= settle_s:
                break
            time.sleep(0.05)
        return first_error_line("".join(self._seen))
