"""Command line: a thin typer layer over the Python API (Pipeline, load_input, report)."""

from __future__ import annotations

import contextlib
import enum
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

app = typer.Typer(
    help="Semantic Scaffold summary evaluation with open-weight judges on local hardware.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
console = Console()
err = Console(stderr=True)

DEFAULT_STORE = Path(os.environ.get("SCAFFOLD_LOCAL_STORE", "scaffold_store"))

InputArg = Annotated[Path, typer.Argument(help="JSONL, CSV or Parquet file, or a folder saved with datasets' save_to_disk")]
ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help="model config name (see `models`) or path to a .toml")]
StoreOpt = Annotated[Path, typer.Option("--store", help="folder for scaffolds and runs [env SCAFFOLD_LOCAL_STORE]")]
DocumentField = Annotated[str, typer.Option(help="input field holding the source document")]
SummaryField = Annotated[str, typer.Option(help="input field holding the candidate summary")]
SystemField = Annotated[str, typer.Option(help="input field naming the system that wrote the summary")]
ReferenceField = Annotated[str | None, typer.Option(help="optional field with reference summaries (text or list)")]
DocIdField = Annotated[str | None, typer.Option(help="optional field with a document id (default: content hash)")]
SplitOpt = Annotated[str | None, typer.Option(help="split of a saved DatasetDict")]
BatchOpt = Annotated[int | None, typer.Option(
    min=8, help="requests per engine call [default: the config's requests_per_call]")]
class Label(enum.StrEnum):
    main = "main point"
    supporting = "supporting detail"
    other = "other"


MethodOpt = Annotated[int | None, typer.Option(
    "--method-version",
    help="method version: prompts, schemas and sentence splitter (1 reproduces earlier runs) "
         "[default: the judge config's, else 2]")]
ConfidenceOpt = Annotated[bool, typer.Option(
    help="record P(kept) of each fact and question verdict from the engine's token probabilities: the judge's "
         "confidence under method versions 3-5; under 1 and 2 it is read after the justification and is not one")]
DsScaleOpt = Annotated[int, typer.Option(
    "--ds-scale", help="show direct scores on 1-10 (10) or on the paper's 0-1 scale (1)")]


