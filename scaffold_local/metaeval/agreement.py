"""Agreement of judge decisions with human labels, with intervals that respect how the data is
grouped: the bootstrap resamples documents (every item of a resampled document comes along), so
the many items of one document do not pass for independent evidence.

The human ceiling and the judge stand on the same footing (`HumanReferences`): each annotator is
held out in turn against the majority of the other annotators, a tie among the others leaves no
reference (dropped and counted, never read as 0), and the judge and the baselines are scored
against exactly those references, pooled over the held-out annotators: every (annotator, item)
reference counts once (REALSumm has 3 or 4 crowd workers per summary, so a position in the list is
no fixed person to average over). The majority of all annotators (the dataset's own label; a 2-2
tie is 0 there) is kept as a second reference, labelled as such.

Correlations with human scores: `correlation.py`."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

N_RESAMPLES = 1000


@dataclass
class Estimate:
    value: float | None
    low: float | None = None  # 95% interval, percentile bootstrap over documents
    high: float | None = None

    @classmethod
    def of(cls, row: dict[str, Any] | None, name: str = "value") -> Estimate:
        """A table row's estimate: `name` and its interval (`low95`, `high95`, or `<name>_low95`, ...)."""
        if row is None:
            return cls(None)
        prefix = "" if name == "value" else f"{name}_"
        return cls(row[name], row.get(f"{prefix}low95"), row.get(f"{prefix}high95"))

    def __str__(self) -> str:
        if self.value is None:
            return "undefined"
        interval = f" [{self.low:.3f}, {self.high:.3f}]" if self.low is not None and self.high is not None else ""
        return f"{self.value:.3f}{interval}"


def cell(row: dict[str, Any] | None) -> str:
    """A table row's estimate as a Markdown cell: "-" where there is none."""
    estimate = Estimate.of(row)
    return "-" if estimate.value is None else str(estimate)


def _safe(metric: Callable[..., float], *args: object, **kwargs: object) -> float | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = float(metric(*args, **kwargs))
        except ValueError:
            return None
    return None if np.isnan(value) else value


def _ratio(numerator: float, denominator: float) -> float | None:
    return float(numerator / denominator) if denominator else None


def _confusion(t: np.ndarray, p: np.ndarray) -> tuple[int, int, int, int]:
    """(tp, fp, fn, tn) of "present" (label 1)."""
    tp = int(np.count_nonzero(t & p))
    fp = int(np.count_nonzero(p)) - tp
    fn = int(np.count_nonzero(t)) - tp
    return tp, fp, fn, len(t) - tp - fp - fn


def _kappa(tp: int, fp: int, fn: int, tn: int) -> float | None:
    """Cohen's kappa as sklearn computes it: 1 - observed / chance-expected disagreements."""
    n = tp + fp + fn + tn
    if not n:
        return None
    expected = (tn + fn) * (fn + tp) / n + (tp + fp) * (tn + fp) / n  # chance counts of (0, 1) and (1, 0)
    return 1 - (fp + fn) / expected if expected else None


# The bootstrap evaluates these a thousand times per estimate, so they are counted from one confusion matrix:
# sklearn's scorers give the same numbers (tested), but their input checks made `meta-eval all` 17x slower.
_BINARY_METRICS: dict[str, Callable[[int, int, int, int], float | None]] = {
    "balanced_accuracy": lambda tp, fp, fn, tn: (tp / (tp + fn) + tn / (tn + fp)) / 2 if tp + fn and tn + fp else None,
    "cohen_kappa": _kappa,
    "precision_present": lambda tp, fp, fn, tn: _ratio(tp, tp + fp),
    "recall_present": lambda tp, fp, fn, tn: _ratio(tp, tp + fn),
    "accuracy": lambda tp, fp, fn, tn: _ratio(tp + tn, tp + fp + fn + tn),
}


