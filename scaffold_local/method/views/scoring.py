"""The pieces every view's metrics are made of (the README, "What the metrics mean"): shares and preference scores over the
items with a valid verdict, each undefined value with its reason, each value over fewer items with
a note.

A verdict that failed validation (or whose request failed) counts neither as kept nor as missed: a
share is taken over the items with a valid verdict and notes how many that is, and is undefined
only where no item it counts has one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .judged import JudgedItem, ViewVerdicts

# The labels that enter fact and question counts. An "other" fact or question (metadata, dates,
# boilerplate) never affects any score; the one exception is EPS, whose denominator is every scaffold
# attribute whatever its label, as the paper states (G.6).
SCORED_LABELS = ("main point", "supporting detail")

Verdict = tuple[str, float | None]  # (item id, 1 or 0 or P(kept)); None: no valid verdict


def ratio(numerator: float, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def preference_score(main_hit: float, main_total: int, supp_hit: float, supp_total: int) -> float | None:
    """FPS / QPS: main recall x (1 - supporting recall). Undefined without main items; with no
    supporting items the penalty factor is 1."""
    if main_total == 0:
        return None
    penalty = 1.0 - supp_hit / supp_total if supp_total else 1.0
    return main_hit / main_total * penalty


class Scores:
    """Collects values, the reasons for undefined ones, and notes on values over fewer items.
    `names`: each metric's display name, for the notes."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names
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

    def share(self, key: str, items: Sequence[Verdict], noun: str, empty_reason: str) -> None:
        """The share of kept items among those with a valid verdict (`noun`: what an item is)."""
        judged = [kept for _, kept in items if kept is not None]
        failed = failed_ids(items)
        if failed and not judged:
            self.set(key, None, f"no {noun} has a valid verdict ({', '.join(failed)})")
            return
        self.set(key, ratio(sum(judged), len(judged)), empty_reason)
        if failed:
            self.notes[key] = (f"{self.names[key]} over {len(judged)} of {len(items)} {noun}s: "
                               f"no valid verdict for {', '.join(failed)}")

    def preference(self, key: str, main: Sequence[Verdict], supp: Sequence[Verdict], noun: str,
                   no_main_reason: str) -> None:
        """FPS / QPS over the main and supporting items with a valid verdict. Undefined where no main
        item has one, or no supporting item has one while the scaffold has some (the penalty is unknown)."""
        judged_main = [kept for _, kept in main if kept is not None]
        judged_supp = [kept for _, kept in supp if kept is not None]
        failed = failed_ids([*main, *supp])
        if main and not judged_main:
            self.set(key, None, f"no main {noun} has a valid verdict ({', '.join(failed_ids(main))})")
        elif supp and not judged_supp:
            self.set(key, None, f"no supporting {noun} has a valid verdict ({', '.join(failed_ids(supp))})")
        else:
            self.set(key, preference_score(sum(judged_main), len(judged_main), sum(judged_supp), len(judged_supp)),
                     no_main_reason)
            if failed:
                self.notes[key] = (f"{self.names[key]} over {len(judged_main)} of {len(main)} main and "
                                   f"{len(judged_supp)} of {len(supp)} supporting {noun}s: no valid verdict for "
                                   f"{', '.join(failed)}")


def verdicts_of(items: Iterable[JudgedItem], verdicts: ViewVerdicts) -> list[Verdict]:
    return [(i.id, None if verdicts.failure(i.id) else float(verdicts.kept.get(i.id, False))) for i in items]


def failed_ids(items: Sequence[Verdict]) -> list[str]:
    return [item for item, kept in items if kept is None]


def by_label(items: Sequence[JudgedItem], verdicts: ViewVerdicts) -> tuple[list[Verdict], list[Verdict]]:
    """(main, supporting) verdicts; "other" items are not counted."""
    return (verdicts_of((i for i in items if i.label == "main point"), verdicts),
            verdicts_of((i for i in items if i.label == "supporting detail"), verdicts))
