"""Fixtures shared by the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold_local.judging.config import ModelConfig

from .helpers import RESPONDER_CONFIG, SUMMARIES, write_jsonl


@pytest.fixture
def wide_console(monkeypatch):
    """Tables on one line each, whatever the terminal (`pytestmark = pytest.mark.usefixtures("wide_console")`)."""
    from scaffold_local import cli

    monkeypatch.setattr(cli.console, "width", 220)
    monkeypatch.setattr(cli.err, "width", 220)


@pytest.fixture
def responder_config() -> ModelConfig:
    return ModelConfig.load(str(RESPONDER_CONFIG))


@pytest.fixture
def small_input(tmp_path: Path) -> Path:
    rows = [{"doc_id": d, "document": text, "system": s, "summary": summary} for d, text, s, summary in SUMMARIES]
    return write_jsonl(tmp_path / "small.jsonl", rows)


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """One real vLLM OpenAI-compatible server for the session (CPU build, embedded model)."""
    from .helpers import VllmServer

    server = VllmServer(tmp_path_factory.mktemp("server") / "server.log").wait_ready()
    yield server
    server.stop()
