"""`meta-eval`: how far the judge agrees with people (REALSumm key facts and pairs, FRANK sentence errors, SummEval,
SummEdits, AggreFact)."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..errors import UsageError
from ..metaeval.results import write
from ..metaeval.tasks import TASKS, run_task, tasks_for
from ..runs import JudgeOptions
from .options import DEFAULT_STORE, BatchOpt, ConfidenceOpt, MethodOpt, ModelOpt, StoreOpt, open_judge
from .output import announce, command_app, console

app = command_app()

CHOICES = [*TASKS, "all"]
DataOpt = Annotated[Path | None, typer.Option(
    help="the evaluation-data folder (realsumm/, frank/, summeval/, summedits/, aggrefact_spans/) "
         "[env SCAFFOLD_LOCAL_EVAL_DATA]")]


def data_folder(data: Path | None) -> Path:
    """The evaluation-data folder: the option's, else the environment's."""
    folder = data or (Path(os.environ["SCAFFOLD_LOCAL_EVAL_DATA"]) if "SCAFFOLD_LOCAL_EVAL_DATA" in os.environ else None)
    if folder is None:
        raise UsageError("give --data <evaluation-data folder> (or set SCAFFOLD_LOCAL_EVAL_DATA)")
    return folder


@app.command("meta-eval", short_help="how far the judge agrees with people")
def meta_eval(
    task: Annotated[str, typer.Argument(help=f"which human-labelled comparison to run: {', '.join(CHOICES)}")],
    model: ModelOpt = None,
    data: DataOpt = None,
    limit: Annotated[int | None, typer.Option(min=1, help="documents to draw at random (seeded) [default: all]")] = None,
    split: Annotated[str, typer.Option(
        help="documents of one fixed half: dev (choose formats and thresholds there) or test (check them there), "
             "or all")] = "all",
    per_document: Annotated[int | None, typer.Option(
        min=1, help="summaries to draw per document (seeded), so a CPU run covers more documents [default: all]")] = None,
    seed: Annotated[int, typer.Option(help="seed of the document sample and of the bootstrap")] = 0,
    store: StoreOpt = DEFAULT_STORE,
    out: Annotated[Path | None, typer.Option(help="folder for the tables [default: <store>/meta-eval/<judge>]")] = None,
    method_version: MethodOpt = None,
    batch_requests: BatchOpt = None,
    verdict_confidence: ConfidenceOpt = False,
) -> None:
    """How far the judge agrees with people: REALSumm key facts and pairs, FRANK sentence errors, SummEval scores,
    SummEdits consistency, AggreFact error spans."""
    if task not in CHOICES:
        close = difflib.get_close_matches(task, CHOICES, n=1)
        raise UsageError(f"no meta-evaluation task {task!r}" + (f"; did you mean {close[0]!r}?" if close else ""),
                         hint=f"the tasks: {', '.join(CHOICES)}")
    folder = data_folder(data)
    pipeline = open_judge(JudgeOptions(model=model, store=store, method_version=method_version,
                                       batch_requests=batch_requests, verdict_confidence=verdict_confidence))
    chosen = tasks_for(pipeline.method.reads_main) if task == "all" else [task]
    target = out or store / "meta-eval" / pipeline.config.name / f"method-v{pipeline.method.number}-{split}"
    try:
        for name in chosen:
            result = run_task(pipeline, name, folder, limit=limit, split=split, per_document=per_document, seed=seed,
                              announce=announce)
            summary = write(result, target)
            console.print(f"[bold]{escape(result.headline())}[/bold]")
            for line in result.summary:
                console.print("  " + line, highlight=False)
            console.print(f"  took {result.cost['seconds']:,.0f} s, {result.cost['engine_seconds']:,.0f} s of them in the "
                          "engine", highlight=False)
            console.print(f"  tables: {target}/{result.task}.*  summary: {summary}", highlight=False)
    finally:
        pipeline.close()
