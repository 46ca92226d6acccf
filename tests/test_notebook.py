"""The example notebook (examples/evaluate.ipynb) runs top to bottom in a real Jupyter kernel, on the
responder and on the embedded model, and its numbers are those `score` gives on the same records."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from scaffold_local import ModelConfig, Pipeline, load_input, runs

from .helpers import RESPONDER_CONFIG, write_jsonl

NOTEBOOK = Path(__file__).parents[1] / "examples" / "evaluate.ipynb"


def _run_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: str) -> tuple[str, list[str], Path]:
    """The notebook executed with `judge` (a cell that raises fails the test); its text outputs, the
    kinds of its rich outputs, and its store."""
    store = tmp_path / "store"
    monkeypatch.setenv("SCAFFOLD_LOCAL_JUDGE", judge)
    monkeypatch.setenv("SCAFFOLD_LOCAL_STORE", str(store))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=1800, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    text = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs)
    kinds = [kind for o in outputs for kind in o.get("data", {})]
    return text, kinds, store


def _notebook_records() -> list[dict]:
    """The records the notebook scores: its data cell, run here."""
    import pandas as pd

    [cell] = [c for c in nbformat.read(NOTEBOOK, as_version=4).cells if "pd.DataFrame(" in c.source]
    namespace: dict = {"pd": pd}
    exec(cell.source, namespace)
    return namespace["df"].to_dict("records")


def _the_run(store: Path) -> runs.Run:
    [run_dir] = (store / "runs").iterdir()  # the DataFrame and the Dataset of the same records: one run
    return runs.load(run_dir)


def test_the_example_notebook_on_the_responder_gives_what_score_gives(tmp_path, monkeypatch):
    text, kinds, store = _run_notebook(tmp_path, monkeypatch, str(RESPONDER_CONFIG))
    assert "requests sent: 0" in text and "same run folder: True" in text
    assert "image/png" in kinds and "text/html" in kinds  # the FPS plot; the result's per-system table
    run = _the_run(store)
    records = write_jsonl(tmp_path / "same.jsonl", _notebook_records())
    scored = Pipeline(ModelConfig.load(str(RESPONDER_CONFIG)), tmp_path / "other-store").score(load_input(records))
    assert {(s.doc_id, s.system): s.values for s in run.summaries} == {
        (s.doc_id, s.system): s.values for s in scored.summaries}
    assert len(run.summaries) == 6 and {s.system for s in run.systems} == {"main-points", "side-detail", "wrong-number"}


@pytest.mark.real_model
def test_the_example_notebook_on_the_embedded_model(tmp_path, monkeypatch):
    text, kinds, store = _run_notebook(tmp_path, monkeypatch, "smollm2-135m-llama-cpp")
    assert "requests sent: 0" in text and "same run folder: True" in text and "image/png" in kinds
    run = _the_run(store)
    assert len(run.summaries) == 6 and run.spec.judge["name"] == "smollm2-135m-llama-cpp"