def _fail(message: object, code: int) -> NoReturn:
    """Print an error and exit. The text is printed verbatim and unwrapped (one line per line, for
    logs and grep): messages quote TOML tables ([engine]) that rich would otherwise take for markup."""
    err.print(f"[red]error:[/red] {escape(str(message))}", soft_wrap=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def _rich_progress(label: str, total: int) -> Iterator[Callable[..., None]]:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task(label, total=total)
        yield lambda n, detail="": progress.update(task, advance=n, description=f"{label} ({detail})" if detail else label)


def _load(input_path: Path, document_field: str, summary_field: str, system_field: str,
          reference_field: str | None, doc_id_field: str | None, split: str | None):
    from .data import FieldMap, InputError, load_input

    fields = FieldMap(document=document_field, summary=summary_field, system=system_field,
                      reference=reference_field, doc_id=doc_id_field)
    try:
        loaded = load_input(input_path, fields, split)
    except InputError as exc:
        _fail(exc, 2)
    _print_issues(loaded.issues)
    if not loaded.candidates:
        _fail("no usable records in the input" + _most_common(loaded.issues), 2)
    return loaded


SHOWN_ISSUES = 50  # more go to the run folder's input_issues.jsonl, not the screen


def _print_issues(issues: list[Any], prefix: str = "") -> None:
    for issue in issues[:SHOWN_ISSUES]:
        err.print(f"[{'red' if issue.severity == 'error' else 'yellow'}]{escape(prefix + str(issue))}[/]", highlight=False)
    if len(issues) > SHOWN_ISSUES:
        err.print(f"[yellow]... and {len(issues) - SHOWN_ISSUES:,} more input issues (all of them in the run "
                  f"folder's input_issues.jsonl){escape(_most_common(issues))}[/yellow]", highlight=False)


def _most_common(issues: list[Any]) -> str:
    """The most frequent problem, by field and message (a renamed column fails every record alike)."""
    from collections import Counter

    if not issues:
        return ""
    counts = Counter((i.field, i.message.split(" (record has")[0].split("; ")[0]) for i in issues)
    (field, message), n = counts.most_common(1)[0]
    example = next(i for i in issues if i.field == field and i.message.startswith(message))
    return f"; most common: {'field ' + repr(field) + ': ' if field else ''}{message} ({n:,} records; e.g. {example})"


def _fit(judge: Any, loaded: Any, extraction: bool = True) -> Any:
    """The input without the documents that cannot fit the judge's context, said before anything is sent."""
    fit = judge.fit_context(loaded, extraction=extraction)
    _print_issues(fit.issues)
    if not fit.loaded.candidates:
        _fail(f"no record fits the context of judge {judge.config.name} (max_model_len {judge.config.max_model_len:,})", 2)
    return fit.loaded


def _pipeline(model: str | None, store: Path, batch_requests: int | None, method: int | None,
              scaffolds: Any = None, verdict_confidence: bool = False, weighted_verdicts: bool = False):
    from .config import ModelConfig
    from .pipeline import Pipeline
    from .store import StoreError

    try:
        config = ModelConfig.load(model)
        if verdict_confidence:
            config = config.model_copy(update={"verdict_confidence": True})
        pipeline = Pipeline(config, store, progress=_rich_progress, batch_requests=batch_requests, method=method,
                            scaffolds=scaffolds, weighted_verdicts=weighted_verdicts)
    except (FileNotFoundError, ValueError, StoreError) as exc:
        _fail(exc, 2)
    if pipeline.config.verdict_confidence and pipeline.method.not_a_confidence:
        err.print(f"note: P(kept) is recorded, but {pipeline.method.not_a_confidence}", highlight=False)
    return pipeline


def _scaffold_source(scaffolds_from: str | None, scaffold_file: Path | None, default_label: str) -> Any:
    from .records import ScaffoldSource

    if scaffolds_from and scaffold_file:
        _fail("give --scaffolds-from or --scaffold-file, not both", 2)
    if scaffold_file:
        return ScaffoldSource(kind="file", reference=str(scaffold_file), default_label=default_label)
    if scaffolds_from:
        kind = "run" if (Path(scaffolds_from) / "spec.json").is_file() else "judge"
        return ScaffoldSource(kind=kind, reference=scaffolds_from)
    return ScaffoldSource()


def _decision(threshold: float | None) -> str:
    """How a fact or question verdict is decided: the judge's word, or its calibrated threshold on P(kept)."""
    return "verdicts: the judge's word" if threshold is None else f"verdicts: P(kept) >= {threshold:g} (calibrated)"


def _check_ds_scale(ds_scale: int) -> None:
    if ds_scale not in (1, 10):
        _fail(f"--ds-scale is 10 (grades 1-10) or 1 (the paper's DS/10), not {ds_scale}", 2)


@contextlib.contextmanager
def _engine_errors() -> Iterator[None]:
    from .backends import BackendError

    try:
        yield
    except (BackendError, FileNotFoundError) as exc:
        _fail(exc, 1)


@app.command()
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
        help="count each fact and question by the probability of its verdict (implies --verdict-confidence; "
             "method versions 3-5; an option to compare with meta-eval, not the default)")] = False,
    ds_scale: DsScaleOpt = 10,
) -> None:
    """Extract scaffolds (once per document), align every summary, compute every metric.

    Re-running the same command resumes: stored scaffolds and every judgment in the store's cache
    are reused; only missing requests and those that failed for a passing reason are sent."""
    from .report import systems_table
    from .store import RunNameError, SpecMismatch, check_run_name

    _check_ds_scale(ds_scale)
    if run_name is not None:
        try:  # before anything is read or created: the name must not lead out of <store>/runs/
            check_run_name(run_name, "--run-name")
        except RunNameError as exc:
            _fail(exc, 2)
    loaded = _load(input_path, document_field, summary_field, system_field, reference_field, doc_id_field, split)
    source = _scaffold_source(scaffolds_from, scaffold_file, default_label.value)
    pipeline = _pipeline(model, store, batch_requests, method_version, source, verdict_confidence, weighted_verdicts)
    loaded = _fit(pipeline.judge, loaded, extraction=pipeline.source.kind == "extracted")
    from .judge_check import first_use

    if first_use(store, pipeline.config):
        err.print(f"first run with judge {escape(pipeline.config.name)} in this store: how far its verdicts can be "
                  f"trusted is a few minutes away: scaffold-local check-judge -m {escape(model or pipeline.config.name)}",
                  highlight=False)
    err.print(f"{len(loaded.documents)} documents, {len(loaded.candidates)} summaries from {len(loaded.systems)} systems; "
              f"judge: {pipeline.config.name} ({pipeline.config.backend}); method version {pipeline.method.number}; "
              f"{_decision(pipeline.judge.decision_threshold)}; scaffolds: {pipeline.source.describe()}", highlight=False)
    if pipeline.config.decision_threshold is not None and pipeline.judge.decision_threshold is None:
        err.print(f"[yellow]note: the decision threshold of {escape(pipeline.config.name)} was calibrated under method "
                  f"version {pipeline.config.method_version}; under version {pipeline.method.number} its verdict words "
                  "count as they are[/yellow]", highlight=False)
    with _engine_errors():
        try:
            outcome = pipeline.score(loaded, run_name)
        except SpecMismatch as exc:
            _fail(exc, 2)
        finally:
            pipeline.close()
    ex = outcome.extraction
    made = "extracted" if pipeline.source.kind == "extracted" else "read from the file"
    err.print(f"scaffolds: {ex.computed} {made}, {ex.reused} reused from the store; "
              f"judgments: {outcome.requests_sent} sent, {outcome.requests_reused} reused"
              + (" (resumed run)" if outcome.resumed else ""))
    for issue in ex.issues:
        colour = "red" if issue.severity == "error" else "yellow"
        err.print(f"[{colour}]scaffold file: {escape(str(issue))}[/]", highlight=False)
    for stage in ("extraction", "judgments"):
        u = outcome.usage[stage]
        hits = f" ({u['prefix_cache_hit_rate']:.0%} from the prefix cache)" if u["prefix_cache_hit_rate"] is not None else ""
        reasons = ", ".join(f"{k} {v}" for k, v in u["finish_reasons"].items())
        retried = ", ".join(f"{k} {v}" for k, v in (u.get("retries") or {}).items())  # attempts sent again, by class
        err.print(f"{stage}: {u['prompt_tokens']:,} prompt tokens{hits}, {u['completion_tokens']:,} output tokens; "
                  f"finish reasons: {reasons or 'none'}" + (f"; retries: {retried}" if retried else ""), highlight=False)
    if outcome.failures:
        from .records import RETRYABLE_FAILURES

        counts = ", ".join(f"{kind} {n}" for kind, n in sorted(outcome.failures.items()))
        partly = outcome.usage["judgments"]["partly_valid"]
        if partly:  # their other items' verdicts count
            counts += (f" ({partly} valid but for {outcome.usage['judgments']['items_failed_alone']} items, "
                       "which alone are not counted)")
        err.print(f"[yellow]failed judgments (kept with their raw text, never counted): {counts}. "
                  f"Sent again on the next run: {', '.join(sorted(RETRYABLE_FAILURES & set(outcome.failures))) or 'none'}; "
                  "the others would fail the same way until the config or prompts change.[/yellow]", highlight=False)
    for key, reason in outcome.failed_summaries.items():
        err.print(f"[yellow]not judged: {escape(key)}: {escape(reason)}[/yellow]")
    console.print(systems_table(outcome.systems, f"{outcome.run_dir.name}: per-system means", ds_scale))
    console.print(f"run folder: {outcome.run_dir}  (systems.json/.csv, summaries.jsonl/.csv/.parquet, records.jsonl)")


