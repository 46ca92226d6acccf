"""`calibrate`: a judge's decision thresholds from the dev halves of human-labelled data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..metaeval.calibration import CALIBRATED_BY, calibrate, write_config
from ..runs import JudgeOptions
from .meta_eval import DataOpt, data_folder
from .options import DEFAULT_STORE, MethodOpt, ModelOpt, StoreOpt, open_judge
from .output import command_app, console

app = command_app()


@app.command("calibrate", short_help="a judge's thresholds from people's labels (dev halves)")
def calibrate_command(
    model: ModelOpt = None,
    data: DataOpt = None,
    method_version: MethodOpt = None,
    facts_documents: Annotated[int, typer.Option(
        min=2, help="REALSumm dev documents for the facts' threshold (5 summaries each)")] = CALIBRATED_BY["facts"][1],
    sentence_documents: Annotated[int, typer.Option(
        min=2, help="FRANK dev documents for the sentence check's threshold")] = CALIBRATED_BY["faithfulness"][1],
    main_documents: Annotated[int, typer.Option(
        min=2, help="REALSumm dev documents for the main points' threshold (a version that reads them)")
    ] = CALIBRATED_BY["main"][1],
    store: StoreOpt = DEFAULT_STORE,
    out: Annotated[Path | None, typer.Option(
        help="the model config to write [default: <store>/calibration/<judge>-v<version>.toml]")] = None,
) -> None:
    """Decision thresholds for a judge, from the dev halves of human-labelled data (REALSumm key facts, FRANK
    sentences; under a version that reads main points, REALSumm's extracted facts against people's key facts),
    written as a model config that extends the judge's. About an hour for the 1.5B judge on 2 cores."""
    folder = data_folder(data)
    pipeline = open_judge(JudgeOptions(model=model, store=store, method_version=method_version))
    try:
        found = calibrate(pipeline, folder, {"facts": facts_documents, "faithfulness": sentence_documents,
                                             "main": main_documents})
    finally:
        pipeline.close()
    name, number = pipeline.config.name, pipeline.method.number
    # the config extended: a shipped one by its name, a file by its absolute path (the written file may be elsewhere)
    base = str(Path(model).resolve()) if model and model.endswith(".toml") else name
    written = write_config(out or store / "calibration" / f"{name}-v{number}.toml", base, number, found)
    for c in found:
        console.print(c.describe(), highlight=False)
    console.print(escape(f"written: {written} (score with `-m {written}`, or copy its [thresholds.{number}] table "
                         f"into the config of {name})"), highlight=False)
