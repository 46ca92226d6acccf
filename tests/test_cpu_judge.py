"""The embedded CPU judge for real: Qwen2.5-Coder-1.5B-Instruct assembled from its 22 chunk packages,
verified against the pinned SHA-256, run by llama.cpp through the built-in judge check. It must tell
present from absent facts far better than word overlap (the check's cases are built so that word
overlap scores 0.513), and its P(kept) must rank them. About 3 minutes on 2 cores."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scaffold_local.backends.embedded import EMBEDDED_MODELS, locate_gguf
from scaffold_local.cli import app
from scaffold_local.judging.config import DEFAULT_MODEL, ModelConfig

pytestmark = pytest.mark.real_model


def test_the_default_judge_is_the_verified_cpu_judge_and_it_judges(tmp_path):
    config = ModelConfig.load(DEFAULT_MODEL)
    name = config.model.removeprefix("embedded:")
    assert config.backend == "llama-cpp" and name == "qwen2.5-coder-1.5b-instruct"
    path = locate_gguf(name)  # assembled once into the cache and verified by SHA-256
    assert path.stat().st_size == EMBEDDED_MODELS[name].size

    result = CliRunner().invoke(app, ["check-judge", "--store", str(tmp_path / "store")])
    assert result.exit_code == 0, result.output
    assert "does no better than word overlap" not in result.output
    saved = json.loads(next((tmp_path / "store" / "judge-checks").glob("*.json")).read_text())
    assert saved["items"] == 72 and saved["failed"] == 0 and saved["method_version"] == config.method_version
    assert saved["judge_balanced_accuracy"] >= 0.75 > saved["overlap_balanced_accuracy"] + 0.2
    assert saved["auroc"] >= 0.85