@app.command()
def extract(
    input_path: InputArg,
    model: ModelOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    document_field: DocumentField = "document",
    summary_field: SummaryField = "summary",
    system_field: SystemField = "system",
    doc_id_field: DocIdField = "doc_id",
    split: SplitOpt = None,
    batch_requests: BatchOpt = None,
    method_version: MethodOpt = None,
    check: Annotated[bool, typer.Option(
        "--check", help="also check each scaffold: near-duplicates, label balance, cut items, facts the judge "
                        "finds unsupported by the source")] = False,
) -> None:
    """Extract and store scaffolds only (no judgments)."""
    from rich.table import Table

    loaded = _load(input_path, document_field, summary_field, system_field, None, doc_id_field, split)
    pipeline = _pipeline(model, store, batch_requests, method_version)
    loaded = _fit(pipeline.judge, loaded)
    with _engine_errors():
        try:
            outcome = pipeline.extract(list(loaded.documents.values()))
            qualities = _check_scaffolds(pipeline, outcome.scaffolds, loaded.documents) if check else []
        finally:
            pipeline.close()
    from .views import VIEW_SPECS

    table = Table(title=f"Scaffolds ({outcome.computed} extracted, {outcome.reused} reused)", title_justify="left")
    table.add_column("doc_id")
    for spec in VIEW_SPECS.values():  # judged items by label: facts, questions, entity attributes
        table.add_column(f"{spec.title.lower()} main/supp/other")
    table.add_column("scaffold")

    def counts(spec, scaffold) -> str:
        if spec.items(scaffold) is None:
            return "failed"
        labels = [i.label for i in spec.judged(scaffold)]
        return "/".join(str(labels.count(label)) for label in ("main point", "supporting detail", "other"))

    for doc_id, scaffold in outcome.scaffolds.items():
        table.add_row(doc_id, *(counts(spec, scaffold) for spec in VIEW_SPECS.values()),
                      str(pipeline.scaffolds.path(scaffold.key)))
    for doc_id, reason in outcome.unavailable.items():
        table.add_row(doc_id, *["-"] * len(VIEW_SPECS), f"[red]{escape(reason)}[/red]")
    console.print(table)
    for quality in qualities:
        console.print(escape(quality.describe()), highlight=False)
    for doc_id, s in outcome.scaffolds.items():
        for view, reason in s.failures.items():
            err.print(f"[yellow]{escape(doc_id)}: {view} extraction failed: {escape(reason)}[/yellow]")


