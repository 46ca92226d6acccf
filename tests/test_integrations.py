"""The optional integrations: MLflow logging from `report --mlflow` (against a local tracking folder),
and the promise that `import scaffold_local` and the command line never import Inspect AI or MLflow,
and that each says how to install itself when missing."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from scaffold_local import Pipeline, load_input, runs
from scaffold_local.cli import app
from scaffold_local.errors import MissingExtraError


def test_report_logs_metrics_intervals_and_the_report_to_an_mlflow_folder(small_input, responder_config, tmp_path):
    from mlflow.tracking import MlflowClient

    pipeline = Pipeline(responder_config, tmp_path / "store")
    outcome = pipeline.score(load_input(small_input))
    tracking = tmp_path / "mlruns"
    result = CliRunner().invoke(app, ["report", str(outcome.run_dir), "--mlflow", str(tracking)])
    assert result.exit_code == 0, result.output
    client = MlflowClient(f"sqlite:///{tracking / 'mlflow.db'}")
    [run] = client.search_runs([client.get_experiment_by_name("scaffold_local").experiment_id])
    assert run.info.run_name == outcome.run_dir.name and run.info.status == "FINISHED"
    systems = {s.system: s for s in runs.load(outcome.run_dir).systems}
    assert run.data.metrics["fps/brief"] == systems["brief"].metrics["fps"].mean
    assert run.data.metrics["fps/brief/low"] <= run.data.metrics["fps/brief"] <= run.data.metrics["fps/brief/high"]
    assert run.data.params["judge.name"] == responder_config.name and run.data.params["method_version"] == str(pipeline.method.number)
    assert run.data.params["input.fingerprint"] == runs.load(outcome.run_dir).spec.input["fingerprint"]
    report = [a.path for a in client.list_artifacts(run.info.run_id, "report")]
    assert "report/report.html" in report and any(p.endswith(".csv") for p in report)

    again = CliRunner().invoke(app, ["report", str(outcome.run_dir), "--mlflow", str(tracking)])
    assert again.exit_code == 0 and len(client.search_runs([run.info.experiment_id])) == 2  # one more, same experiment


def test_the_package_and_the_command_line_never_import_the_integrations():
    code = ("import sys, scaffold_local; from typer.testing import CliRunner; from scaffold_local.cli import app; "
            "r = CliRunner().invoke(app, ['report', '--help']); assert r.exit_code == 0, r.output; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlflow', 'inspect_ai')))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def _uninstalled(monkeypatch, package: str) -> None:
    """As if `package` were not installed: importing it, or any module of it, raises ImportError."""
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")] + [package]:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize(("module", "package", "extra"), [
    ("scaffold_local.integrations.mlflow_tracking", "mlflow", "mlflow"),
    ("scaffold_local.integrations.inspect_scorer", "inspect_ai", "inspect"),
])
def test_a_missing_extra_says_how_to_install_it(monkeypatch, module, package, extra):
    _uninstalled(monkeypatch, package)
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(MissingExtraError) as raised:
        importlib.import_module(module)
    assert raised.value.hint == f"pip install 'scaffold-local[{extra}]'"


def test_report_without_the_mlflow_extra_is_an_error_with_the_install_line(small_input, responder_config, tmp_path,
                                                                           monkeypatch):
    outcome = Pipeline(responder_config, tmp_path / "store").score(load_input(small_input))
    _uninstalled(monkeypatch, "mlflow")
    monkeypatch.delitem(sys.modules, "scaffold_local.integrations.mlflow_tracking", raising=False)
    result = CliRunner().invoke(app, ["report", str(outcome.run_dir), "--mlflow", str(tmp_path / "mlruns")])
    assert result.exit_code == 2 and "pip install 'scaffold-local[mlflow]'" in result.output
    assert (outcome.run_dir / "report" / "report.html").is_file()  # the report itself was written first
