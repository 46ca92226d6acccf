"""An engine's child processes fail to start: their first error line reaches the parent, and their
whole output still reaches the real stderr."""

from __future__ import annotations

import subprocess
import sys

from scaffold_local.backends.child_stderr import ENGINE_LOG_ENV, ChildStderr, engine_log_path, first_error_line

VLLM_LOG = """\
(EngineCore pid=2) WARNING 11-30 15:42:54 [cpu.py:224] Triton is not installed.
Loading safetensors checkpoint shards:   0% Completed | 0/1\rLoading safetensors checkpoint shards: 100% Completed
(EngineCore pid=2) ERROR 11-30 15:43:12 [core.py:1010] EngineCore failed to start.
Traceback (most recent call last):
  File "core.py", line 157, in __init__
    raise ValueError(
ValueError: Available memory on node 0 (3.0/4.0 GiB) on kv cache allocation is less than requested memory
RuntimeError: Engine core initialization failed. See root cause above.
"""


def test_first_error_line_prefers_the_exception_over_the_log_record():
    assert first_error_line(VLLM_LOG) == (
        "ValueError: Available memory on node 0 (3.0/4.0 GiB) on kv cache allocation is less than requested memory")
    assert first_error_line(VLLM_LOG.split("Traceback")[0]) == (
        "(EngineCore pid=2) ERROR 11-30 15:43:12 [core.py:1010] EngineCore failed to start.")
    assert first_error_line("all good\nWARNING: nothing failed\n") is None


def test_children_started_inside_are_watched_and_their_output_still_shown(capfd):
    child = [sys.executable, "-c",
             "import sys; print('loading', file=sys.stderr); raise MemoryError('node 0 has 0.4 GiB')"]
    watched = ChildStderr()
    with watched:
        process = subprocess.Popen(child)
        print("parent line", file=sys.stderr)
    assert process.wait(timeout=60) == 1
    assert watched.first_error() == "MemoryError: node 0 has 0.4 GiB"
    shown = capfd.readouterr().err
    assert "loading" in shown and "parent line" in shown and "MemoryError: node 0 has 0.4 GiB" in shown
    print("after the block", file=sys.stderr)  # the parent writes to its own stderr again
    assert capfd.readouterr().err == "after the block\n"


def test_with_a_log_file_the_children_write_there_and_not_on_the_console(capfd, tmp_path):
    child = [sys.executable, "-c", "import sys; print('WARNING engine note', file=sys.stderr); raise SystemExit(3)"]
    watched = ChildStderr(tmp_path / "engine.log")
    with watched:
        process = subprocess.Popen(child)
    assert process.wait(timeout=60) == 3
    watched.first_error()  # waits for the copy to settle
    assert "WARNING engine note" in (tmp_path / "engine.log").read_text()
    assert "engine note" not in capfd.readouterr().err


def test_the_engine_log_is_a_file_per_start_unless_named_or_sent_to_the_console(monkeypatch, tmp_path):
    monkeypatch.setenv("SCAFFOLD_LOCAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(ENGINE_LOG_ENV, raising=False)
    path = engine_log_path("vllm")
    assert path is not None and path.parent == tmp_path / "cache" / "logs" and path.name.startswith("vllm-")
    monkeypatch.setenv(ENGINE_LOG_ENV, str(tmp_path / "one.log"))
    assert engine_log_path("vllm") == tmp_path / "one.log"
    monkeypatch.setenv(ENGINE_LOG_ENV, "-")
    assert engine_log_path("vllm") is None