def grouped_bootstrap(statistic: Callable[[np.ndarray], float | None], groups: Sequence[str], seed: int = 0,
                      n_resamples: int = N_RESAMPLES) -> tuple[float | None, float | None, float | None]:
    """The statistic on all items (given as an index array), and its percentile 95% interval when
    whole groups (documents) are resampled."""
    labels = np.asarray(groups)
    members = {g: np.flatnonzero(labels == g) for g in dict.fromkeys(groups)}
    everything = np.arange(len(labels))
    value = statistic(everything)
    if value is None or len(members) < 2:
        return value, None, None
    rng = np.random.default_rng(seed)
    names = list(members)
    draws = []
    for _ in range(n_resamples):
        picked = rng.integers(0, len(names), size=len(names))
        result = statistic(np.concatenate([members[names[i]] for i in picked]))
        if result is not None:
            draws.append(result)
    if len(draws) < n_resamples // 2:
        return value, None, None
    low, high = np.percentile(draws, [2.5, 97.5])
    return value, float(low), float(high)


def binary_agreement(truth: Sequence[int], predicted: Sequence[int], groups: Sequence[str],
                     seed: int = 0) -> dict[str, Estimate]:
    """Balanced accuracy, Cohen's kappa, precision and recall of "present" (label 1), accuracy."""
    t, p = np.asarray(truth, dtype=bool), np.asarray(predicted, dtype=bool)
    if not set(np.unique(truth)) | set(np.unique(predicted)) <= {0, 1}:
        raise ValueError("binary agreement needs labels 0 and 1")
    out = {}
    for name, metric in _BINARY_METRICS.items():
        def statistic(idx: np.ndarray, metric: Callable[[int, int, int, int], float | None] = metric) -> float | None:
            return metric(*_confusion(t[idx], p[idx]))

        out[name] = Estimate(*grouped_bootstrap(statistic, groups, seed))
    return out


OTHERS = "majority of the other annotators"  # the human ceiling's references, ties among the others dropped
ALL = "majority of all annotators"  # the dataset's own label per item


def majority_of_others(per_annotator: Sequence[Sequence[int]]) -> tuple[list[tuple[int, int, int]], int]:
    """(item, one annotator's label, the majority of the other annotators' labels) for every annotator
    and item where the others do not tie, and how many tied references were dropped: a tie has no
    majority (read as 0, the reference of 3 annotators' ceiling was an AND of the other two)."""
    labels = np.asarray(per_annotator)
    pairs: list[tuple[int, int, int]] = []
    ties = 0
    for a in range(labels.shape[0]):
        others = np.delete(labels, a, axis=0)
        present = 2 * others.sum(axis=0)
        for item in range(labels.shape[1]):
            if present[item] == others.shape[0]:
                ties += 1
            else:
                pairs.append((item, int(labels[a, item]), int(present[item] > others.shape[0])))
    return pairs, ties


@dataclass
class HumanReferences:
    """Every item's human labels, so that the judge, a baseline and the human ceiling are scored
    against the same references (see the module's docstring)."""

    majority: list[int] = field(default_factory=list)  # per item: the majority of all annotators
    groups: list[str] = field(default_factory=list)  # per item: its document
    item: list[int] = field(default_factory=list)  # per reference: the item it is of
    held_out: list[int] = field(default_factory=list)  # per reference: the held-out annotator's label
    reference: list[int] = field(default_factory=list)  # per reference: the majority of the others
    ties: int = 0  # references dropped because the others tied
    one_annotator: int = 0  # items labelled by one annotator: no reference of the ceiling's kind

    def add(self, per_annotator: Sequence[Sequence[int]], majority: Sequence[int], group: str) -> None:
        """One summary's items: each annotator's labels, and the dataset's majority label per item (one
        annotator: their labels are the majority, and no annotator can be held out against the others)."""
        if len(per_annotator) < 2:
            self.majority += majority
            self.groups += [group] * len(majority)
            self.one_annotator += len(majority)
            return
        pairs, ties = majority_of_others(per_annotator)
        offset = len(self.majority)
        self.majority += majority
        self.groups += [group] * len(majority)
        self.item += [offset + i for i, _, _ in pairs]
        self.held_out += [a for _, a, _ in pairs]
        self.reference += [r for _, _, r in pairs]
        self.ties += ties

    def merge(self, other: HumanReferences) -> None:
        """Another set's items after these."""
        offset = len(self.majority)
        self.majority += other.majority
        self.groups += other.groups
        self.item += [offset + i for i in other.item]
        self.held_out += other.held_out
        self.reference += other.reference
        self.ties += other.ties
        self.one_annotator += other.one_annotator

    def ceiling(self, seed: int = 0) -> dict[str, Estimate]:
        """Each annotator against the majority of the others."""
        return binary_agreement(self.reference, self.held_out, self._reference_groups(), seed)

    def against_others(self, predicted: Sequence[int], seed: int = 0) -> dict[str, Estimate]:
        """Per-item decisions against the ceiling's references: each item's decision once per reference of it."""
        return binary_agreement(self.reference, np.asarray(predicted)[self.item].tolist(), self._reference_groups(), seed)

    def against_all(self, predicted: Sequence[int], seed: int = 0) -> dict[str, Estimate]:
        """Per-item decisions against the majority of all annotators."""
        return binary_agreement(self.majority, predicted, self.groups, seed)

    def _reference_groups(self) -> list[str]:
        return [self.groups[i] for i in self.item]


