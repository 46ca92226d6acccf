"""Tables and evidence for people: per-system means, and for one summary the item-level verdicts
with the judge's sentence ids and justifications. (Files for machines: store/tables.py.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..analysis.budget import OVER, WITHIN, BudgetCompliance
from ..analysis.groups import GroupedVsIndividual, MemberCoverage
from ..language import name as language_name
from ..metrics import METRICS, SystemScores
from ..records import Record
from ..runs import Run
from ..views import ViewSpec


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


def systems_table(systems: Sequence[SystemScores], title: str = "Per-system means", ds_scale: int = 10) -> Table:
    """Metrics as rows, systems as columns: each system's mean over all its summaries, "(k excl.)"
    marking means that left out k summaries (the reasons are in systems.csv). Where another system's
    missing values make the paired mean (the report's) differ, a second row gives it, and each row
    says which mean it is."""
    caption = ("mean over all summaries where a metric is defined; (k excl.): summaries left out, the reasons "
               "in systems.csv; paired mean: over the documents every system has a value for, as `report` compares")
    table = Table(title=title, title_justify="left", min_width=len(title), caption=caption, caption_justify="left")
    table.add_column("metric", style="bold")
    for s in systems:
        table.add_column(f"{s.system}\n(n={s.n_summaries})", justify="right")
    for key in METRICS:
        means = [s.metrics[key] for s in systems]
        cells = [_fmt(m.mean, key, ds_scale) + (f" ({m.excluded} excl.)" if m.excluded else "") for m in means]
        if not any(m.paired_left_out for m in means):
            table.add_row(_name(key, ds_scale), *cells)
            continue
        table.add_row(f"{_name(key, ds_scale)}: mean over all summaries", *cells)
        table.add_row(f"{_name(key, ds_scale)}: paired mean over {_documents(means[0].paired_documents)}",
                      *(_fmt(m.paired_mean, key, ds_scale) for m in means))
    return table


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


def _verdict_table(run: Run, spec: ViewSpec, items: tuple[Any, ...], record: Record | None,
                   sources: dict[str, str], explained: Mapping[str, str]) -> Table | Text:
    """Every judged item of one view, kept or missed as the metrics counted it, with the cited sentences
    and the reason."""
    verdicts = run.verdicts(spec.name, record) if record is not None and record.parsed is not None else None
    if record is None or verdicts is None:
        reason = "not judged" if record is None else (record.validation_error or record.error)
        return Text(f"{spec.title}: no verdicts ({reason})", style="yellow")
    table = Table(title=spec.title, title_justify="left")
    for column in ("id", "label", "kept", "sentences", "item", "justification"):
        table.add_column(column, overflow="fold")
    for item in sorted(spec.judged(items), key=lambda i: _LABEL_ORDER.get(i.label, 2)):
        kept = verdicts.kept.get(item.id, 0) >= 0.5
        failed = verdicts.failure(item.id)
        reason = failed or explained.get(item.id) or verdicts.justification.get(item.id) or \
            verdicts.justification.get(item.id.split(".")[0], "")
        if failed:
            verdict = Text("failed", style="yellow")
        elif item.id not in verdicts.kept and item.label == "other" and run.spec.reads_verdicts:
            verdict, reason = Text("not asked", style="dim"), "labelled other: no metric counts it"
        else:
            verdict = Text("kept" if kept else "missed", style="green" if kept else "red")
        text = f"{item.owner}: {item.text}" if item.owner else item.text
        if member := sources.get(item.id.split(".")[0]):  # a group's scaffold: the item's document
            text = f"[{member}] {text}"
        table.add_row(item.id, item.label, verdict, ",".join(map(str, verdicts.cited.get(item.id, []))), Text(text),
                      Text(reason))  # Text: brackets in an item are not markup
    return table


_LABEL_ORDER = {"main point": 0, "supporting detail": 1}


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
    records = run.records_for(candidate["doc_id"], candidate["system"])
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
    for spec, items in scaffold.each_view():
        if items and spec.prompt_items(items):
            parts.append(_verdict_table(run, spec, items, records.get(spec.name), scaffold.item_sources, explained or {}))
    for name, reason in scaffold.failures.items():
        parts.append(Text(f"scaffold {name}: unavailable: {reason}", style="yellow"))
    for note in scaffold.notes:
        parts.append(Text(f"scaffold {note.view}: {note.action}: {note.detail}", style="dim"))
    return Group(*parts)
