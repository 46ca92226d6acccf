"""`check-judge`: can this judge tell whether a summary conveys a fact better than word overlap?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ..judge_check.cases import KINDS
from ..judge_check.checking import SANITY_GATE, run_check, save
from ..runs import JudgeOptions
from .options import DEFAULT_STORE, ConfidenceOpt, MethodOpt, ModelOpt, StoreOpt, open_judge
from .output import command_app, console, err

app = command_app()


@app.command("check-judge", short_help="can this judge tell kept facts from missed ones?")
def check_judge(
    model: ModelOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    method_version: MethodOpt = None,
    verdict_confidence: ConfidenceOpt = False,
    cases: Annotated[Path | None, typer.Option(
        help="your own cases instead of the built-in ones, one JSON object per line: doc_id, document, facts, and "
             "summaries with a presence label per fact (verbatim, paraphrased, dropped, contradicted); saved apart "
             "from the built-in check")] = None,
) -> None:
    """Can this judge tell whether a summary conveys a fact better than word overlap? (A few minutes on CPU.)"""
    pipeline = open_judge(JudgeOptions(model=model, store=store, method_version=method_version,
                                       verdict_confidence=verdict_confidence))
    try:
        result = run_check(pipeline, cases)
    finally:
        pipeline.close()
    which = "built-in cases" if cases is None else escape(str(cases))
    table = Table(title=f"judge check ({which}): {result.judge}, method version {result.method} "
                        f"({result.items} (summary, fact) items, {result.failed} failed); judge decides by "
                        f"{result.decision}", title_justify="left")
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
    elif (found := result.judge_agreement["balanced_accuracy"].value) is not None and found < SANITY_GATE:
        err.print(f"[red]warning: balanced accuracy {found:.3f} is below {SANITY_GATE}: do not base decisions on "
                  f"{escape(result.judge)}'s verdicts.[/red]")
    if "no calibrated threshold" in (result.decision or ""):
        err.print(f"note: its verdicts count at P >= 0.5; to calibrate its thresholds on people's labels: "
                  f"scaffold-local calibrate -m {escape(pipeline.config.name)} --method-version {result.method} "
                  "--data <evaluation-data folder>", highlight=False)
    console.print(f"saved: {save(store, pipeline.config, result, cases)}", highlight=False)
