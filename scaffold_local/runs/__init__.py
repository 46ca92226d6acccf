"""A run end to end: the pipeline that scores (pipeline.py), where its scaffolds come from
(sources.py), judge comparisons (comparison.py), justifications on demand (explain.py), and reading a
finished run (run.py: `scaffold_local.runs.open(path)`)."""

from .run import Run, in_store, open  # noqa: A004 - runs.open(path) reads like the file it opens

__all__ = ["Run", "in_store", "open"]
