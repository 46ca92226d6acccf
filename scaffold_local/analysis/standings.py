"""Who wins, on what, and how far to trust it: systems ranked by one metric, the best value of every
metric (ties as ties), a one-sentence verdict and a one-sentence caveat. `show` and the report's first
screen print these."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..method.metrics import METRICS, SystemScores
from ..method.text import counted
from ..runs.run import Run
from .paired import MIN_DOCUMENTS, SAME, MetricComparison
from .roles import DIAGNOSTICS, GOALS

HEADLINE = "fps"  # the method's headline: how much of what matters most (main facts, weighted) a summary keeps

# What each metric says, for a reader who has not read the method.
MEANINGS = {
    "fps": "Main FC x (1 - Supp FC): keeps the main facts and compresses the supporting ones",
    "qps": "the same for key questions: main ones answered, supporting ones left out",
    "eps": "entity attributes kept correctly, of all the scaffold's attributes (every label)",
    "f": "summary sentences the source supports (faithfulness)",
    "fc": "facts kept, main and supporting (completeness)",
    "main_fc": "main facts kept",
    "supp_fc": "supporting facts kept: a diagnostic, neither higher nor lower is better (FPS counts them against a summary)",
    "fact_focus": "summary sentences that carry a kept main or supporting fact (factual precision)",
    "qc": "key questions answered, main and supporting",
    "ds_faithfulness": "the judge's holistic 1-10 grade, seeing only the source",
    "ds_completeness": "the judge's holistic 1-10 grade",
    "ds_understandability": "the judge's holistic 1-10 grade",
    "ds_hallucination": "the judge's holistic 1-10 grade; 10: nothing invented",
    "ds": ("the direct score: the judge asked outright for a 1-10 grade of the summary on four axes, their mean "
           "(G-Eval's way); the baseline the other metrics exist to beat, since it gives nearly every summary 9-10"),
    "rouge_l": "word overlap with the reference summaries (only where given)",
}


@dataclass(frozen=True)
class Standings:
    metric: str  # the metric the systems are ranked by
    order: list[str]  # best first; tied systems in name order
    best: dict[str, list[str]]  # metric -> the systems at its best mean (several: a tie)
    verdict: str  # one sentence: who leads, by how much, and whether that is assessed
    caveat: str  # one sentence: what the numbers rest on

    def where_best(self) -> str:
        """One sentence: the best system on each goal metric, ties joined by "=" (Supp FC, a diagnostic, and the
        metrics that explain a goal are left to the table)."""
        parts = [f"{METRICS[m]} {' = '.join(self.best[m])}" for m in GOALS if self.best.get(m)]
        return ("Best per goal metric: " + "; ".join(parts) + ".") if parts else ""


def _means(systems: Sequence[SystemScores], metric: str) -> dict[str, float]:
    return {s.system: m for s in systems if (m := s.metrics[metric].mean) is not None}


def _pair(comparison: MetricComparison | None, a: str, b: str) -> str:
    """Whether the leader's lead over the runner-up is assessed, and its outcome."""
    pair = next((p for p in (comparison.pairs if comparison else ()) if {p.a, p.b} == {a, b}), None)
    if pair is None or pair.not_assessed:
        documents = pair.documents if pair else 0
        return (f"not assessed: {counted(documents, 'document')}, and a difference needs at least {MIN_DOCUMENTS} "
                "to be tested")
    if pair.separated:
        return f"a significant difference (Holm-adjusted p {pair.p_holm:.3f} over {pair.documents} documents)"
    return f"not a significant difference (Holm-adjusted p {pair.p_holm:.3f} over {pair.documents} documents)"


def standings(systems: Sequence[SystemScores], metric: str = HEADLINE, *, documents: int,
              main_facts: Mapping[str, int] | None = None, comparison: MetricComparison | None = None,
              judge_check: str | None = None) -> Standings:
    """`main_facts`: each document's main facts (FPS and Main FC rest on them); `comparison`: the
    metric's paired comparison (the report's), which says whether the lead is assessed; `judge_check`:
    the judge check's result in words, or None where it was not run."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {', '.join(METRICS)}")
    best = {}
    for key in (m for m in METRICS if m not in DIAGNOSTICS):
        means = _means(systems, key)
        if means:
            top = max(means.values())
            best[key] = sorted(s for s, m in means.items() if top - m <= SAME)
    ranked = _means(systems, metric)
    order = sorted(ranked, key=lambda s: (-ranked[s], s)) + sorted(s.system for s in systems if s.system not in ranked)
    name = METRICS[metric]
    unscored = [s.system for s in systems if s.system not in ranked]
    if not ranked:
        verdict = f"No system has a {name} value"
    elif unscored:  # crowning a leader among the rest would rank systems that were never compared
        verdict = (f"No leader on {name}: {', '.join(unscored)} {'has' if len(unscored) == 1 else 'have'} no "
                   f"{name} value (nothing of {'it' if len(unscored) == 1 else 'theirs'} was scored; the run's "
                   "failures say why)")
    elif len(best[metric]) > 1:
        verdict = f"{' and '.join(best[metric])} tie on {name} ({ranked[best[metric][0]]:.3f})"
    elif len(order) == 1 or order[1] not in ranked:
        verdict = f"{order[0]} has {name} {ranked[order[0]]:.3f}"
    else:
        leader, second = order[0], order[1]
        verdict = (f"{leader} leads on {name} ({ranked[leader]:.3f}, {second} next at {ranked[second]:.3f}): "
                   + _pair(comparison, leader, second))
    return Standings(metric, order, best, verdict + ".", _caveat(documents, main_facts, judge_check))


def _caveat(documents: int, main_facts: Mapping[str, int] | None, judge_check: str | None) -> str:
    caveat = counted(documents, "document")
    if main_facts is not None:
        fewest = min((n for n in main_facts.values() if n), default=0)
        caveat += (f"; FPS and Main FC rest on {sum(main_facts.values())} main facts, as few as {fewest} in one "
                   f"document, where one verdict moves Main FC by {1 / fewest:.2f}" if fewest
                   else "; the scaffolds hold no main facts, so FPS and Main FC are undefined")
    caveat += f"; judge check: {judge_check}" if judge_check else "; the judge check was not run for this judge"
    return caveat + "."


def main_facts_by_document(run: Run) -> dict[str, int]:
    """How many facts labelled main each document's scaffold holds."""
    out = {}
    for candidate in run.candidates:
        key = candidate.get("scaffold_key")
        if candidate["doc_id"] not in out and key and (scaffold := run.scaffold(key)) is not None:
            out[candidate["doc_id"]] = sum(f.label == "main point" for f in scaffold.items("facts"))
    return out
