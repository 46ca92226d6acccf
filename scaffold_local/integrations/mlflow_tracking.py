"""A run's analysis logged to MLflow (`pip install 'scaffold-local[mlflow]'`; `scaffold-local report RUN
--mlflow mlruns`).

One MLflow run per scaffold_local run, named after its folder, holding:
- params: what makes the number traceable: judge, backend, model, method version, structured outputs,
  decision threshold, the input's fingerprint, each prompt's and schema's SHA-256, package versions;
- metrics `<metric>/<system>`: the system's mean as `score` prints it, and `<metric>/<system>/low` and
  `/high`: the 95% interval over documents of the paired mean the report compares (`/paired_mean` too
  where it differs from the mean);
- the report folder (report.html and every table) as artifacts under `report/`.

A target without a scheme is a folder: MLflow 3 refuses its plain-file store, so the folder holds a SQLite
store (`mlflow.db`) and the artifacts (`artifacts/`). A URI (http://, sqlite:///, databricks) is used as given.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

from ..analysis.run_analysis import MultiRunAnalysis, RunAnalysis
from ..errors import MissingExtraError

try:
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient
except ImportError as missing:
    raise MissingExtraError("mlflow", "mlflow") from missing

DEFAULT_EXPERIMENT = "scaffold_local"


def tracking_target(target: str) -> tuple[str, str | None]:
    """(tracking URI, artifact location for a new experiment or None for MLflow's default)."""
    if "://" in target:
        return target, None
    folder = Path(target).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'mlflow.db'}", (folder / "artifacts").as_uri()


def log_analysis(analysis: MultiRunAnalysis, report_dir: Path, target: str,
                 experiment: str = DEFAULT_EXPERIMENT) -> list[str]:
    """Log every analysed run; the MLflow run ids, in the analysis' order."""
    uri, artifacts = tracking_target(target)
    logging.getLogger("mlflow").setLevel(logging.WARNING)  # its notes on creating the store's tables: not the user's
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment, artifact_location=artifacts)
    ids = []
    for run_analysis in analysis.runs:
        run = client.create_run(experiment_id, run_name=run_analysis.name,
                                tags={"scaffold_local.run_dir": str(run_analysis.run.dir)})
        stamp = int(time.time() * 1000)
        client.log_batch(run.info.run_id,
                         metrics=[Metric(key, value, stamp, 0) for key, value in metrics(run_analysis).items()],
                         params=[Param(key, value) for key, value in params(run_analysis).items()])
        client.log_artifacts(run.info.run_id, str(report_dir), artifact_path="report")
        client.set_terminated(run.info.run_id)
        ids.append(run.info.run_id)
    return ids


def _key(text: str) -> str:
    """MLflow keys allow letters, digits, '_', '-', '.', ' ' and '/': a system's other characters become '_'."""
    return re.sub(r"[^\w\-. /]", "_", text)


def metrics(run_analysis: RunAnalysis) -> dict[str, float]:
    out: dict[str, float] = {}
    for system, scores in run_analysis.overall.items():
        for metric, mean in scores.metrics.items():
            if mean.mean is not None:
                out[_key(f"{metric}/{system}")] = mean.mean
    for metric, comparison in run_analysis.comparisons.items():
        for m in comparison.means:
            base = _key(f"{metric}/{m.system}")
            if m.low is not None and m.high is not None:
                out[f"{base}/low"], out[f"{base}/high"] = m.low, m.high
            if out.get(base) != m.mean:
                out[f"{base}/paired_mean"] = m.mean
    return out


def params(run_analysis: RunAnalysis) -> dict[str, str]:
    spec = run_analysis.run.spec
    judge = spec.judge
    out = {f"judge.{key}": str(judge[key]) for key in ("name", "backend", "model", "structured_outputs", "seed")
           if judge.get(key) is not None}
    out["method_version"] = str((spec.method or {}).get("number", 1))  # runs before method versions are version 1
    if spec.engines:  # the engine that answered last: its backend, versions and structured-output backend
        out |= {f"engine.{key}": str(value) for key, value in spec.engines[-1].items()
                if isinstance(value, str | int | float)}
    out["decision_threshold"] = str(spec.decision_threshold)
    out["judge_fingerprint"] = spec.judge_fingerprint
    out["input.fingerprint"] = str(spec.input.get("fingerprint"))
    out |= {f"prompt.{task}": str(p.get("sha256")) for task, p in spec.prompts.items()}
    out["schemas.static_sha256"] = str(spec.schemas.get("static_sha256"))
    out |= {f"version.{name}": str(v) for name, v in (spec.versions or {}).items() if v}
    return {_key(k): v for k, v in out.items()}
