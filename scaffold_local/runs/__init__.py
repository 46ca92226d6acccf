"""The run service, and the one boundary every front end (the CLI, `evaluate()`, the Inspect scorer) goes through.

    pipeline = runs.open_judge(runs.JudgeOptions(model="qwen2.5-coder-1.5b-llama-cpp", store=store))
    try:
        plan = runs.plan(pipeline, runs.load_input(path), runs.RunOptions(word_budget=60))  # every check, nothing sent
        outcome = plan.execute()
    finally:
        pipeline.close()
    run = runs.load(outcome.run_dir)

Set-up (planning.py), the pipeline that scores (pipeline.py), where its scaffolds come from (sources.py), judge
comparisons (comparison.py), justifications on demand (explain.py), and reading a finished run (run.py). Besides its
own names, this module exports what a front end hands to the service or reads from it: the input's types and loaders,
the judge configs and the default method version, the metrics' names and a summary's scores."""

import warnings
from typing import Any

from ..data.inputs import FieldMap, InputIssue, LoadedInput, missing_from_every_record, most_common_issue, no_usable_records
from ..data.loading import load_input, load_records
from ..data.store import check_run_name
from ..judging.config import DEFAULT_MODEL, ModelConfig, available_configs
from ..judging.dispatch import ProgressFactory, no_progress
from ..method.metrics import METRICS, SummaryScores
from ..method.versions import DEFAULT_METHOD_VERSION
from .comparison import ComparisonPlan, plan_comparison
from .extracting import write_scaffold_file
from .failures import describe_partial
from .pipeline import Pipeline, RunOutcome
from .planning import ExtractionPlan, JudgeOptions, RunOptions, RunPlan, open_judge, plan, plan_extraction
from .preparing import Prepared
from .run import Run, in_store, load
from .sources import source_from_options

__all__ = [
    "DEFAULT_METHOD_VERSION", "DEFAULT_MODEL", "METRICS", "ComparisonPlan", "ExtractionPlan", "FieldMap",
    "InputIssue", "JudgeOptions", "LoadedInput", "ModelConfig", "Pipeline", "Prepared", "ProgressFactory", "Run",
    "RunOptions", "RunOutcome", "RunPlan", "SummaryScores", "available_configs", "check_run_name", "describe_partial",
    "in_store", "load", "load_input", "load_records", "missing_from_every_record", "most_common_issue", "no_progress",
    "no_usable_records", "open_judge", "plan", "plan_comparison", "plan_extraction", "source_from_options",
    "write_scaffold_file",
]


def __getattr__(name: str) -> Any:
    if name == "open":  # the name before `load`: kept for scripts, without shadowing the built-in here
        warnings.warn("scaffold_local.runs.open is now scaffold_local.runs.load", DeprecationWarning, stacklevel=2)
        return load
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
