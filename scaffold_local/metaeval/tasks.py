"""The meta-evaluation tasks by name, and one call that runs a task on a seeded sample of its data."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..data.store.rates import this_machine
from ..method.text import counted
from ..runs.pipeline import Pipeline
from . import aggrefact, end_to_end, frank, importance, pairs, realsumm, summedits, summeval
from .human_labels import load
from .results import MetaEvalResult

Adapter = Callable[[Pipeline, list[dict[str, Any]], int], MetaEvalResult]

# task name -> (the dataset folder it reads, how the judge's output is compared with people's)
TASKS: dict[str, tuple[str, Adapter]] = {
    "realsumm-alignment": ("realsumm", realsumm.alignment),
    "realsumm-extraction": ("realsumm", realsumm.extraction),
    "realsumm-importance": ("realsumm", importance.importance),
    "realsumm-end-to-end": ("realsumm", end_to_end.realsumm_end_to_end),
    "realsumm-pairs": ("realsumm", pairs.realsumm_pairs),
    "frank": ("frank", frank.faithfulness),
    "summeval": ("summeval", summeval.correlation),
    "summeval-pairs": ("summeval", pairs.summeval_pairs),
    "summedits": ("summedits", summedits.consistency),
    "summedits-entities": ("summedits", summedits.entity_edits),
    "aggrefact": ("aggrefact", aggrefact.error_spans),
}


def tasks_for(reads_main: bool) -> list[str]:
    """Every task that applies to a method version: realsumm-importance needs one that reads main points."""
    return [task for task in TASKS if task != "realsumm-importance" or reads_main]


def run_task(pipeline: Pipeline, task: str, data_dir: Path, *, limit: int | None = None, split: str = "all",
             per_document: int | None = None, seed: int = 0,
             announce: Callable[[str], None] | None = None) -> MetaEvalResult:
    """One task on `limit` documents of `split` (seeded), the sample recorded in the result; `announce` is told the
    sample's size before anything is sent."""
    dataset, adapter = TASKS[task]
    docs = load(data_dir, dataset, limit, seed, split, per_document)
    if announce is not None:
        summaries = sum(len(doc.get("summaries", ())) for doc in docs)
        half = "both halves" if split == "all" else f"the {split} half"
        announce(f"{task}: {counted(len(docs), 'document')} of {half}, {counted(summaries, 'summary', 'summaries')}")
    said, engine_seconds, started = len(pipeline.estimates_said), pipeline.dispatch.engine_seconds, time.perf_counter()
    result = adapter(pipeline, docs, seed)
    result.cost = {"machine": this_machine(), "seconds": round(time.perf_counter() - started, 1),
                   "engine_seconds": round(pipeline.dispatch.engine_seconds - engine_seconds, 1),
                   "estimates_said": pipeline.estimates_said[said:]}
    result.sample = {"split": split, "limit": limit, "per_document": per_document, "seed": seed,
                     "method_version": pipeline.method.number, "thresholds": pipeline.judge.thresholds or None}
    return result