def _check_scaffolds(pipeline: Any, scaffolds: dict[str, Any], documents: dict[str, Any]) -> list[Any]:
    """The judge-free checks and the judge's support check of every scaffold, saved beside it."""
    from .quality import inspect, quality_path, read_support, save_support, support_requests

    checks = {doc_id: (s, inspect(s, pipeline.config.limits), support_requests(pipeline.judge, s, documents[doc_id]))
              for doc_id, s in scaffolds.items()}
    records, _ = pipeline.answer([r for _, _, planned in checks.values() for r in planned], "checking scaffolds")
    for scaffold, quality, planned in checks.values():
        record = pipeline.judge.by_kind(planned, records).get("faithfulness")
        read_support(quality, scaffold, record.parsed if record else None)
        if quality.unsupported is not None:
            save_support(quality_path(pipeline.scaffolds.path(scaffold.key)), quality)
    return [quality for _, quality, _ in checks.values()]


@app.command()
def show(
    run_dir: Annotated[Path, typer.Argument(help="a run folder (printed by `score`)")],
    summary: Annotated[str | None, typer.Option(
        "--summary", "-s", help="DOC_ID/SYSTEM: item-level evidence for one summary")] = None,
    ds_scale: DsScaleOpt = 10,
) -> None:
    """Print a finished run: the per-system table, or the evidence behind one summary's scores."""
    from . import runs
    from .report import evidence, systems_table

    _check_ds_scale(ds_scale)
    try:
        run = runs.open(run_dir)
        systems = run.systems
    except runs.RunNotReadable as exc:
        _fail(exc, 2)
    spec = run.spec
    if summary is None:
        console.print(systems_table(systems, f"{run_dir.name}: per-system means", ds_scale))
        console.print(f"judge: {spec.judge.get('name')} ({spec.judge.get('backend')}, {spec.judge.get('model')}); "
                      f"method version {spec.method_version}; {_decision(spec.decision_threshold)}; "
                      f"scaffolds: {spec.scaffold_source.describe()}; "
                      f"summaries: {len(run.summaries)}; status: {spec.status}; created {spec.created_at}", highlight=False)
        console.print(escape(_quality_summary(run)), highlight=False)
        notes = run.scaffold_notes()
        if notes:
            console.print("scaffold assembly: " + ", ".join(f"{action}: {n}" for action, n in sorted(notes.items()))
                          + " (details with --summary)", highlight=False)
        return
    try:
        console.print(evidence(run, summary, ds_scale))
    except KeyError as exc:
        _fail(exc.args[0], 2)


