"""Metrics as pure functions of a scaffold and one summary's verdicts (the README, "What the metrics mean").

Nothing here knows about engines, prompts or files. Undefined values are None with a reason; they
are left out of means, and every mean reports how many summaries it left out and why. Each system
has two means per metric (over all its summaries, and paired over the documents every system has a
value for); they are printed under those names wherever they differ.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import fmean
from typing import Any

from pydantic import BaseModel, Field

from .scaffold import Scaffold
from .text import HAN
from .views import METRICS, ViewVerdicts, direct_score, sentences
from .views.scoring import Scores

__all__ = ["METRICS", "DIRECT_SCORE_AXES", "SummaryVerdicts", "SummaryScores", "SystemScores", "score_summary",
           "system_means", "rouge_l"]

DIRECT_SCORE_AXES = direct_score.AXES


@dataclass
class SummaryVerdicts:
    """One summary's normalized verdicts. A view missing from `views`, or a None field, was not
    judged or failed; `failures` holds the reason under the view's or judgment's name. Within a
    judged view or sentence check, an item whose own verdict failed is in the view's `failed`, or
    None in `sentence_faithful`."""

    views: dict[str, ViewVerdicts] = field(default_factory=dict)
    sentence_faithful: Sequence[float | None] | None = None  # 1 faithful, 0 not (or P(supported), weighted)
    direct_score: Mapping[str, float] | None = None
    failures: dict[str, str] = field(default_factory=dict)


class SummaryScores(BaseModel):
    doc_id: str
    system: str
    n_sentences: int
    values: dict[str, float | None]
    undefined: dict[str, str]
    # A value computed over fewer items than the scaffold has, because some verdicts failed: which.
    notes: dict[str, str] = Field(default_factory=dict)


def score_summary(
    scaffold: Scaffold,
    verdicts: SummaryVerdicts,
    *,
    system: str,
    n_sentences: int,
    rouge_l_value: float | None = None,
) -> SummaryScores:
    out = Scores(METRICS)
    for spec, items in scaffold.each_view():
        if items is None:
            what = "extraction failed" if scaffold.origin == "extracted" else "view unavailable"
            out.unavailable(spec.metrics, f"{spec.noun} {what}: {scaffold.failures.get(spec.name, '?')}")
        elif spec.name not in verdicts.views:
            out.unavailable(spec.metrics, f"{spec.noun} alignment failed: {verdicts.failures.get(spec.name, '?')}")
        else:
            spec.score(out, spec.judged(items), verdicts.views[spec.name], n_sentences)
    sentences.score(out, verdicts.sentence_faithful, n_sentences, verdicts.failures.get(sentences.KIND, "?"))
    direct_score.score(out, verdicts.direct_score, n_sentences, verdicts.failures.get(direct_score.KIND, "?"))
    out.set("rouge_l", rouge_l_value, "no reference summary")
    ordered = {k: out.values[k] for k in METRICS if k in out.values}
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
    cell = {(row.doc_id, row.system): row for row in rows}  # one summary per (document, system): data/loading.py
    return [SystemScores(system=system, n_summaries=len(members),
                         metrics={key: _metric_mean(key, system, members, list(by_system), documents, cell)
                                  for key in METRICS})
            for system, members in by_system.items()]


def _metric_mean(key: str, system: str, members: list[SummaryScores], systems: list[str], documents: list[str],
                 cell: dict[tuple[str, str], SummaryScores]) -> MetricMean:
    """One metric of one system: its mean over the summaries that define it, and its mean over the documents where
    every system has a value (paired), each with what it left out and why."""
    def value(doc: str, who: str) -> float | None:
        row = cell.get((doc, who))
        return None if row is None else row.values.get(key)

    defined = [r.values[key] for r in members if r.values.get(key) is not None]
    reasons = Counter(_why_missing(r, key) for r in members if r.values.get(key) is None)
    paired: list[float] = []
    left_out: Counter[str] = Counter()
    for doc in documents:
        mine = value(doc, system)
        if mine is None:
            continue  # left out of both means, with its reason above
        lacking = [f"{other} ({_why_missing(cell.get((doc, other)), key)})" for other in systems
                   if value(doc, other) is None]
        if lacking:
            left_out["no value for " + "; ".join(lacking)] += 1  # the words of analysis/paired.py
        else:
            paired.append(mine)
    return MetricMean(
        mean=fmean(defined) if defined else None,  # type: ignore[arg-type]
        n=len(defined),
        excluded=len(members) - len(defined),
        excluded_reasons=dict(reasons),
        paired_mean=fmean(paired) if paired else None,
        paired_documents=len(paired),  # every system has a value on each of them
        paired_left_out=dict(left_out),
        partial=sum(r.values.get(key) is not None and key in r.notes for r in members),
    )
