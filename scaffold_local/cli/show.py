"""`show`: a finished run's per-system table, or the evidence behind one summary's scores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from .. import runs
from ..errors import UsageError
from ..records import describe_decision
from ..report import evidence_panel, rankings_table, results
from .options import DsScaleOpt, check_ds_scale
from .output import command_app, console, print_breakdowns

app = command_app()


@app.command(short_help="print a run's table, or one summary's evidence")
def show(
    run_dir: Annotated[Path, typer.Argument(help="a run folder (printed by `score`)")],
    summary: Annotated[str | None, typer.Option(
        "--summary", "-s", help="DOC_ID/SYSTEM: item-level evidence for one summary")] = None,
    ds_scale: DsScaleOpt = 10,
    explain: Annotated[bool, typer.Option(
        "--explain", help="with --summary, for a run whose verdicts were read (the default method): the judge "
                          "writes why it decided each counted verdict (starts the run's judge for those not yet in "
                          "the store)")] = False,
    items: Annotated[str | None, typer.Option(
        "--items", help="with --explain: only these items, comma-separated (F1,Q2,E1.A3)")] = None,
    explain_metrics: Annotated[bool, typer.Option(
        "--explain-metrics", help="with the per-system table: what each metric means")] = False,
    rankings: Annotated[bool, typer.Option(
        "--rankings", help="the systems ranked by grounded pairwise preferences (Bradley-Terry) beside FPS, QPS, EPS "
                           "and DS, and the holistic judge's where the run read them (score --pairwise): pairs each "
                           "separates, and Kendall tau")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="the per-system table as JSON on stdout (the fields of the run folder's systems.json), for "
                       "scripts")] = False,
) -> None:
    """Print a finished run: the per-system table, or the evidence behind one summary's scores."""
    check_ds_scale(ds_scale)
    run = runs.load(run_dir)
    _ = run.systems  # a run that has not finished scoring says so here
    if as_json:
        print((run.dir / "systems.json").read_text(encoding="utf-8"))
        return
    if (explain or items) and summary is None:
        raise UsageError("--explain explains the verdicts of one summary: give --summary DOC_ID/SYSTEM")
    if summary is not None:
        explained = {}
        if explain or items:
            from ..runs.explain import explain as write_explanations

            chosen = [i.strip() for i in (items or "").split(",") if i.strip()]
            explained = {e.item: e.text or f"(no justification: {e.failure})"
                         for e in write_explanations(run, summary, chosen)}
        console.print(evidence_panel(run, summary, ds_scale, explained))
        return
    spec = run.spec
    console.print(results(run, ds_scale, explain_metrics))
    if rankings:
        from ..analysis.rankings import rankings_of  # scipy's optimiser: loaded only when asked for

        console.print(rankings_table(rankings_of(run)))
    print_breakdowns(run_dir, ds_scale)
    decision = describe_decision(spec.decided_by(), spec.reads_verdicts, spec.prior_free_kinds)
    console.print(f"judge: {spec.judge.get('name')} ({spec.judge.get('backend')}, {spec.judge.get('model')}); "
                  f"method version {spec.method_version}; {decision}; "
                  f"scaffolds: {spec.scaffold_source.describe()}; "
                  f"summaries: {len(run.summaries)}; status: {spec.status}; created {spec.created_at}", highlight=False)
    console.print(escape(run.describe_scaffolds()), highlight=False)
    documents = list(dict.fromkeys(c["doc_id"] for c in run.candidates))
    example = f"{documents[0]}/{run.candidates[0]['system']}" if documents else "DOC_ID/SYSTEM"
    console.print(escape(f"documents: {', '.join(documents)} (the evidence behind one summary's scores: "
                         f"scaffold-local show {run_dir} --summary {example})"), highlight=False)
    notes = run.scaffold_notes()
    if notes:
        console.print("scaffold assembly: " + ", ".join(f"{action}: {n}" for action, n in sorted(notes.items()))
                      + " (details with --summary)", highlight=False)
