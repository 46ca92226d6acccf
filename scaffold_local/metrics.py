"""Metrics as pure functions of a scaffold and one summary's judgments (METHOD.md).

Nothing here knows about engines, prompts or files. Undefined values are None with a reason; they
are left out of means, and every mean reports how many summaries it left out and why. Each system
has two means per metric (over all its summaries, and paired over the documents every system has a
value for); they are printed under those names wherever they differ.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import fmean
from typing import Any

from pydantic import BaseModel, Field

from .schemas import Scaffold
from .text import HAN
from .views import VIEW_SPECS, JudgedItem, ViewVerdicts

# Machine-readable key -> display name, in display order.
METRICS: dict[str, str] = {
    "fps": "FPS",
    "qps": "QPS",
    "eps": "EPS",
    "f": "F",
    "fc": "FC",
    "main_fc": "Main FC",
    "supp_fc": "Supp FC",
    "fact_focus": "Fact Focus",
    "qc": "QC",
    "ds_faithfulness": "DS Faithfulness",
    "ds_completeness": "DS Completeness",
    "ds_understandability": "DS Understandability",
    "ds_hallucination": "DS Hallucination",
    "ds": "DS",
    "rouge_l": "ROUGE-L",
}
DIRECT_SCORE_AXES = ("faithfulness", "completeness", "understandability", "hallucination")
# The labels that enter fact and question counts. An "other" fact or question (metadata, dates,
# boilerplate) never affects any score; the one exception is EPS, whose denominator is every scaffold
# attribute whatever its label, as the paper states (G.6).
SCORED_LABELS = ("main point", "supporting detail")


def ratio(numerator: float, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def preference_score(main_hit: float, main_total: int, supp_hit: float, supp_total: int) -> float | None:
    """FPS / QPS: main recall x (1 - supporting recall). Undefined without main items; with no
    supporting items the penalty factor is 1."""
    if main_total == 0:
        return None
    penalty = 1.0 - supp_hit / supp_total if supp_total else 1.0
    return main_hit / main_total * penalty


@dataclass
class Judgments:
    """One summary's normalized verdicts. A view missing from `views`, or a None field, was not
    judged or failed; `failures` holds the reason under the view's or judgment's name. Within a
    judged view or sentence check, an item whose own verdict failed is in the view's `failed`, or
    None in `sentence_faithful`."""

    views: dict[str, ViewVerdicts] = field(default_factory=dict)
    sentence_faithful: Sequence[bool | None] | None = None
    direct_score: Mapping[str, int] | None = None
    failures: dict[str, str] = field(default_factory=dict)


class SummaryScores(BaseModel):
    doc_id: str
    system: str
    n_sentences: int
    values: dict[str, float | None]
    undefined: dict[str, str]
    # A value computed over fewer items than the scaffold has, because some verdicts failed: which.
    notes: dict[str, str] = Field(default_factory=dict)


class _Scores:
    """Collects values, the reasons for undefined ones, and notes on values over fewer items."""

    def __init__(self) -> None:
        self.values: dict[str, float | None] = {}
        self.undefined: dict[str, str] = {}
        self.notes: dict[str, str] = {}

    def set(self, key: str, value: float | None, reason: str) -> None:
        self.values[key] = value
        if value is None:
            self.undefined[key] = reason

    def unavailable(self, keys: Iterable[str], reason: str) -> None:
        for key in keys:
            self.set(key, None, reason)


# A verdict that failed validation (or whose request failed) counts neither as kept nor as missed: a
# share is taken over the items with a valid verdict and notes how many that is, and is undefined only
# where no item it counts has one. Fact Focus is the exception: see _fact_focus.
Verdict = tuple[str, float | None]  # (item id, 1 or 0 or P(kept)); None: no valid verdict


def _verdicts_of(items: Iterable[JudgedItem], verdicts: ViewVerdicts) -> list[Verdict]:
    return [(i.id, None if verdicts.failure(i.id) else float(verdicts.kept.get(i.id, False))) for i in items]


def _failed(items: Sequence[Verdict]) -> list[str]:
    return [item for item, kept in items if kept is None]


def _share(out: _Scores, key: str, items: Sequence[Verdict], noun: str, empty_reason: str) -> None:
    """The share of kept items among those with a valid verdict (`noun`: what an item is)."""
    judged = [kept for _, kept in items if kept is not None]
    failed = _failed(items)
    if failed and not judged:
        out.set(key, None, f"no {noun} has a valid verdict ({', '.join(failed)})")
        return
    out.set(key, ratio(sum(judged), len(judged)), empty_reason)
    if failed:
        out.notes[key] = (f"{METRICS[key]} over {len(judged)} of {len(items)} {noun}s: "
                          f"no valid verdict for {', '.join(failed)}")


def _preference(out: _Scores, key: str, main: Sequence[Verdict], supp: Sequence[Verdict], noun: str,
                no_main_reason: str) -> None:
    """FPS / QPS over the main and supporting items with a valid verdict. Undefined where no main
    item has one, or no supporting item has one while the scaffold has some (the penalty is unknown)."""
    judged_main = [kept for _, kept in main if kept is not None]
    judged_supp = [kept for _, kept in supp if kept is not None]
    failed = _failed([*main, *supp])
    if main and not judged_main:
        out.set(key, None, f"no main {noun} has a valid verdict ({', '.join(_failed(main))})")
    elif supp and not judged_supp:
        out.set(key, None, f"no supporting {noun} has a valid verdict ({', '.join(_failed(supp))})")
    else:
        out.set(key, preference_score(sum(judged_main), len(judged_main), sum(judged_supp), len(judged_supp)),
                no_main_reason)
        if failed:
            out.notes[key] = (f"{METRICS[key]} over {len(judged_main)} of {len(main)} main and {len(judged_supp)} of "
                              f"{len(supp)} supporting {noun}s: no valid verdict for {', '.join(failed)}")


def _by_label(items: Sequence[JudgedItem], verdicts: ViewVerdicts) -> tuple[list[Verdict], list[Verdict]]:
    """(main, supporting) verdicts; "other" items are not counted."""
    return (_verdicts_of((i for i in items if i.label == "main point"), verdicts),
            _verdicts_of((i for i in items if i.label == "supporting detail"), verdicts))


def _fact_metrics(out: _Scores, judged: Sequence[JudgedItem], verdicts: ViewVerdicts, n_sentences: int) -> None:
    main, supp = _by_label(judged, verdicts)
    _preference(out, "fps", main, supp, "fact", "scaffold has no main facts")
    _share(out, "fc", [*main, *supp], "fact", "scaffold has no main or supporting facts")
    _share(out, "main_fc", main, "main fact", "scaffold has no main facts")
    _share(out, "supp_fc", supp, "supporting fact", "scaffold has no supporting facts")
    _fact_focus(out, judged, verdicts, n_sentences, _failed([*main, *supp]))


def _fact_focus(out: _Scores, judged: Sequence[JudgedItem], verdicts: ViewVerdicts, n_sentences: int,
                failed: list[str]) -> None:
    """Sentences aligned to a kept main or supporting fact / all sentences: a sentence that conveys only
    "other" facts is not aligned (other facts never affect a score; EPS is the one exception). Not a
    share of facts: a failed fact could align a sentence no other fact aligns, so with a failed fact the
    value is exact only where the judged facts already align every sentence, and undefined otherwise."""
    scored = [i for i in judged if i.label in SCORED_LABELS]
    aligned = {s for i in scored if verdicts.kept.get(i.id, 0) >= 0.5 for s in verdicts.cited.get(i.id, ())}
    if not scored:
        out.set("fact_focus", None, "scaffold has no main or supporting facts")
    elif failed and len(aligned) < n_sentences:
        out.set("fact_focus", None, f"no valid verdict for {', '.join(failed)}, which could align a sentence no "
                                    "judged fact aligns")
    else:
        out.set("fact_focus", ratio(len(aligned), n_sentences), "summary has no sentences")
        if failed:
            out.notes["fact_focus"] = (f"Fact Focus from {len(scored) - len(failed)} of {len(scored)} facts (no valid "
                                       f"verdict for {', '.join(failed)}): exact, as they align every sentence")


def _question_metrics(out: _Scores, judged: Sequence[JudgedItem], verdicts: ViewVerdicts, n_sentences: int) -> None:
    main, supp = _by_label(judged, verdicts)
    _preference(out, "qps", main, supp, "question", "scaffold has no main questions")
    _share(out, "qc", [*main, *supp], "question", "scaffold has no main or supporting questions")


def _entity_metrics(out: _Scores, judged: Sequence[JudgedItem], verdicts: ViewVerdicts, n_sentences: int) -> None:
    # The paper (G.6): the denominator is always every scaffold attribute, whatever its label, so an
    # "other" attribute counts here (the one place it does) and a kept one raises EPS.
    _share(out, "eps", _verdicts_of(judged, verdicts), "entity attribute", "scaffold has no entity attributes")


# The metrics each view's verdicts feed (METHOD.md's formulas), by view.
VIEW_METRICS: dict[str, tuple[tuple[str, ...], Callable[[_Scores, Sequence[JudgedItem], ViewVerdicts, int], None]]] = {
    "facts": (("fps", "fc", "main_fc", "supp_fc", "fact_focus"), _fact_metrics),
    "questions": (("qps", "qc"), _question_metrics),
    "entities": (("eps",), _entity_metrics),
}


def score_summary(
    scaffold: Scaffold,
    judgments: Judgments,
    *,
    system: str,
    n_sentences: int,
    rouge_l_value: float | None = None,
) -> SummaryScores:
    out = _Scores()
    for name, spec in VIEW_SPECS.items():
        keys, compute = VIEW_METRICS[name]
        if spec.items(scaffold) is None:
            what = "extraction failed" if scaffold.origin == "extracted" else "view unavailable"
            out.unavailable(keys, f"{spec.noun} {what}: {scaffold.failures.get(name, '?')}")
        elif name not in judgments.views:
            out.unavailable(keys, f"{spec.noun} alignment failed: {judgments.failures.get(name, '?')}")
        else:
            compute(out, spec.judged(scaffold), judgments.views[name], n_sentences)

    if judgments.sentence_faithful is None:
        reason = "summary has no sentences" if n_sentences == 0 else (
            f"faithfulness check failed: {judgments.failures.get('faithfulness', '?')}")
        out.set("f", None, reason)
    else:
        sentences = [(f"S{i}", None if faithful is None else float(faithful))
                     for i, faithful in enumerate(judgments.sentence_faithful, 1)]
        _share(out, "f", sentences, "sentence", "summary has no sentences")

    ds_keys = [f"ds_{axis}" for axis in DIRECT_SCORE_AXES] + ["ds"]
    if judgments.direct_score is None:
        reason = "summary is empty" if n_sentences == 0 else (
            f"direct score failed: {judgments.failures.get('direct_score', '?')}")
        out.unavailable(ds_keys, reason)
    else:
        for axis in DIRECT_SCORE_AXES:
            out.set(f"ds_{axis}", float(judgments.direct_score[axis]), "")
        out.set("ds", fmean(judgments.direct_score[axis] for axis in DIRECT_SCORE_AXES), "")  # the paper's "DS"

    out.set("rouge_l", rouge_l_value, "no reference summary")
    ordered = {k: out.values.get(k) for k in METRICS}
    return SummaryScores(doc_id=scaffold.doc_id, system=system, n_sentences=n_sentences, values=ordered,
                         undefined=out.undefined, notes=out.notes)


# ---------------------------------------------------------------- ROUGE-L


_HAN_AND_KANA = "\u3040-\u30ff" + HAN


class RougeTokenizer:
    """rouge-score's tokenizer, extended beyond ASCII: lower-case runs of letters and digits in any
    script, and each Han character or kana as one token (Chinese and Japanese put no spaces between
    words). On ASCII text it gives exactly rouge-score's own tokens (no stemming), so scores match
    the package there, while Chinese, Japanese, Russian or accented text is no longer scored 0."""

    _TOKEN = re.compile(f"[{_HAN_AND_KANA}]|[^\\W_{_HAN_AND_KANA}]+")

    def tokenize(self, text: str) -> list[str]:
        return self._TOKEN.findall(text.lower())


@lru_cache(maxsize=1)
def _rouge_l_scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], tokenizer=RougeTokenizer())


def rouge_l(candidate: str, references: Sequence[str]) -> float | None:
    """ROUGE-L F-measure (Google's rouge-score), the best over references; None without references."""
    refs = [r for r in references if r.strip()]
    if not refs:
        return None
    return _rouge_l_scorer().score_multi(refs, candidate)["rougeL"].fmeasure


# ---------------------------------------------------------------- per-system means


class MetricMean(BaseModel):
    """One system's mean of one metric, two ways. `mean` is over all its summaries where the metric
    is defined; `paired_mean` is over the documents on which every system has a value (the mean the
    report compares, with intervals). They differ when another system lacks a value where this one
    has one; both are printed, named, wherever they differ."""

    mean: float | None
    n: int  # summaries in the mean
    excluded: int  # summaries left out because the value is undefined for them
    excluded_reasons: dict[str, int]  # why, with how many summaries each
    paired_mean: float | None = None  # None in runs scored before paired means were saved
    paired_documents: int = 0  # documents in the paired mean
    paired_left_out: dict[str, int] = {}  # this system's values left out of the paired mean: why, how many
    partial: int = 0  # summaries in the mean whose value is over fewer items, some verdicts having failed (notes)


class SystemScores(BaseModel):
    system: str
    n_summaries: int
    metrics: dict[str, MetricMean]


def _why_missing(row: SummaryScores | None, key: str) -> str:
    return "no summary" if row is None else row.undefined.get(key, "missing")


def system_means(rows: Sequence[SummaryScores]) -> list[SystemScores]:
    """Every metric's mean per system, over all its summaries and paired (see MetricMean), in order
    of first appearance of each system."""
    by_system: dict[str, list[SummaryScores]] = defaultdict(list)
    for row in rows:
        by_system[row.system].append(row)
    documents = list(dict.fromkeys(row.doc_id for row in rows))
    cell = {(row.doc_id, row.system): row for row in rows}  # one summary per (document, system): data.py

    def value(doc: str, system: str, key: str) -> float | None:
        row = cell.get((doc, system))
        return None if row is None else row.values.get(key)

    result = []
    for system, members in by_system.items():
        metrics = {}
        for key in METRICS:
            defined = [r.values[key] for r in members if r.values.get(key) is not None]
            reasons = Counter(_why_missing(r, key) for r in members if r.values.get(key) is None)
            paired: list[float] = []
            left_out: Counter[str] = Counter()
            for doc in documents:
                mine = value(doc, system, key)
                if mine is None:
                    continue  # left out of both means, with its reason above
                lacking = [f"{other} ({_why_missing(cell.get((doc, other)), key)})" for other in by_system
                           if value(doc, other, key) is None]
                if lacking:
                    left_out["no value for " + "; ".join(lacking)] += 1  # the words of analysis/paired.py
                else:
                    paired.append(mine)
            metrics[key] = MetricMean(
                mean=fmean(defined) if defined else None,  # type: ignore[arg-type]
                n=len(defined),
                excluded=len(members) - len(defined),
                excluded_reasons=dict(reasons),
                paired_mean=fmean(paired) if paired else None,
                paired_documents=len(paired),  # every system has a value on each of them
                paired_left_out=dict(left_out),
                partial=sum(r.values.get(key) is not None and key in r.notes for r in members),
            )
        result.append(SystemScores(system=system, n_summaries=len(members), metrics=metrics))
    return result
