"""FPS, QPS, EPS and FC as an Inspect AI scorer (`pip install 'scaffold-local[inspect]'`).

    from inspect_ai import Task
    from inspect_ai.solver import generate
    from scaffold_local.integrations.inspect_scorer import scaffold_scorer

    Task(dataset=documents, solver=generate(), scorer=scaffold_scorer(judge="qwen2.5-coder-1.5b-llama-cpp"))

A sample's input is the document, the model's output its summary. Each sample is scored as one small
run of the package's store (`store`): the scaffold is extracted the first time a document is seen and
read from the store by every later sample and Inspect run with the same judge, and a sample scored
before is answered from the judgment cache. The judge runs in one thread of its own, one sample at a
time, so an in-process engine is loaded once per Inspect process. A metric a summary leaves undefined
(EPS of a document without entities) is NaN, which Inspect leaves out of the means; every other metric
of the package is in the score's metadata with the run folder.
"""

from __future__ import annotations

import asyncio
import atexit
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import runs
from ..errors import MissingExtraError
from ..runs import Pipeline, SummaryScores

try:
    from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
    from inspect_ai.solver import TaskState
except ImportError as missing:
    raise MissingExtraError("inspect", "inspect-ai") from missing

SCORED = ("fps", "qps", "eps", "fc")


@dataclass
class _Scored:
    summary: SummaryScores | None
    run_dir: Path | None
    scaffold_extracted: bool
    problem: str = ""  # why there is no summary score


class _JudgeThread:
    """One Pipeline, created and used in one thread: engines and the judgment cache's SQLite
    connection stay in the thread that opened them, and samples are judged one at a time."""

    def __init__(self, judge: str | None, store: str | Path, method_version: int | None):
        self.judge, self.store, self.method_version = judge, Path(store), method_version
        self.pipeline: Pipeline | None = None
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scaffold-local-judge")
        atexit.register(self.close)

    def _score(self, record: dict[str, Any]) -> _Scored:
        if self.pipeline is None:
            self.pipeline = runs.open_judge(runs.JudgeOptions(model=self.judge, store=self.store,
                                                              method_version=self.method_version))
        plan = runs.plan(self.pipeline, runs.load_records([record]))
        if plan.nothing_fits:
            return _Scored(None, None, False, "; ".join(str(i) for i in plan.loaded.issues))
        outcome = plan.execute()
        summary = outcome.summaries[0] if outcome.summaries else None
        problem = "; ".join(outcome.failed_summaries.values())
        return _Scored(summary, outcome.run_dir, outcome.extraction.computed > 0, problem)

    async def score(self, record: dict[str, Any]) -> _Scored:
        return await asyncio.get_running_loop().run_in_executor(self.executor, self._score, record)

    def close(self) -> None:
        if self.pipeline is not None:
            try:
                self.executor.submit(self.pipeline.close).result()
            except RuntimeError:  # at interpreter exit the executor is shut down first: the engine ends with the process
                pass
            self.pipeline = None
        self.executor.shutdown()


@scorer(metrics={name: [mean(), stderr()] for name in SCORED})
def scaffold_scorer(judge: str | None = None, store: str = "scaffold_store", method_version: int | None = None) -> Scorer:
    """The sample's document (its input) against the model's summary (its output): FPS, QPS, EPS, FC.

    judge: a model config name or path (default: the package's default judge); store: the folder of
    scaffolds, judgments and runs, shared with `scaffold-local score`."""
    thread = _JudgeThread(judge, store, method_version)

    async def score(state: TaskState, target: Target) -> Score:
        summary = state.output.completion
        record = {"doc_id": str(state.sample_id), "document": state.input_text, "system": str(state.model),
                  "summary": summary}
        scored = await thread.score(record)
        if scored.summary is None:
            return Score(value={name: math.nan for name in SCORED}, answer=summary,
                         explanation=f"not scored: {scored.problem}")
        values = scored.summary.values
        undefined = scored.summary.undefined
        return Score(
            value={name: math.nan if values.get(name) is None else values[name] for name in SCORED},
            answer=summary,
            explanation=", ".join(f"{name} {values[name]:.3f}" if values.get(name) is not None
                                  else f"{name} undefined ({undefined.get(name, 'no value')})" for name in SCORED),
            metadata={"run_dir": str(scored.run_dir), "metrics": values, "undefined": undefined,
                      "scaffold": "extracted" if scored.scaffold_extracted else "from the store"},
        )

    return score
