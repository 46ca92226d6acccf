"""Fixtures shared by the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold_local.config import ModelConfig

from .helpers import RESPONDER_CONFIG, SUMMARIES, write_jsonl


@pytest.fixture
def responder_config() -> ModelConfig:
    return ModelConfig.load(str(RESPONDER_CONFIG))


@pytest.fixture
def small_input(tmp_path: Path) -> Path:
    rows = [{"doc_id": d, "document": text, "system": s, "summary": summary} for d, text, s, summary in SUMMARIES]
    return write_jsonl(tmp_path / "small.jsonl", rows)
