"""`score`: extract scaffolds (once per document), align every summary, compute every metric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from .. import runs
from ..records import RETRYABLE_FAILURES
from ..report import rankings_table, results
from .options import (
    DEFAULT_STORE,
    BatchOpt,
    ConfidenceOpt,
    DocIdField,
    DocumentField,
    DsScaleOpt,
    GroupField,
    InputArg,
    Label,
    MethodOpt,
    ModelOpt,
    ReferenceField,
    SplitOpt,
    StoreOpt,
    SummaryField,
    SystemField,
    WordBudgetOpt,
    check_ds_scale,
    kept_in_context,
    open_judge,
    read_input,
)
from .output import command_app, console, err, print_breakdowns, print_notes

app = command_app()
PARTIAL = 3  # the run finished, but something in it failed or was skipped (--allow-partial: 0); docs: Reading runs
INTERRUPTED = 130  # Ctrl-C: what was judged is stored


@app.command(short_help="score summaries: scaffolds once, every summary judged")
def score(
    input_path: InputArg,
    model: ModelOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    run_name: Annotated[str | None, typer.Option(
        help="run folder name: letters, digits, '.', '_' and '-' (default: derived from input, model and prompts)")] = None,
    document_field: DocumentField = "document",
    summary_field: SummaryField = "summary",
    system_field: SystemField = "system",
    reference_field: ReferenceField = "reference",
    doc_id_field: DocIdField = "doc_id",
    group_field: GroupField = "group",
    split: SplitOpt = None,
    batch_requests: BatchOpt = None,
    method_version: MethodOpt = None,
    scaffolds_from: Annotated[str | None, typer.Option(
        help="align against another judge's stored scaffolds (a model config) or a finished run's (a run folder)")] = None,
    scaffold_file: Annotated[Path | None, typer.Option(
        help="align against your own scaffolds: JSONL, one document per line (README: Scaffolds from any source)")] = None,
    default_label: Annotated[Label, typer.Option(help="label of --scaffold-file items given without one")] = Label.main,
    verdict_confidence: ConfidenceOpt = False,
    weighted_verdicts: Annotated[bool, typer.Option(
        help="count each fact and question by the probability of its verdict instead of 0 or 1 (an option to "
             "compare with meta-eval, not the default)")] = False,
    ds_scale: DsScaleOpt = 10,
    word_budget: WordBudgetOpt = None,
    chunk_tokens: Annotated[int | None, typer.Option(
        min=64, help="score every document longer than this many tokens in chunked mode, in chunks of at most "
                     "that many [default: only documents that do not fit the judge's context]")] = None,
    pairwise: Annotated[str | None, typer.Option(help=(
        "also ask the judge which of two summaries is better, each pair in both orders: `all` pairs, or one system "
        "against every other (cheaper); ranked beside the metrics"))] = None,
    as_json: Annotated[bool, typer.Option("--json", help=(
        "the per-system table as JSON on stdout (the fields of the run folder's systems.json), for scripts"))] = False,
    allow_partial: Annotated[bool, typer.Option(help=(
        "exit 0 when the run is partial (some items failed, summaries were not judged or records skipped)"))] = False,
) -> None:
    """Extract scaffolds (once per document), align every summary, compute every metric.

    Re-running the same command resumes: stored scaffolds and every judgment in the store's cache
    are reused; only missing requests and those that failed for a passing reason are sent."""
    check_ds_scale(ds_scale)
    if run_name is not None:  # before anything is read or created: the name must not lead out of <store>/runs/
        runs.check_run_name(run_name, "--run-name")
    loaded = read_input(input_path, document_field, summary_field, system_field, reference_field, doc_id_field, split,
                        group_field)
    source = runs.source_from_options(scaffolds_from, scaffold_file, default_label.value)
    judge = runs.JudgeOptions(model=model, store=store, method_version=method_version, batch_requests=batch_requests,
                              scaffolds=source, verdict_confidence=verdict_confidence,
                              weighted_verdicts=weighted_verdicts)
    pipeline = open_judge(judge)
    try:
        plan = runs.plan(pipeline, loaded, runs.RunOptions(
            run_name=run_name, word_budget=word_budget, chunk_tokens=chunk_tokens, pairwise=pairwise))
        kept_in_context(plan.prepared, [pipeline.config])
        outcome = scored(plan, str(input_path), model)
    finally:
        pipeline.close()
    print_outcome(outcome, ds_scale, as_json)
    if outcome.status == "partial":
        say_partial(outcome, allow_partial)


def scored(plan: runs.RunPlan, input_name: str, model: str | None) -> runs.RunOutcome:
    """What to read before the run (the summary, the notes, the estimate of a long run), then the run; Ctrl-C says
    what is kept and how to go on (exit 130)."""
    if (hint := plan.first_run_hint(model)) is not None:
        err.print(escape(hint), highlight=False)
    err.print(plan.prepared.summary, highlight=False)
    afresh = [f"to extract them afresh: scaffold-local score {input_name}"] if plan.pipeline.source.extracted_by else []
    print_notes([*plan.notes, *afresh])
    if plan.estimate is not None:
        err.print(plan.estimate.describe(), highlight=False)
    try:
        return plan.execute()
    except KeyboardInterrupt:
        err.print(f"interrupted: every judgment finished so far is stored in {plan.pipeline.store_root}; run the same "
                  "command again to resume (nothing stored is sent again)", highlight=False)
        raise typer.Exit(INTERRUPTED) from None


def say_partial(outcome: runs.RunOutcome, allow_partial: bool) -> None:
    """A partial run: its first failures named, where the rest are, and (unless allowed) exit PARTIAL."""
    err.print(f"[yellow]partial run: {escape(runs.describe_partial(outcome.failure_rows))}. "
              f"Every one: {escape(str(outcome.run_dir / 'failures.jsonl'))}[/yellow]", highlight=False)
    if not allow_partial:
        raise typer.Exit(PARTIAL)


def _print_usage(outcome: runs.RunOutcome) -> None:
    """Tokens of extraction and of judgments: prompt (and computed, where the engine caches prefixes), output, finish
    reasons and retries."""
    summaries = max(1, len(outcome.summaries))
    for stage, u in (("extraction", outcome.usage.extraction), ("judgments", outcome.usage.judgments)):
        hits = (f" ({u.prefix_cache_hit_rate:.0%} from the prefix cache; {u.computed_prompt_tokens:,} computed, "
                f"{u.computed_prompt_tokens / summaries:,.0f} per summary)" if u.prefix_cache_hit_rate is not None else "")
        reasons = ", ".join(f"{k} {v}" for k, v in u.finish_reasons.items())
        retried = ", ".join(f"{k} {v}" for k, v in u.retries.items())  # attempts sent again, by class
        err.print(f"{stage}: {u.prompt_tokens:,} prompt tokens{hits}, {u.completion_tokens:,} output tokens; "
                  f"finish reasons: {reasons or 'none'}" + (f"; retries: {retried}" if retried else ""), highlight=False)


def print_outcome(outcome: runs.RunOutcome, ds_scale: int, as_json: bool = False) -> None:
    """What a run did (scaffolds, judgments, tokens, failures) on stderr; its per-system table on stdout (as JSON, the
    fields of systems.json, with `as_json`)."""
    ex = outcome.extraction
    made = "extracted" if outcome.scaffolds_extracted else "read from the file"
    err.print(f"scaffolds: {ex.computed} {made}, {ex.reused} reused from the store; "
              f"judgments: {outcome.requests_sent} sent, {outcome.requests_reused} reused"
              + (" (resumed run)" if outcome.resumed else ""))
    for issue in ex.issues:
        colour = "red" if issue.severity == "error" else "yellow"
        err.print(f"[{colour}]scaffold file: {escape(str(issue))}[/]", highlight=False)
    _print_usage(outcome)
    if outcome.engine_log is not None:
        err.print(f"engine log: {outcome.engine_log}", highlight=False, soft_wrap=True)
    if outcome.failures:
        counts = ", ".join(f"{kind} {n}" for kind, n in sorted(outcome.failures.items()))
        partly = outcome.usage.judgments.partly_valid
        if partly:  # their other items' verdicts count
            counts += (f" ({partly} valid but for {outcome.usage.judgments.items_failed_alone} items, "
                       "which alone are not counted)")
        err.print(f"[yellow]failed judgments (kept with their raw text, never counted): {counts}. "
                  f"Sent again on the next run: {', '.join(sorted(RETRYABLE_FAILURES & set(outcome.failures))) or 'none'}; "
                  "the others would fail the same way until the config or prompts change.[/yellow]", highlight=False)
    for key, reason in outcome.failed_summaries.items():
        err.print(f"[yellow]not judged: {escape(key)}: {escape(reason)}[/yellow]")
    if as_json:
        print((outcome.run_dir / "systems.json").read_text(encoding="utf-8"))
        err.print(f"run folder: {outcome.run_dir}", highlight=False)
        return
    console.print(results(runs.load(outcome.run_dir), ds_scale))
    if outcome.holistic_pairs:
        from ..analysis.rankings import rankings_of  # scipy's optimiser: loaded only when asked for

        console.print(rankings_table(rankings_of(runs.load(outcome.run_dir))))
    print_breakdowns(outcome.run_dir, ds_scale)
    console.print(f"run folder: {outcome.run_dir}  (systems.json/.csv, summaries.jsonl/.csv/.parquet, records.jsonl)")