def _quality_summary(run: Any) -> str:
    """The run's scaffolds in one line: label balance, near-duplicates, cut items, unsupported facts."""
    from collections import Counter

    from .config import ModelConfig
    from .quality import inspect, load_support, quality_path
    from .store import ScaffoldStore

    limits = ModelConfig.model_validate(run.spec.judge).limits if run.spec.judge.get("backend") else None
    store = ScaffoldStore(run.store_root)
    labels: Counter[str] = Counter()
    duplicates = cut = unsupported = checked = 0
    for key in dict.fromkeys(run.spec.scaffold_keys.values()):
        stored = store.get(key)
        if stored is None or limits is None:
            continue
        quality = inspect(stored.scaffold, limits)
        load_support(quality_path(store.path(key)), quality)
        labels.update(quality.labels.get("facts", {}))
        duplicates += len(quality.near_duplicates)
        cut += len(quality.at_length_bound)
        if quality.unsupported is not None:
            checked += 1
            unsupported += len(quality.unsupported)
    support = (f"{unsupported} facts unsupported by the source in {checked} checked scaffolds" if checked
               else "facts not checked against the source (extract --check)")
    return (f"scaffold quality: facts main/supporting/other {labels['main point']}/{labels['supporting detail']}/"
            f"{labels['other']}; {duplicates} near-duplicate pairs; {cut} items at the length bound; {support}")


@app.command()
def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="one or more run folders; several: a judge comparison")],
    out: Annotated[Path | None, typer.Option(
        help="folder for report.html and the tables [default: next to the run]")] = None,
    seed: Annotated[int, typer.Option(help="seed of the bootstrap resamples")] = 0,
) -> None:
    """Write the analysis of runs: an offline HTML page with plots, and every table as JSON, CSV and Parquet."""
    from . import runs
    from .analysis.run_analysis import analyze_runs
    from .report.html import write_report

    try:
        opened = [runs.open(path) for path in run_dirs]
        for run in opened:
            _ = run.systems  # a run that has not finished scoring says so here
    except runs.RunNotReadable as exc:
        _fail(exc, 2)
    target = out or (run_dirs[0] / "report" if len(run_dirs) == 1 else run_dirs[0].parent / "report")
    page = write_report(analyze_runs(opened, seed), target)
    console.print(f"report: {page}  (tables: {target}/*.csv, *.parquet, analysis.json)", highlight=False)


