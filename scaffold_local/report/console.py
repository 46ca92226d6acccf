"""Tables for people on the terminal: per-system means, standings, budgets, groups and rankings; one summary's evidence
is evidence.py's. (Files for machines: data/store/score_tables.py.)"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..analysis.budget import OVER, WITHIN, BudgetCompliance
from ..analysis.groups import GroupedVsIndividual, MemberCoverage
from ..analysis.paired import MetricComparison, compare
from ..analysis.rankings import GROUNDED, HOLISTIC, RankingRow
from ..analysis.roles import DIRECTIONS
from ..analysis.scores import ScoreTable
from ..analysis.standings import (
    HEADLINE,
    MEANINGS,
    Standings,
    main_facts_by_document,
    standings,
)
from ..judge_check.checking import describe_saved
from ..method.metrics import METRICS, SystemScores
from ..runs.run import Run
from .formatting import formatted, is_direct_score, metric_label


def _documents(n: int) -> str:
    return f"{n} document" + ("" if n == 1 else "s")


def systems_table(systems: Sequence[SystemScores], title: str = "Per-system means", ds_scale: int = 10,
                  ranked: Standings | None = None) -> Table:
    """Metrics as rows, systems as columns: each system's mean over all its summaries, "(k excl.)"
    marking means that left out k summaries (the reasons are in systems.csv). Where another system's
    missing values make the paired mean (the report's) differ, a second row gives it, and each row
    says which mean it is. With `ranked`: the columns in its order, best first, and each metric's best
    value marked * (every tied system)."""
    caption = ("mean over all summaries where a metric is defined; (k excl.): summaries left out, the reasons "
               "in systems.csv; paired mean: over the documents every system has a value for, as `report` compares")
    if ranked is not None:
        caption = (f"systems by {METRICS[ranked.metric]}, best first; *: a metric's best value (ties: each); "
                   f"{DIRECTIONS}; what each means: --explain-metrics; " + caption)
        systems = sorted(systems, key=lambda s: ranked.order.index(s.system))
    table = Table(title=title, title_justify="left", min_width=len(title), caption=caption, caption_justify="left")
    table.add_column("metric", style="bold")
    for s in systems:
        table.add_column(f"{s.system}\n(n={s.n_summaries})", justify="right")
    for key in METRICS:
        means = [s.metrics[key] for s in systems]
        best = set(ranked.best.get(key, ())) if ranked is not None else set()
        cells = [Text(formatted(m.mean, key, ds_scale) + (f" ({m.excluded} excl.)" if m.excluded else "")
                      + ("*" if s.system in best else ""), style="bold" if s.system in best else "")
                 for s, m in zip(systems, means)]
        if not any(m.paired_left_out for m in means):
            table.add_row(metric_label(key, ds_scale), *cells)
            continue
        table.add_row(f"{metric_label(key, ds_scale)}: mean over all summaries", *cells)
        table.add_row(f"{metric_label(key, ds_scale)}: paired mean over {_documents(means[0].paired_documents)}",
                      *(formatted(m.paired_mean, key, ds_scale) for m in means))
    return table


def metric_glossary(ds_scale: int = 10) -> Table:
    """What each metric means, and which way is better."""
    table = Table(title=f"What the metrics mean ({DIRECTIONS})", title_justify="left")
    table.add_column("metric", style="bold")
    table.add_column("meaning")
    for key, meaning in MEANINGS.items():
        table.add_row(metric_label(key, ds_scale), meaning + (" (shown /10: the paper's 0-1 scale)"
                                                              if ds_scale == 1 and is_direct_score(key) else ""))
    return table


def run_standings(run: Run, comparison: MetricComparison | None = None) -> Standings:
    """Who leads the run on the headline metric and how far to trust it (`comparison`: the headline's paired
    comparison where the caller has it, which says whether the lead is assessed)."""
    comparison = comparison or compare(ScoreTable.from_run(run), HEADLINE)
    return standings(run.systems, HEADLINE, documents=len({c["doc_id"] for c in run.candidates}),
                     main_facts=main_facts_by_document(run), comparison=comparison,
                     judge_check=describe_saved(run.store_root, run.judge.config, run.spec.method_version))


def results(run: Run, ds_scale: int = 10, explain_metrics: bool = False) -> Group:
    """A finished run for people: the verdict line, the ranked table, the caveat (and the glossary)."""
    ranked = run_standings(run)
    parts: list[Any] = [Text(ranked.verdict, style="bold"),
                        systems_table(run.systems, f"{run.dir.name}: per-system means", ds_scale, ranked),
                        Text(ranked.caveat, style="dim")]
    if explain_metrics:
        parts.append(metric_glossary(ds_scale))
    return Group(*parts)


def budget_table(budget: BudgetCompliance, ds_scale: int = 10) -> Table:
    """Compliance with a word budget per system, then each metric's mean within / over the budget."""
    title = f"word budget: {budget.budget} words"
    caption = "each metric's mean over the summaries within the budget / over it (–: none)"
    table = Table(title=title, title_justify="left", min_width=len(title), caption=caption, caption_justify="left")
    table.add_column("metric", style="bold")
    for s in budget.systems:
        table.add_column(s.system, justify="right")
    table.add_row("within budget", *(f"{s.within} of {s.summaries}" for s in budget.systems))
    table.add_row("words: mean / most", *(f"{s.mean_words or 0:.0f} / {s.max_words or 0}" for s in budget.systems))
    for key, by_system in budget.means.items():
        table.add_row(metric_label(key, ds_scale), *(" / ".join(formatted(by_system[s.system][group][0], key, ds_scale)
                                                         for group in (WITHIN, OVER)) for s in budget.systems))
    return table


def member_table(coverage: MemberCoverage, metrics: Sequence[str] = ("fc", "main_fc")) -> Table:
    """Per group: its summaries' coverage of the whole group, then of each member document's items."""
    shown = [m for m in metrics if m in coverage.metrics]
    title = "coverage of each group and of its member documents: " + " / ".join(METRICS[m] for m in shown)
    caption = "a group's row: its summary over the union of its members' scaffolds; a member's: over that document's items"
    table = Table(title=title, title_justify="left", min_width=len(title), caption=caption, caption_justify="left")
    table.add_column("group / member", style="bold")
    for system in coverage.systems:
        table.add_column(system, justify="right")

    def cells(by_system: Sequence[dict[str, float | None] | None]) -> list[str]:
        return [" / ".join(formatted((values or {}).get(m), m) for m in shown) for values in by_system]

    for group in dict.fromkeys(g for g, _ in coverage.rows):
        table.add_row(group, *cells([coverage.groups.get((group, s)) for s in coverage.systems]))
        for member in (m for g, m in coverage.rows if g == group):
            table.add_row(f"  {member}", *cells([coverage.values.get((group, member, s)) for s in coverage.systems]))
    return table


def grouped_vs_individual_table(side: GroupedVsIndividual, ds_scale: int = 10) -> Group:
    """Each system's means in the individual run and the grouped run, then each member document's FC
    in its own summary and in the group summaries."""
    title = f"individual ({side.individual_run}) vs grouped ({side.grouped_run}): mean individual / grouped"
    means = Table(title=title, title_justify="left", min_width=len(title))
    means.add_column("metric", style="bold")
    for system in side.systems:
        means.add_column(system, justify="right")
    for m in side.metrics:
        means.add_row(metric_label(m, ds_scale), *(f"{formatted(side.individual[m][s][0], m, ds_scale)} / "
                                                   f"{formatted(side.grouped[m][s][0], m, ds_scale)}"
                                                   for s in side.systems))
    title = "FC of each member document: in its own summary / in the group summaries"
    members = Table(title=title, title_justify="left", min_width=len(title))
    members.add_column("member", style="bold")
    for system in side.systems:
        members.add_column(system, justify="right")
    for member in side.members:
        members.add_row(member, *(f"{formatted(side.member_fc[(member, s)][0], 'fc')} / "
                                  f"{formatted(side.member_fc[(member, s)][1][0], 'fc')}" for s in side.systems))
    return Group(means, members)


# ---------------------------------------------------------------- rankings


def _signed(value: float) -> str:
    return f"{value:+.2f}"


def rankings_table(rows: Sequence[RankingRow]) -> Table:
    """The systems ranked several ways side by side (analysis/rankings.py)."""
    notes = [f"{row.name}: {row.note}" for row in rows if row.note]
    table = Table(title="Rankings side by side", title_justify="left", caption_justify="left", caption=escape(
        "grounded pairwise: on each document the summary that keeps more main facts (then main questions, then main "
        "entity attributes) is preferred, a tie counts half; "
        + ("holistic pairwise: the judge asked which of two summaries is better, each pair in both orders, P averaged; "
           if any(row.name == HOLISTIC for row in rows) else "")
        + "Bradley-Terry strengths over the documents. Pairs separated at 5%: paired t-tests (Holm) for a metric, "
        "documents resampled for pairwise (Holm as well)." + "".join(f"\n{note}" for note in notes)))
    for column in ("ranked by", "best first", "pairs separated", "Kendall tau with grounded pairwise"):
        table.add_column(column)
    for row in rows:
        pairwise = row.name in (GROUNDED, HOLISTIC)
        name = row.name if pairwise else f"{METRICS[row.name]} (mean)"
        order = row.ordered(_signed if pairwise else functools.partial(formatted, key=row.name))
        tau = "-" if row.tau_with_grounded is None else f"{row.tau_with_grounded:.2f}"
        separated = f"not assessed ({row.not_assessed})" if row.not_assessed else f"{row.pairs_separated} of {row.pairs}"
        table.add_row(name, escape(order), separated, tau)
    return table
