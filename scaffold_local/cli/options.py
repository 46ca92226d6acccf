"""Options several commands share, and how they show the run service's set-up: the input read (its issues said),
the judge the options name, what fits the judge's context."""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from .. import runs
from ..errors import UsageError
from ..runs import DEFAULT_METHOD_VERSION, DEFAULT_MODEL, LoadedInput, ModelConfig, Prepared
from .output import announce, err, fail, print_issues, rich_progress

DEFAULT_STORE = Path(os.environ.get("SCAFFOLD_LOCAL_STORE", "scaffold_store"))

InputArg = Annotated[Path, typer.Argument(help="JSONL, CSV or Parquet file, or a folder saved with datasets' save_to_disk")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", "-m", help=f"model config name (see `models`) or path to a .toml [default: {DEFAULT_MODEL}]")]
StoreOpt = Annotated[Path, typer.Option("--store", help="folder for scaffolds and runs", envvar="SCAFFOLD_LOCAL_STORE")]
DocumentField = Annotated[str, typer.Option(help="input field holding the source document")]
SummaryField = Annotated[str, typer.Option(help="input field holding the candidate summary")]
SystemField = Annotated[str, typer.Option(help="input field naming the system that wrote the summary")]
ReferenceField = Annotated[str | None, typer.Option(help="optional field with reference summaries (text or list)")]
DocIdField = Annotated[str | None, typer.Option(help="optional field with a document id (default: content hash)")]
GroupField = Annotated[str | None, typer.Option(
    help="optional field with a group id: records sharing one hold one summary of all the group's documents")]
SplitOpt = Annotated[str | None, typer.Option(help="split of a saved DatasetDict")]
BatchOpt = Annotated[int | None, typer.Option(
    min=8, help="requests per engine call [default: the config's requests_per_call]")]
MethodOpt = Annotated[int | None, typer.Option(
    "--method-version",
    help="method version: prompts, schemas, sentence splitter and how verdicts are read (an earlier one "
         f"reproduces its runs) [default: the judge config's, else {DEFAULT_METHOD_VERSION}]")]
ConfidenceOpt = Annotated[bool, typer.Option(
    help="record P(kept) of each written fact and question verdict from the engine's token probabilities (a method "
         "version that reads its verdicts records P always; docs: Judges)")]
DsScaleOpt = Annotated[int, typer.Option(
    "--ds-scale", help="show direct scores on 1-10 (10) or on the paper's 0-1 scale (1)")]
WordBudgetOpt = Annotated[int | None, typer.Option(
    "--word-budget", min=1, help="words a summary may have: compliance per system, and every metric within and "
                                 "over the budget (Chinese and Japanese: a character is a word)")]


class Label(enum.StrEnum):
    main = "main point"
    supporting = "supporting detail"
    other = "other"


def check_ds_scale(ds_scale: int) -> None:
    if ds_scale not in (1, 10):
        raise UsageError(f"--ds-scale is 10 (grades 1-10) or 1 (the paper's DS/10), not {ds_scale}")


def read_input(input_path: Path, document_field: str, summary_field: str, system_field: str,
               reference_field: str | None, doc_id_field: str | None, split: str | None,
               group_field: str | None = "group") -> LoadedInput:
    """The input's usable records; every record that is not, said on stderr."""
    fields = runs.FieldMap(document=document_field, summary=summary_field, system=system_field,
                           reference=reference_field, doc_id=doc_id_field, group=group_field)
    loaded = runs.load_input(input_path, fields, split)
    if (missing := runs.missing_from_every_record(loaded)) is not None:
        fail(missing)
    print_issues(loaded.issues)
    if not loaded.candidates:
        fail(runs.no_usable_records(loaded), 2)
    return loaded


def open_judge(judge: runs.JudgeOptions) -> runs.Pipeline:
    """The judge's pipeline, with a progress bar and an estimate before each long send; a note where P(kept) is asked
    for but is not a confidence."""
    pipeline = runs.open_judge(judge, rich_progress, announce)
    if pipeline.config.verdict_confidence and pipeline.method.not_a_confidence:
        err.print(f"note: P(kept) is recorded, but {pipeline.method.not_a_confidence}", highlight=False)
    return pipeline


def kept_in_context(prepared: Prepared, judges: Sequence[ModelConfig]) -> LoadedInput:
    """The prepared input, its left-out records said on stderr; nothing that fits the judges' context ends
    the command before anything is sent."""
    print_issues(prepared.issues)
    if prepared.nothing_fits:
        fail("no record fits the context of " + ", ".join(f"judge {c.name} (max_model_len {c.max_model_len:,})"
                                                          for c in judges), 2)
    return prepared.loaded
