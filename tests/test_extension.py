"""Extending scaffold_local from outside the package: a backend defined here, in the tests alone,
registered, configured by a TOML file and run end to end by `score`, touching no package file."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from scaffold_local import ModelConfig, runs
from scaffold_local.backends import BaseBackend, EngineOptions, register
from scaffold_local.backends.responder import ResponderBackend
from scaffold_local.cli import app


class RelayOptions(EngineOptions):
    throughput_only: ClassVar[frozenset[str]] = frozenset({"chunk"})
    chunk: int = 1  # requests relayed at a time
    tone: str = "plain"  # a setting that would shape outputs: part of the judge's fingerprint


@register
class Relay(BaseBackend):
    """A tiny engine: relays requests a chunk at a time to the responder's rule (answers computed from
    each request), reports a step per chunk and counts one retry per call, as a real engine might."""

    name = "relay"
    engine_options = RelayOptions
    reports_steps = True

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.rule = ResponderBackend(config.model_copy(update={"backend": "responder", "engine": {}}))

    def generate(self, requests: Any) -> Any:
        results = []
        for start in range(0, len(requests), self.options.chunk):
            results += self.rule.generate(requests[start:start + self.options.chunk])
            if self.on_step is not None:
                self.on_step(len(results), len(requests), 0, 0)
        self.retries["rate_limit"] += 1
        return results

    def describe(self) -> dict[str, Any]:
        return {"engine": "relay", "chunk": self.options.chunk}


def relay_config(tmp_path, engine: str) -> str:
    path = tmp_path / f"relay-{abs(hash(engine))}.toml"
    path.write_text(f'name = "relay"\nbackend = "relay"\nmodel = "rule"\nstructured_outputs = "computed"\n[engine]\n{engine}\n')
    return str(path)


def test_a_backend_from_outside_the_package_is_configured_checked_and_fingerprinted(tmp_path):
    one, four = ModelConfig.load(relay_config(tmp_path, "chunk = 1")), ModelConfig.load(relay_config(tmp_path, "chunk = 4"))
    assert one.fingerprint() == four.fingerprint()  # a throughput-only setting keeps every cached judgment
    assert ModelConfig.load(relay_config(tmp_path, 'tone = "loud"')).fingerprint() != one.fingerprint()
    with pytest.raises(ValueError, match=r"\[engine\] chunks: .*did you mean 'chunk'"):
        ModelConfig.load(relay_config(tmp_path, "chunks = 2"))


def test_score_runs_end_to_end_on_a_backend_defined_in_the_tests(small_input, tmp_path):
    result = CliRunner().invoke(app, ["score", str(small_input), "-m", relay_config(tmp_path, "chunk = 3"),
                                      "--store", str(tmp_path / "store")])
    assert result.exit_code == 0, result.output
    assert "judge: relay (relay)" in result.output and "scaffolds: 2 extracted" in result.output
    assert "retries: rate_limit" in result.output  # the dispatcher read the backend's declared retry count
    run = runs.open(next((tmp_path / "store" / "runs").iterdir()))
    assert {s.system for s in run.systems} == {"brief", "details"}
    assert run.spec.engines and all(e["engine"] == "relay" and e["chunk"] == 3 for e in run.spec.engines)