@dataclass
class Calibration:
    auroc: Estimate  # how well P(kept) ranks present above absent items, with its interval over documents
    ece: float | None  # expected calibration error over `bins` equal-width bins
    reliability: list[dict[str, Any]]  # per bin: range, items, mean P(kept), share present
    threshold: float | None  # maximises balanced accuracy on the calibration half of the documents
    held_out_balanced_accuracy: float | None  # of P(kept) >= threshold, on the other half
    # of P(kept) >= 0.5 (the verdicts of a version without thresholds), on the same half
    held_out_balanced_accuracy_at_half: float | None
    threshold_all: float | None = None  # maximises balanced accuracy on every document: for a config's
    # threshold when these documents are the calibration set (a dev split), never for a score here


def ranking(truth: Sequence[int], probability: Sequence[float], groups: Sequence[str], seed: int = 0) -> Estimate:
    """AUROC: how well the probabilities rank present above absent items, with its interval over documents."""
    from sklearn.metrics import roc_auc_score

    t, p = np.asarray(truth), np.asarray(probability, dtype=float)

    def auroc(idx: np.ndarray) -> float | None:
        return _safe(roc_auc_score, t[idx], p[idx]) if len(set(t[idx].tolist())) > 1 else None

    return Estimate(*grouped_bootstrap(auroc, groups, seed))


def calibration(truth: Sequence[int], probability: Sequence[float], groups: Sequence[str], seed: int = 0,
                bins: int = 10) -> Calibration:
    from sklearn.metrics import balanced_accuracy_score

    t, p, g = np.asarray(truth), np.asarray(probability, dtype=float), np.asarray(groups)
    auroc = ranking(truth, probability, groups, seed)
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    reliability, ece = [], 0.0
    for b in range(bins):
        members = which == b
        if members.any():
            mean_p, rate = float(p[members].mean()), float(t[members].mean())
            ece += members.mean() * abs(mean_p - rate)
            reliability.append({"bin": f"{edges[b]:.1f}-{edges[b + 1]:.1f}", "items": int(members.sum()),
                                "mean_p_kept": mean_p, "share_present": rate})
    threshold_all = best_threshold(t, p) if len(set(t.tolist())) > 1 else None
    documents = list(dict.fromkeys(groups))
    np.random.default_rng(seed).shuffle(documents)
    calibrate = np.isin(g, documents[: len(documents) // 2])
    threshold = held = held_half = None
    if calibrate.any() and (~calibrate).any() and len(set(t[calibrate].tolist())) > 1:
        threshold = best_threshold(t[calibrate], p[calibrate])
        if len(set(t[~calibrate].tolist())) > 1:
            held = _safe(balanced_accuracy_score, t[~calibrate], p[~calibrate] >= threshold)
            held_half = _safe(balanced_accuracy_score, t[~calibrate], p[~calibrate] >= 0.5)
    return Calibration(auroc, float(ece) if reliability else None, reliability, threshold, held, held_half, threshold_all)


def best_threshold(t: np.ndarray, p: np.ndarray) -> float:
    """The P(kept) at or above which "kept" gives the best balanced accuracy (of equally good ones, the
    middle one), placed halfway between the two observed probabilities it separates, not on one of them."""
    from sklearn.metrics import balanced_accuracy_score

    candidates = np.unique(p)
    scores = np.array([balanced_accuracy_score(t, p >= c) for c in candidates])
    ties = np.flatnonzero(scores == scores.max())
    best = int(ties[len(ties) // 2])
    below = candidates[best - 1] if best > 0 else candidates[best]
    return float((below + candidates[best]) / 2)
