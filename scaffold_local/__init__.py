"""scaffold_local: Semantic Scaffold summary evaluation with open-weight judges on local hardware.

Extract a scaffold (facts, key questions, entities) once per source document, align every
candidate summary against it, and compute FPS, QPS, EPS, F, FC, QC and the baselines.

    from scaffold_local import runs
    pipeline = runs.open_judge(runs.JudgeOptions(store="scaffold_store"))  # the default judge
    try:
        outcome = runs.plan(pipeline, runs.load_input("in.jsonl")).execute()
    finally:
        pipeline.close()
    run = runs.load(outcome.run_dir)

In a notebook, `scaffold_local.evaluate(df)` does the same for a DataFrame, a `datasets.Dataset` or a
list of dicts and returns pandas tables (evaluation.py).
"""

from typing import TYPE_CHECKING, Any

from . import runs
from .errors import ScaffoldLocalError
from .method.metrics import SummaryScores, SystemScores, score_summary, system_means
from .method.scaffold import Scaffold
from .runs import FieldMap, LoadedInput, ModelConfig, Pipeline, RunOutcome, load_input, load_records

if TYPE_CHECKING:  # for type checkers and the API reference; at run time on first use (below)
    from .evaluation import Evaluation, evaluate

__version__ = "0.1.0"
__all__ = ["Evaluation", "FieldMap", "LoadedInput", "ModelConfig", "Pipeline", "RunOutcome", "Scaffold",
           "ScaffoldLocalError", "SummaryScores", "SystemScores", "evaluate", "load_input", "load_records", "runs",
           "score_summary", "system_means", "__version__"]


def __getattr__(name: str) -> Any:
    """`evaluate` and `Evaluation` on first use: they bring pandas and the analysis (a second to import)."""
    if name in ("evaluate", "Evaluation"):
        from . import evaluation

        return getattr(evaluation, name)
    raise AttributeError(f"module 'scaffold_local' has no attribute {name!r}")
