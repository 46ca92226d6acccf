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
    run = runs.load(next((tmp_path / "store" / "runs").iterdir()))
    assert {s.system for s in run.systems} == {"brief", "details"}
    assert run.spec.engines and all(e["engine"] == "relay" and e["chunk"] == 3 for e in run.spec.engines)


def installed_package(root, name: str, entry_points: str, module: str) -> None:
    """A package installed the way pip leaves one: its module and a dist-info with the entry points."""
    (root / f"{name}.py").write_text(module)
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[scaffold_local.backends]\n{entry_points}\n")


@pytest.fixture
def fresh_registry(monkeypatch):
    """The backend registry as if nothing had looked it up yet, restored afterwards."""
    from scaffold_local import backends

    monkeypatch.setattr(backends, "_ENGINES", dict(backends._ENGINES))
    monkeypatch.setattr(backends, "_discovered", False)
    return backends


def test_a_backend_of_another_installed_package_is_found_through_its_entry_point(small_input, tmp_path, monkeypatch,
                                                                                  fresh_registry):
    installed_package(tmp_path, "echo_engine", "echo = echo_engine:Echo\nbroken = echo_engine:Missing", '''
from scaffold_local.backends import BaseBackend
from scaffold_local.backends.responder import ResponderBackend

class Echo(BaseBackend):
    name = "echo"

    def __init__(self, config):
        super().__init__(config)
        self.rule = ResponderBackend(config.model_copy(update={"backend": "responder", "engine": {}}))

    def generate(self, requests):
        return self.rule.generate(requests)

    def describe(self):
        return {"engine": "echo"}
''')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert {"echo", "broken", "llama-cpp"} <= set(fresh_registry.backend_names())
    config = tmp_path / "echo.toml"
    config.write_text('name = "echo"\nbackend = "echo"\nmodel = "rule"\nstructured_outputs = "computed"\n')
    result = CliRunner().invoke(app, ["score", str(small_input), "-m", str(config), "--store", str(tmp_path / "store")])
    assert result.exit_code == 0, result.output
    assert "judge: echo (echo)" in result.output
    with pytest.raises(fresh_registry.BackendError, match="'broken' is declared as 'echo_engine:Missing', which does not"):
        fresh_registry.backend_class("broken")


def test_code_built_on_the_package_tests_itself_on_the_public_responder(tmp_path):
    """`scaffold_local.testing.responder_judge()`: the responder's rules make the first two sentences of a
    document its main facts, and a fact kept when a summary sentence holds 60% of its content words."""
    from scaffold_local import evaluate
    from scaffold_local.testing import responder_judge

    document = "Ada Lovelace wrote the first program. She worked with Charles Babbage. The engine was never built."
    records = [{"doc_id": "d", "document": document, "system": "copy", "summary": "Ada Lovelace wrote the first "
                "program. She worked with Charles Babbage."},
               {"doc_id": "d", "document": document, "system": "detail", "summary": "The engine was never built."}]
    systems = evaluate(records, judge=responder_judge(), store=tmp_path / "store", progress=False).systems
    assert systems.loc["copy", "main_fc"] == 1.0 and systems.loc["detail", "main_fc"] == 0.0
    assert systems.loc["detail", "supp_fc"] == 1.0
