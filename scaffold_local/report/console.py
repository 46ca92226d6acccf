"""Tables and evidence for people: per-system means, and for one summary the item-level verdicts
with the judge's sentence ids and justifications. (Files for machines: data/store/score_tables.py.)"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..analysis.budget import OVER, WITHIN, BudgetCompliance
from ..analysis.counted import NEAR_THRESHOLD, CountedItem, SummaryEvidence, summary_evidence
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
from ..method.language import name as language_name
from ..method.metrics import METRICS, SystemScores
from ..method.views import VIEW_SPECS, ViewSpec
from ..runs.run import Run


def _is_direct_score(key: str) -> bool:
    return key == "ds" or key.startswith("ds_")


def _fmt(value: float | None, key: str, ds_scale: int = 10) -> str:
    """Direct scores on their 1-10 scale (2 decimals), or on the paper's 0-1 scale (DS/10) when
    `ds_scale` is 1; every other metric is a share (3 decimals)."""
    if value is None:
        return "–"
    if _is_direct_score(key):
        return f"{value:.2f}" if ds_scale == 10 else f"{value / 10:.3f}"
    return f"{value:.3f}"


def _name(key: str, ds_scale: int) -> str:
    return METRICS[key] + (" /10" if ds_scale == 1 and _is_direct_score(key) else "")


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
        cells = [Text(_fmt(m.mean, key, ds_scale) + (f" ({m.excluded} excl.)" if m.excluded else "")
                      + ("*" if s.system in best else ""), style="bold" if s.system in best else "")
                 for s, m in zip(systems, means)]
        if not any(m.paired_left_out for m in means):
            table.add_row(_name(key, ds_scale), *cells)
            continue
        table.add_row(f"{_name(key, ds_scale)}: mean over all summaries", *cells)
        table.add_row(f"{_name(key, ds_scale)}: paired mean over {_documents(means[0].paired_documents)}",
                      *(_fmt(m.paired_mean, key, ds_scale) for m in means))
    return table


def metric_glossary(ds_scale: int = 10) -> Table:
    """What each metric means, and which way is better."""
    table = Table(title=f"What the metrics mean ({DIRECTIONS})", title_justify="left")
    table.add_column("metric", style="bold")
    table.add_column("meaning")
    for key, meaning in MEANINGS.items():
        table.add_row(_name(key, ds_scale), meaning + (" (shown /10: the paper's 0-1 scale)"
                                                       if ds_scale == 1 and _is_direct_score(key) else ""))
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
        table.add_row(_name(key, ds_scale), *(" / ".join(_fmt(by_system[s.system][group][0], key, ds_scale)
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
        return [" / ".join(_fmt((values or {}).get(m), m) for m in shown) for values in by_system]

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
        means.add_row(_name(m, ds_scale), *(f"{_fmt(side.individual[m][s][0], m, ds_scale)} / "
                                            f"{_fmt(side.grouped[m][s][0], m, ds_scale)}" for s in side.systems))
    title = "FC of each member document: in its own summary / in the group summaries"
    members = Table(title=title, title_justify="left", min_width=len(title))
    members.add_column("member", style="bold")
    for system in side.systems:
        members.add_column(system, justify="right")
    for member in side.members:
        members.add_row(member, *(f"{_fmt(side.member_fc[(member, s)][0], 'fc')} / "
                                  f"{_fmt(side.member_fc[(member, s)][1][0], 'fc')}" for s in side.systems))
    return Group(means, members)


# ---------------------------------------------------------------- the evidence behind one summary


_VERDICT_STYLE = {"kept": "green", "supported": "green", "missed": "red", "unsupported": "red", "failed": "yellow"}


def _verdict(status: str, near: bool) -> Text:
    return Text(status + (" ~" if near else ""), style=_VERDICT_STYLE.get(status, "dim"))


def _p(p: float | None) -> str:
    return "" if p is None else f"{p:.3f}"


def _counting(spec: ViewSpec, threshold: float | None) -> str:
    counts = ("every attribute counts in EPS, whatever its label" if "other" in spec.counted_labels
              else "items labelled other are not counted")
    decided = f"kept where P(kept) >= {threshold:.3f} (~: within {NEAR_THRESHOLD} of it)" if threshold is not None \
        else "kept as the judge answered"
    return f"{spec.title}: {decided}; {counts}"


def _view_table(spec: ViewSpec, items: Sequence[CountedItem], sources: Mapping[str, str],
                explained: Mapping[str, str]) -> Table:
    """One view's verdicts as the metrics counted them, with P(kept), the cited sentences and the reason (a
    column only where some item has one: read verdicts have none until `--explain` asks)."""
    threshold = next((i.threshold for i in items if i.threshold is not None), None)
    rows = []
    for item in sorted(items, key=lambda i: _LABEL_ORDER.get(i.label, 2)):
        text = item.text + (f"\nexpected: {item.expected_answer}" if item.expected_answer else "")
        if member := sources.get(item.id.split(".")[0]):  # a group's scaffold: the item's document
            text = f"[{member}] {text}"
        reason = explained.get(item.id) or item.justification
        if item.status == "not counted":
            reason = f"labelled {item.label}: no metric counts it"
        elif item.status == "not asked":
            reason = f"labelled {item.label}: no metric counts it, so it was not asked"
        rows.append((item, text, reason))
    cites, reasons = any(i.cited for i in items), any(reason for _, _, reason in rows)
    table = Table(title=_counting(spec, threshold), title_justify="left")
    for column in ("id", "label", "verdict", "P(kept)", *(("sentences",) if cites else ()), "item",
                   *(("justification",) if reasons else ())):
        table.add_column(column, overflow="fold", justify="right" if column == "P(kept)" else "left")
    for item, text, reason in rows:  # Text: brackets in an item are not markup
        cited = (",".join(map(str, item.cited)),) if cites else ()
        table.add_row(item.id, item.label, _verdict(item.status, item.near_threshold), _p(item.p), *cited, Text(text),
                      *((Text(reason),) if reasons else ()))
    return table


def _sentence_table(evidence: SummaryEvidence) -> Table | Text:
    if evidence.sentence_failure is not None:
        return Text(f"Sentence check (F): no verdicts ({evidence.sentence_failure})", style="yellow")
    threshold = next((s.threshold for s in evidence.sentence_verdicts if s.threshold is not None), None)
    decided = f"supported where P(supported) >= {threshold:.3f}" if threshold is not None else "as the judge answered"
    table = Table(title=f"Sentence check (F): {decided}", title_justify="left")
    shows_p = any(s.p is not None for s in evidence.sentence_verdicts)
    reasons = any(s.reason for s in evidence.sentence_verdicts)  # read verdicts have none
    for column in ("sentence", "verdict", *(("P(supported)",) if shows_p else ()), "category",
                   *(("reason",) if reasons else ())):
        table.add_column(column, overflow="fold")
    for s in evidence.sentence_verdicts:
        table.add_row(f"[{s.number}]", _verdict(s.status, s.near_threshold), *((_p(s.p),) if shows_p else ()),
                      s.category or "", *((Text(s.reason),) if reasons else ()))
    return table


_LABEL_ORDER = {"main point": 0, "supporting detail": 1}


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
        order = row.ordered(_signed if pairwise else functools.partial(_fmt, key=row.name))
        tau = "-" if row.tau_with_grounded is None else f"{row.tau_with_grounded:.2f}"
        separated = f"not assessed ({row.not_assessed})" if row.not_assessed else f"{row.pairs_separated} of {row.pairs}"
        table.add_row(name, escape(order), separated, tau)
    return table


def evidence(run: Run, key: str, ds_scale: int = 10, explained: Mapping[str, str] | None = None) -> Group:
    """Item-level evidence for one summary: each scaffold item kept or missed, with sentence ids
    and the judge's justification (`explained`: written on demand, for a run that read its verdicts),
    then what assembling the scaffold changed."""
    candidate = run.candidate(key)
    parts: list[Any] = [Text(f"{key}  (input record {candidate['record']})", style="bold")]
    for i, sentence in enumerate(candidate["sentences"], 1):
        parts.append(Text(f"  [{i}] {sentence}"))
    if candidate.get("failed"):
        parts.append(Text(f"not judged: {candidate['failed']}", style="red"))
        return Group(*parts)
    scaffold = run.scaffold(candidate["scaffold_key"])
    if scaffold is None:
        parts.append(Text("scaffold not found in the store", style="red"))
        return Group(*parts)
    scores = next(s for s in run.summaries if s.doc_id == candidate["doc_id"] and s.system == candidate["system"])
    parts.append(Text("scores: " + "  ".join(f"{_name(k, ds_scale)}={_fmt(v, k, ds_scale)}"
                                            for k, v in scores.values.items())))
    parts += [Text(note, style="yellow") for note in scores.notes.values()]  # values over fewer items
    if scaffold.language is not None:  # method version 6 on
        parts.append(Text(f"document language: {language_name(scaffold.language)} "
                          f"(detected: {scaffold.language}, p={scaffold.language_probability})", style="dim"))
    if scaffold.members:
        parts.append(Text(f"a group of {len(scaffold.members)} documents: {', '.join(scaffold.members)}; "
                          "each item names its document", style="dim"))
    counted = summary_evidence(run, candidate)
    for name, items in groupby(counted.items, key=lambda i: i.view):
        parts.append(_view_table(VIEW_SPECS[name], list(items), scaffold.item_sources, explained or {}))
    for name, reason in counted.view_failures.items():
        parts.append(Text(f"{VIEW_SPECS[name].title}: no verdicts ({reason})", style="yellow"))
    parts.append(_sentence_table(counted))
    if counted.direct_score_failure is not None:
        parts.append(Text(f"Direct score: not available ({counted.direct_score_failure})", style="yellow"))
    else:
        grades = "  ".join(f"{_name(k, ds_scale)}={_fmt(scores.values.get(k), k, ds_scale)}"
                           for k in METRICS if _is_direct_score(k))
        parts.append(Text(f"Direct score: {grades}" + (f"\n  rationale: {counted.direct_score_rationale}"
                                                       if counted.direct_score_rationale else
                                                       "\n  (grades read from the judge's probabilities: no rationale)")))
    for name, reason in scaffold.failures.items():
        parts.append(Text(f"scaffold {name}: unavailable: {reason}", style="yellow"))
    for note in scaffold.notes:
        parts.append(Text(f"scaffold {note.view}: {note.action}: {note.detail}", style="dim"))
    return Group(*parts)
