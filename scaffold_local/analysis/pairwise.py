"""Pairwise comparison grounded in the scaffold, at no judge cost: for two summaries of one document,
the items one keeps and the other misses (per view and label), a preference with that evidence, and
the probability that one keeps more main facts than the other, from the item probabilities.

A document's preference goes to the summary that keeps more main facts; where they keep as many, to
the one that keeps more main items of the other views (key questions, then entity attributes); else
it is a tie (0.5). Supporting items are evidence, never the decider: FPS counts them against a summary."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .items import ItemVerdicts

MAIN = "main point"
DECIDING_VIEWS = ("facts", "questions", "entities")  # in the order they break a tie
# A preference by probabilities needs P(A keeps more main facts) and P(B keeps more) this far apart (where equal
# counts are impossible: P(A more) outside [0.4, 0.6]); a smaller gap is reading noise, and a tie.
PREFERENCE_MARGIN = 0.2


@dataclass(frozen=True)
class PairEvidence:
    """Two systems' summaries of one document, item by item."""

    doc_id: str
    a: str
    b: str
    a_only: dict[str, list[str]] = field(default_factory=dict)  # "<view> <label>" -> items A keeps, B misses
    b_only: dict[str, list[str]] = field(default_factory=dict)
    main_kept: dict[str, tuple[int, int]] = field(default_factory=dict)  # view -> (A's count, B's count)
    p_a_more_main_facts: float | None = None  # P(A keeps more main facts than B); None without main facts
    p_b_more_main_facts: float | None = None

    @property
    def preference(self) -> float:
        """1: A preferred, 0: B preferred, 0.5: a tie (see the module's rule)."""
        for view in DECIDING_VIEWS:
            a, b = self.main_kept.get(view, (0, 0))
            if a != b:
                return 1.0 if a > b else 0.0
        return 0.5

    @property
    def probable_preference(self) -> float | None:
        """1 where A is likelier to keep more main facts than B than the reverse by more than PREFERENCE_MARGIN,
        0 the other way, else 0.5 (None without main facts): the preference by the item probabilities, not the
        counted verdicts."""
        a, b = self.p_a_more_main_facts, self.p_b_more_main_facts
        if a is None or b is None:
            return None
        return 1.0 if a - b > PREFERENCE_MARGIN else 0.0 if b - a > PREFERENCE_MARGIN else 0.5

    @property
    def deciding_view(self) -> str | None:
        return next((v for v in DECIDING_VIEWS if len(set(self.main_kept.get(v, (0, 0)))) == 2), None)


def p_more(p_a: Sequence[float], p_b: Sequence[float]) -> float:
    """P(sum of Bernoulli(p_a) > sum of Bernoulli(p_b)), every item independent: the exact distribution
    of each count by convolution."""
    def count_distribution(ps: Sequence[float]) -> np.ndarray:
        dist = np.array([1.0])
        for p in ps:
            dist = np.convolve(dist, [1 - p, p])
        return dist
    a, b = count_distribution(p_a), count_distribution(p_b)
    below = np.concatenate([[0.0], np.cumsum(b)])[: len(a)]  # P(B < k) for k = 0..len(a)-1
    below = np.pad(below, (0, max(0, len(a) - len(below))), constant_values=1.0)
    return float(np.clip(np.dot(a, below), 0.0, 1.0))


def _probability(item: ItemVerdicts, system: str) -> float:
    """P(kept) where the judge recorded one, else the counted verdict as 0 or 1."""
    p = item.p.get(system)
    return float(p) if p is not None else float(item.kept[system])


def pair_evidence(items: Sequence[ItemVerdicts], doc_id: str, a: str, b: str) -> PairEvidence:
    """The items of one document that both systems have a verdict on, compared."""
    both = [i for i in items if i.doc_id == doc_id and a in i.kept and b in i.kept]
    a_only: dict[str, list[str]] = {}
    b_only: dict[str, list[str]] = {}
    for item in both:
        if item.kept[a] != item.kept[b]:
            (a_only if item.kept[a] else b_only).setdefault(f"{item.view} {item.label}", []).append(item.item_id)
    main = [i for i in both if i.label == MAIN]
    main_kept = {view: (sum(i.kept[a] for i in main if i.view == view), sum(i.kept[b] for i in main if i.view == view))
                 for view in DECIDING_VIEWS if any(i.view == view for i in main)}
    main_facts = [i for i in main if i.view == "facts"]
    p_a, p_b = [_probability(i, a) for i in main_facts], [_probability(i, b) for i in main_facts]
    more = (p_more(p_a, p_b), p_more(p_b, p_a)) if main_facts else (None, None)
    return PairEvidence(doc_id, a, b, a_only, b_only, main_kept, *more)


def grounded_preferences(items: Sequence[ItemVerdicts], systems: Sequence[str]) -> list[PairEvidence]:
    """Every pair of systems on every document where both have verdicts, A before B in `systems`' order."""
    documents = list(dict.fromkeys(i.doc_id for i in items))
    out = []
    for doc_id in documents:
        present = [s for s in systems if any(i.doc_id == doc_id and s in i.kept for i in items)]
        out += [pair_evidence(items, doc_id, a, b) for a, b in itertools.combinations(present, 2)]
    return out
