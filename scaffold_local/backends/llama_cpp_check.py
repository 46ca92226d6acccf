"""Before a llama.cpp build first serves a model on a machine: one short decode in a child process.

A native library built for another CPU, or with kernels the CPU or its hypervisor cannot run (AMX on
some Intel Xeons), kills the process with a signal: no traceback, no hint, work in flight lost. The
child process takes that death instead; the command then ends with an error naming the engine and
the signal, and a hint with the rebuild line. A check that passes is recorded in the cache under a
key of the build (its library files), the CPU, the model file and the thread count, so later runs
pay nothing (about 2 s for the 1.5B judge, once).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from ..errors import BackendError
from .child_stderr import engine_log_path
from .embedded import cache_root
from .llama_cpp_build import cpu_flags, cpu_model

ENGINE = "llama-cpp"
TIMEOUT_S = 300.0
# The child: load the model as the backend does and decode a few tokens after a short prompt (the
# prompt's forward pass is a matrix product, the decode steps matrix-vector ones: both kernels run).
_CHILD = """
import json, sys
import llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, n_batch=64, n_threads=int(sys.argv[2]), verbose=True)
out = llm.create_completion("Question: what is the capital of France? Answer:", max_tokens=4, temperature=0)
print(json.dumps({"text": out["choices"][0]["text"], "system_info": llama_cpp.llama_print_system_info().decode()}))
"""


class SmokeCheck(BaseModel):
    """A passed check, as recorded in the cache."""

    engine: str = ENGINE
    llama_cpp_python: str
    cpu: str
    model: str
    threads: int
    system_info: str  # llama.cpp's own list of the instruction sets it was built with
    seconds: float
    passed_at: str
    fresh: bool = False  # run now, rather than read from the cache


def library_fingerprint() -> str:
    """SHA-256 over the native libraries of the installed llama-cpp-python: a rebuild changes it."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise BackendError("llama-cpp-python is not installed", backend=ENGINE,
                           hint="pip install 'scaffold-local[llama-cpp]'   (or `make setup`)")
    digest = hashlib.sha256()
    for path in sorted((Path(next(iter(spec.submodule_search_locations))) / "lib").glob("*")):
        if path.is_file():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def check_key(model: Path, threads: int) -> str:
    stat = model.stat()
    parts = (library_fingerprint(), cpu_model(), " ".join(sorted(cpu_flags())), str(model.resolve()),
             str(stat.st_size), str(stat.st_mtime_ns), str(threads))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def record_path(key: str) -> Path:
    return cache_root() / "engine-checks" / f"{ENGINE}-{key}.json"


def ensure_llama_cpp_runs(model: Path, threads: int, child: Sequence[str] | None = None) -> SmokeCheck:
    """The recorded check of this build, CPU, model and thread count, or a new one run in a child process.
    `child` replaces the child's command line (tests use it to make a child die)."""
    path = record_path(check_key(model, threads))
    if path.is_file():
        try:
            return SmokeCheck.model_validate_json(path.read_text())
        except ValueError:
            pass  # a damaged record: check again
    command = list(child) if child is not None else [sys.executable, "-c", _CHILD, str(model), str(threads)]
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise BackendError(f"a 4-token smoke decode of {model.name} did not finish in {TIMEOUT_S:.0f} s on this CPU "
                           f"({cpu_model()})", backend=ENGINE, hint=_rebuild_hint()) from None
    seconds = time.monotonic() - start
    if done.returncode != 0:
        log = _keep_log(done.stderr)
        if done.returncode < 0:
            name = _signal_name(-done.returncode)
            raise BackendError(
                f"llama.cpp (llama-cpp-python {_version()}) died with {name} (signal {-done.returncode}) in a "
                f"4-token smoke decode of {model.name} on this CPU ({cpu_model()}): its build does not run here. "
                f"Nothing was scored; llama.cpp's log: {log}", backend=ENGINE, hint=_rebuild_hint())
        raise BackendError(f"a 4-token smoke decode of {model.name} failed (exit {done.returncode}): "
                           f"{_last_line(done.stderr)}; llama.cpp's log: {log}", backend=ENGINE)
    try:
        output = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        output = {}
    check = SmokeCheck(llama_cpp_python=_version(), cpu=cpu_model(), model=str(model), threads=threads,
                       system_info=str(output.get("system_info", "")).strip(), seconds=round(seconds, 2),
                       passed_at=datetime.now(UTC).isoformat(timespec="seconds"))
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")  # two processes checking at once: each record whole
    partial.write_text(check.model_dump_json(exclude={"fresh"}, indent=1))
    partial.replace(path)
    return check.model_copy(update={"fresh": True})


def _rebuild_hint() -> str:
    return (f"rebuild llama.cpp for this CPU (AMX off; about 5 minutes): `make rebuild-llama-cpp` in a clone of "
            f"scaffold_local, or `{sys.executable} -m scaffold_local.backends.llama_cpp_build install --rebuild`; if "
            "a build made that way dies too, the README's 'llama.cpp on every x86-64 CPU' says what to turn off next")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _version() -> str:
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


def _keep_log(text: str) -> str:
    path = engine_log_path(f"{ENGINE}-smoke")
    if path is None:  # the engines' output goes to the console
        sys.stderr.write(text)
        return "printed above"
    with path.open("a") as log:
        log.write(text)
    return str(path)