@app.command()
def compare(
    input_path: InputArg,
    model: Annotated[list[str], typer.Option("--model", "-m", help="a judge config; give two or more, or one with --seeds")],
    store: StoreOpt = DEFAULT_STORE,
    shared_scaffold: Annotated[bool, typer.Option(
        "--shared-scaffold/--own-scaffolds",
        help="align every judge against the first judge's scaffolds (isolates judging), "
             "or let each extract its own")] = True,
    seeds: Annotated[int, typer.Option(min=0, help="rerun one judge with this many seeds (self-consistency)")] = 0,
    temperature: Annotated[float | None, typer.Option(help="sampling temperature of the --seeds reruns")] = None,
    method_version: MethodOpt = None,
    out: Annotated[Path | None, typer.Option(help="folder for the report [default: <store>/comparisons/<name>]")] = None,
    document_field: DocumentField = "document",
    summary_field: SummaryField = "summary",
    system_field: SystemField = "system",
    reference_field: ReferenceField = "reference",
    doc_id_field: DocIdField = "doc_id",
) -> None:
    """Score one input with several judges (or one judge with several seeds) and report how they agree."""
    from . import runs
    from .analysis.run_analysis import analyze_runs
    from .comparison import judge_variants, run_judges
    from .report.html import write_report

    loaded = _load(input_path, document_field, summary_field, system_field, reference_field, doc_id_field, None)
    try:
        configs = judge_variants(model, seeds, temperature)
    except (FileNotFoundError, ValueError) as exc:
        _fail(exc, 2)
    from .method import method_version as version_of
    from .requests import Judge

    for i, config in enumerate(configs):  # the same documents for every judge: skipped for one, skipped for all
        loaded = _fit(Judge(config, version_of(method_version)), loaded, extraction=i == 0 or not shared_scaffold)
    err.print(f"judges: {', '.join(c.name for c in configs)}; "
              f"{'one shared scaffold' if shared_scaffold else 'each judge its own scaffolds'}", highlight=False)
    with _engine_errors():
        run_dirs = run_judges(configs, loaded, store, shared_scaffold, method_version, _rich_progress)
    target = out or store / "comparisons" / "-vs-".join(dict.fromkeys(c.name for c in configs))[:120]
    page = write_report(analyze_runs([runs.open(d) for d in run_dirs]), target)
    for run_dir in run_dirs:
        console.print(f"run: {run_dir}", highlight=False)
    console.print(f"report: {page}", highlight=False)


@app.command("check-judge")
def check_judge(
    model: ModelOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    method_version: MethodOpt = None,
    verdict_confidence: ConfidenceOpt = False,
) -> None:
    """Can this judge tell whether a summary conveys a fact better than word overlap? (A few minutes on CPU.)"""
    from rich.table import Table

    from .judge_check import KINDS, run_check, save

    pipeline = _pipeline(model, store, None, method_version, verdict_confidence=verdict_confidence)
    with _engine_errors():
        try:
            result = run_check(pipeline)
        finally:
            pipeline.close()
    table = Table(title=f"judge check: {result.judge}, method version {result.method} ({result.items} (summary, fact) "
                        f"items, {result.failed} failed); judge decides by {result.decision}", title_justify="left")
    table.add_column("scorer")
    table.add_column("balanced accuracy [95%]")
    for kind in KINDS:
        table.add_column(f"{kind}: judged present")
    for scorer, agreement in (("judge", result.judge_agreement), ("word overlap", result.overlap_agreement)):
        table.add_row(scorer, str(agreement["balanced_accuracy"]),
                      *(f"{result.kept_rate[scorer][kind]:.2f}" for kind in KINDS))
    console.print(table)
    console.print("present: verbatim and paraphrased facts (should be near 1); absent: dropped and contradicted "
                  "(should be near 0)", highlight=False)
    if result.auroc is not None:
        console.print(f"P(kept) ranks present above absent facts with AUROC {result.auroc} (1: perfectly, 0.5: chance; "
                      f"{result.p_kept_items} of {result.items} items have P(kept))"
                      + (f"; not a confidence: {result.not_a_confidence}" if result.not_a_confidence else ""),
                      highlight=False)
    if result.no_better_than_overlap:
        err.print(f"[red]warning: {escape(result.judge)} does no better than word overlap on this check; do not base "
                  "decisions on its verdicts (use a stronger judge, see `scaffold-local models`).[/red]")
    console.print(f"saved: {save(store, pipeline.config, result)}", highlight=False)


