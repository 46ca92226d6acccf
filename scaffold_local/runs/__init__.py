"""A run end to end: the pipeline that scores (pipeline.py), where its scaffolds come from
(sources.py), judge comparisons (comparison.py), justifications on demand (explain.py), and reading a
finished run (run.py: `scaffold_local.runs.load(path)`); every front end sets a run up through planning.py
(`runs.plan(pipeline, loaded, options).execute()`)."""

import warnings
from typing import Any

from .planning import RunOptions, RunPlan, plan
from .run import Run, in_store, load

__all__ = ["Run", "RunOptions", "RunPlan", "in_store", "load", "plan"]


def __getattr__(name: str) -> Any:
    if name == "open":  # the name before `load`: kept for scripts, without shadowing the built-in here
        warnings.warn("scaffold_local.runs.open is now scaffold_local.runs.load", DeprecationWarning, stacklevel=2)
        return load
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
