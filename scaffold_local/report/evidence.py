"""One summary's evidence for people (`show --summary`): each scaffold item kept or missed with its P, cited sentences
and justification, each sentence's check, the direct score, and what assembling the scaffold changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..analysis.counted import NEAR_THRESHOLD, CountedItem, SummaryEvidence, summary_evidence
from ..method.language import name as language_name
from ..method.metrics import METRICS
from ..method.scaffold import Scaffold
from ..method.views import VIEW_SPECS, ViewSpec
from ..runs.run import Run
from .formatting import formatted, is_direct_score, metric_label

_LABEL_ORDER = {"main point": 0, "supporting detail": 1}


def _scaffold_lines(scaffold: Scaffold) -> list[Text]:
    """What a reader should know of the scaffold first: the document's language, a group's documents."""
    lines = []
    if scaffold.language is not None:  # method version 6 on
        lines.append(Text(f"document language: {language_name(scaffold.language)} "
                          f"(detected: {scaffold.language}, p={scaffold.language_probability})", style="dim"))
    if scaffold.members:
        lines.append(Text(f"a group of {len(scaffold.members)} documents: {', '.join(scaffold.members)}; "
                          "each item names its document", style="dim"))
    return lines


def evidence_panel(run: Run, key: str, ds_scale: int = 10, explained: Mapping[str, str] | None = None) -> Group:
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
    parts.append(Text("scores: " + "  ".join(f"{metric_label(k, ds_scale)}={formatted(v, k, ds_scale)}"
                                            for k, v in scores.values.items())))
    parts += [Text(note, style="yellow") for note in scores.notes.values()]  # values over fewer items
    parts += _scaffold_lines(scaffold)
    counted = summary_evidence(run, candidate)
    for name, items in groupby(counted.items, key=lambda i: i.view):
        parts.append(_view_table(VIEW_SPECS[name], list(items), scaffold.item_sources, explained or {}))
    for name, reason in counted.view_failures.items():
        parts.append(Text(f"{VIEW_SPECS[name].title}: no verdicts ({reason})", style="yellow"))
    parts.append(_sentence_table(counted))
    if counted.direct_score_failure is not None:
        parts.append(Text(f"Direct score: not available ({counted.direct_score_failure})", style="yellow"))
    else:
        grades = "  ".join(f"{metric_label(k, ds_scale)}={formatted(scores.values.get(k), k, ds_scale)}"
                           for k in METRICS if is_direct_score(k))
        parts.append(Text(f"Direct score: {grades}" + (f"\n  rationale: {counted.direct_score_rationale}"
                                                       if counted.direct_score_rationale else
                                                       "\n  (grades read from the judge's probabilities: no rationale)")))
    for name, reason in scaffold.failures.items():
        parts.append(Text(f"scaffold {name}: unavailable: {reason}", style="yellow"))
    for note in scaffold.notes:
        parts.append(Text(f"scaffold {note.view}: {note.action}: {note.detail}", style="dim"))
    return Group(*parts)


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