class MetaTask(enum.StrEnum):
    realsumm_alignment = "realsumm-alignment"
    realsumm_extraction = "realsumm-extraction"
    frank = "frank"
    summeval = "summeval"
    all = "all"


@app.command("meta-eval")
def meta_eval(
    task: Annotated[MetaTask, typer.Argument(help="which human-labelled comparison to run")],
    model: ModelOpt = None,
    data: Annotated[Path | None, typer.Option(
        help="the evaluation-data folder (realsumm/, frank/, summeval/) [env SCAFFOLD_LOCAL_EVAL_DATA]")] = None,
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
    """How far the judge agrees with people: REALSumm key facts, FRANK sentence errors, SummEval scores."""
    from .metaeval import frank, realsumm, summeval
    from .metaeval.data import EvalDataError, load
    from .metaeval.results import write

    adapters = {"realsumm-alignment": ("realsumm", realsumm.alignment),
                "realsumm-extraction": ("realsumm", realsumm.extraction),
                "frank": ("frank", frank.faithfulness), "summeval": ("summeval", summeval.correlation)}
    chosen = list(adapters) if task == MetaTask.all else [task.value]
    folder = data or (Path(os.environ["SCAFFOLD_LOCAL_EVAL_DATA"]) if "SCAFFOLD_LOCAL_EVAL_DATA" in os.environ else None)
    if folder is None:
        _fail("give --data <evaluation-data folder> (or set SCAFFOLD_LOCAL_EVAL_DATA)", 2)
    pipeline = _pipeline(model, store, batch_requests, method_version, verdict_confidence=verdict_confidence)
    target = out or store / "meta-eval" / pipeline.config.name / f"method-v{pipeline.method.number}-{split}"
    with _engine_errors():
        try:
            for name in chosen:
                dataset, adapter = adapters[name]
                try:
                    documents = load(folder, dataset, limit, seed, split, per_document)
                except EvalDataError as exc:
                    _fail(exc, 2)
                result = adapter(pipeline, documents, seed)
                result.sample = {"split": split, "limit": limit, "per_document": per_document, "seed": seed,
                                 "method_version": pipeline.method.number,
                                 "decision_threshold": pipeline.judge.decision_threshold}
                summary = write(result, target)
                console.print(f"[bold]{escape(result.headline())}[/bold]")
                for line in result.summary:
                    console.print("  " + line, highlight=False)
                console.print(f"  tables: {target}/{result.task}.*  summary: {summary}", highlight=False)
        finally:
            pipeline.close()


@app.command()
def serve(
    model: Annotated[str, typer.Option("--model", "-m", help="a vLLM model config")] = "smollm2-135m-vllm",
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
) -> None:
    """Start vLLM's OpenAI-compatible server for a vLLM config (for the hosted backend)."""
    import subprocess

    from .backends.vllm import server_command
    from .config import ModelConfig

    try:
        config = ModelConfig.load(model)
    except (FileNotFoundError, ValueError) as exc:
        _fail(exc, 2)
    if config.backend != "vllm":
        _fail(f"{config.name} is a {config.backend} config; `serve` needs a vllm config", 2)
    with _engine_errors():
        command = server_command(config, host, port)
    err.print(" ".join(command), highlight=False)
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    raise typer.Exit(subprocess.call(command, env=environment))


@app.command()
def models() -> None:
    """List the model configs in model_configs/."""
    from rich.table import Table

    from .config import DEFAULT_MODEL, available_configs

    table = Table(title="Model configs", title_justify="left")
    for column in ("name", "backend", "model", "structured outputs", "description"):
        table.add_column(column, overflow="fold")
    for c in available_configs():
        table.add_row(c.name + (" (default)" if c.name == DEFAULT_MODEL else ""), c.backend, c.model,
                      c.structured_outputs, c.description)
    console.print(table)


def main() -> None:  # pragma: no cover - console script entry
    app(prog_name="scaffold-local")


if __name__ == "__main__":  # pragma: no cover
    main()
