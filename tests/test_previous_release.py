"""Stores written by earlier releases are found again: every method version's run resumes with nothing
sent and writes byte-identical outputs. Commit e687b03 is the last one with views.py, requests.py and
cli.py as single modules (versions 1-5); fbf1f3e the last one before the package's wings (method/,
data/, judging/, runs/; versions 6-9).

Each archive holds that commit's store after, for each of its versions N, from the repository root:
    scaffold-local score tests/data/news.jsonl -m tests/configs/responder.toml --store S --method-version N --run-name vN
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold_local import runs
from scaffold_local.cli import app

from .helpers import RESPONDER_CONFIG

ROOT = Path(__file__).resolve().parents[1]
RELEASES = [("e687b03", version) for version in (1, 2, 3, 4, 5)] + [("fbf1f3e", version) for version in (6, 7, 8, 9)]
OUTPUTS = ("systems.json", "summaries.jsonl", "summaries.csv", "records.jsonl")


@pytest.mark.parametrize(("commit", "version"), RELEASES)
def test_a_run_of_a_previous_release_resumes_with_nothing_sent(commit, version, tmp_path, monkeypatch):
    with tarfile.open(ROOT / "tests" / "data" / f"store-{commit}.tar.gz") as archive:
        archive.extractall(tmp_path / "store", filter="data")
    run_dir = tmp_path / "store" / "runs" / f"v{version}"
    before = {name: (run_dir / name).read_bytes() for name in OUTPUTS}
    monkeypatch.chdir(ROOT)  # the run's identity holds the input path as given
    result = CliRunner().invoke(app, ["score", "tests/data/news.jsonl", "-m", str(RESPONDER_CONFIG.relative_to(ROOT)),
                                      "--store", str(tmp_path / "store"), "--method-version", str(version),
                                      "--run-name", f"v{version}"])
    assert result.exit_code == 0, result.output
    assert "scaffolds: 0 extracted, 2 reused from the store; judgments: 0 sent" in result.output
    assert {name: (run_dir / name).read_bytes() for name in OUTPUTS} == before
    assert runs.load(run_dir).spec.method_version == version


def test_every_shipped_judge_keeps_the_fingerprint_it_had_before_the_redesign():
    """The fingerprint keys every stored scaffold and judgment; the registry now derives the settings
    it leaves out (each backend's throughput-only options) where one global list did before. Judges
    added since have no earlier fingerprint to keep. One changed on purpose: the hosted judge names its model's
    tokenizer since its readings send the package's prompt tokens (before, the server rendered a reading of an
    empty answer with the answer's turn closed)."""
    from scaffold_local.judging.config import ModelConfig, available_configs

    before = json.loads((ROOT / "tests" / "snapshots" / "fingerprints.json").read_text())
    now = {c.name: c.fingerprint() for c in available_configs()}
    now["tests/configs/responder.toml"] = ModelConfig.load(str(RESPONDER_CONFIG)).fingerprint()
    assert before.keys() <= now.keys(), "a judge of the previous release is no longer shipped"
    assert {name: now[name] for name in before} == before
