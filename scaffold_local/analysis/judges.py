"""Comparing judges run over the same input: item-level agreement per view and label (percent
agreement, Cohen's kappa from scikit-learn, Krippendorff's alpha from `krippendorff`), agreement of
their system rankings (Kendall's tau), their cost, and the items they disagree on; and, for one
judge rerun with several seeds, how often its verdicts flip and how far that moves system means."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from ..runs.run import Run
from .items import ItemVerdicts, item_verdicts
from .paired import MetricComparison


@dataclass
class ItemAgreement:
    view: str
    label: str
    items: int  # (summary, item) pairs judged by every judge
    percent: float | None  # mean over judge pairs
    cohen_kappa: float | None  # mean over judge pairs; None where undefined (a judge gives one verdict only)
    krippendorff_alpha: float | None


@dataclass
class Disagreement:
    doc_id: str
    system: str
    view: str
    item_id: str
    label: str
    text: str
    verdicts: dict[str, bool]  # judge -> kept
    justifications: dict[str, str]


@dataclass
class JudgeCost:
    judge: str
    summaries: int
    prompt_tokens_per_summary: float
    output_tokens_per_summary: float
    engine_seconds_per_summary: float | None


@dataclass
class JudgeComparison:
    judges: list[str]
    shared_scaffold: bool
    agreement: list[ItemAgreement] = field(default_factory=list)  # empty without a shared scaffold
    ranking_tau: dict[str, float | None] = field(default_factory=dict)  # metric -> mean pairwise Kendall tau
    costs: list[JudgeCost] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)


def _per_summary(items: list[ItemVerdicts]) -> dict[tuple[str, str, str, str], tuple[ItemVerdicts, bool, str]]:
    """(doc, system, view, item) -> (item, verdict, justification)."""
    return {(i.doc_id, s, i.view, i.item_id): (i, kept, i.justification.get(s, ""))
            for i in items for s, kept in i.kept.items()}


def _kappa(a: list[int], b: list[int]) -> float | None:
    from sklearn.metrics import cohen_kappa_score

    if len(set(a) | set(b)) < 2:
        return None  # both judges gave one and the same verdict: kappa is undefined (0/0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(a, b)
    return None if np.isnan(value) else float(value)


def _alpha(matrix: np.ndarray) -> float | None:
    import krippendorff

    if len(np.unique(matrix)) < 2:
        return None
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))


def item_agreement(names: list[str], runs: list[Run]) -> tuple[list[ItemAgreement], list[Disagreement]]:
    verdicts = [_per_summary(item_verdicts(run)) for run in runs]
    common = sorted(set.intersection(*(set(v) for v in verdicts)))
    groups: dict[tuple[str, str], list[tuple[str, str, str, str]]] = {}
    for key in common:
        item = verdicts[0][key][0]
        groups.setdefault((item.view, item.label), []).append(key)
    agreement = []
    for (view, label), keys in sorted(groups.items()):
        matrix = np.array([[int(v[key][1]) for key in keys] for v in verdicts])  # judges x items
        pairs = list(itertools.combinations(range(len(runs)), 2))
        percent = float(np.mean([(matrix[a] == matrix[b]).mean() for a, b in pairs]))
        kappas = [k for a, b in pairs if (k := _kappa(list(matrix[a]), list(matrix[b]))) is not None]
        agreement.append(ItemAgreement(view, label, len(keys), percent, float(np.mean(kappas)) if kappas else None,
                                       _alpha(matrix)))
    disagreements = []
    for key in common:
        kept = {name: v[key][1] for name, v in zip(names, verdicts)}
        if len(set(kept.values())) > 1:
            item = verdicts[0][key][0]
            disagreements.append(Disagreement(key[0], key[1], item.view, item.item_id, item.label, item.text, kept,
                                              {name: v[key][2] for name, v in zip(names, verdicts)}))
    return agreement, disagreements


def ranking_agreement(comparisons: list[dict[str, MetricComparison]]) -> dict[str, float | None]:
    """Mean pairwise Kendall's tau between the judges' system means, per metric."""
    out: dict[str, float | None] = {}
    for metric in comparisons[0]:
        taus = []
        for a, b in itertools.combinations(comparisons, 2):
            means_a = {m.system: m.mean for m in a[metric].means}
            means_b = {m.system: m.mean for m in b[metric].means}
            systems = sorted(set(means_a) & set(means_b))
            if len(systems) < 2:
                continue
            x, y = [means_a[s] for s in systems], [means_b[s] for s in systems]
            if np.ptp(x) == 0 or np.ptp(y) == 0:
                continue
            taus.append(float(stats.kendalltau(x, y)[0]))
        out[metric] = float(np.mean(taus)) if taus else None
    return out


def cost(name: str, run: Run) -> JudgeCost:
    usage = run.usage
    judged = max(1, len(run.summaries))
    stages = (usage.extraction, usage.judgments)
    return JudgeCost(name, len(run.summaries), sum(s.prompt_tokens for s in stages) / judged,
                     sum(s.completion_tokens for s in stages) / judged,
                     None if usage.engine_seconds is None else usage.engine_seconds / judged)


@dataclass
class SelfConsistency:
    reruns: int
    flip_rate: dict[str, float]  # view -> share of (summary, item) verdicts not unanimous across reruns
    mean_spread: dict[str, dict[str, float]]  # metric -> system -> max - min of its mean across reruns
    within_noise: dict[str, list[tuple[str, str]]]  # metric -> system pairs closer than the judge's own spread


def self_consistency(runs: list[Run], comparisons: list[dict[str, MetricComparison]]) -> SelfConsistency:
    verdicts = [_per_summary(item_verdicts(run)) for run in runs]
    common = set.intersection(*(set(v) for v in verdicts))
    flips: dict[str, list[bool]] = {}
    for key in common:
        flips.setdefault(key[2], []).append(len({v[key][1] for v in verdicts}) > 1)
    spread: dict[str, dict[str, float]] = {}
    within: dict[str, list[tuple[str, str]]] = {}
    for metric in comparisons[0]:
        per_system: dict[str, list[float]] = {}
        for comparison in comparisons:
            for m in comparison[metric].means:
                per_system.setdefault(m.system, []).append(m.mean)
        spread[metric] = {s: float(np.ptp(v)) for s, v in per_system.items() if len(v) == len(runs)}
        first = {m.system: m.mean for m in comparisons[0][metric].means}
        within[metric] = [(a, b) for a, b in itertools.combinations(sorted(spread[metric]), 2)
                          if abs(first.get(a, 0) - first.get(b, 0)) <= max(spread[metric][a], spread[metric][b])
                          and max(spread[metric][a], spread[metric][b]) > 0]
    return SelfConsistency(len(runs), {view: float(np.mean(f)) for view, f in flips.items()}, spread, within)
