"""Verdicts read from the judge's next-token distribution instead of written (the default method, and earlier
versions that read some of their verdicts).

A reading's prompt ends where the judge's JSON answer would give a value (`{"inferred":`); the engine
returns the most likely next tokens there and nothing is generated. The answer space is the schema's:
the values the verdict's field may take (`true` / `false`, an enum's strings, the integers of a
grade). Each alternative counts for the one value it begins (` true`, `t`) or spells out before the
value ends (`true,`); a token that begins several values (`1` of a grade that may be 1 or 10) is
*undecided*: it decides at the next position, which a second reading continues (`Continuation`).
P(value) is the mass of each value over the mass of all values: the grammar of a written answer would
allow only them, so the model's mass elsewhere is renormalised away, as a constrained sampler does.

Where a prompt ends matters: tokenizers write a word with the space before it (` true`) but a
number or a string after it (`: ` then `8`; `: "` then `entity`), so the prompt ends before the
space for a boolean and after it (and the quote) for numbers and strings (`value_prefix`). A prompt
that ends against the grain leaves the model at a position its training rarely saw.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..backends.answers import AnswerSpace, matching

# How far the undecided mass may move a reading's P (the width of its bounds) for it to be offered.
MAX_UNDECIDED = 0.05
# Below this mass on the answers, the judge's next token is not an answer at all (a server that started a
# new message instead of continuing the answer, a prompt the model does not follow): no verdict.
MIN_ANSWER_MASS = 1e-3
# The same floor for a version that reads exactly (`exact_readings`): below it, the judge was mostly about to
# write something else, and its verdict is a failed item, not a verdict.
EXACT_ANSWER_MASS_FLOOR = 0.5
READING_ALTERNATIVES = 20  # the most vLLM and OpenAI-compatible servers return


def value_prefix(key: str, kind: str) -> str:
    """The JSON answer up to where the value of `key` begins (see the module's docstring on spaces); nothing
    for a plain yes / no, which is the whole answer."""
    return {"boolean": f'"{key}":', "integer": f'"{key}": ', "string": f'"{key}": "', "word": ""}[kind]


@dataclass(frozen=True)
class Reading:
    """What a reading asks: the value of one field of one item's verdict, among `answers` (JSON text of
    each value; strings without their quotes). `after` is text already forced after the value's
    start (a continuation: the `1` of a grade that may be 10), and `answers` are then what may follow it."""

    item: str  # the item's id ("F3", "S2", "E1.A2") or the direct score's axis
    key: str  # the verdict's field ("inferred", "sentence_ids", "category", "faithfulness")
    answers: tuple[str, ...]
    after: str = ""
    continued: str | None = None  # an undecided token that another reading continues (`after` = it)

    @property
    def space(self) -> AnswerSpace:
        return AnswerSpace(answers=self.answers, after=self.after)

    @property
    def name(self) -> str:
        """Where its distribution goes in the verdict: the key, or for a continuation "<key> after <token>"."""
        return f"{self.key} after {self.after}" if self.after else self.key


@dataclass(frozen=True)
class Distribution:
    """P of each answer (summing to 1), and how much of the reading could not be placed."""

    p: Mapping[str, float]
    undecided: Mapping[str, float] = field(default_factory=dict)  # token -> the share of the mass it carries
    answer_mass: float = 1.0  # the engine's probability of all answers together
    bounded: tuple[str, ...] = ()  # answers missing from a top-k engine's alternatives, charged its lowest listed P

    @property
    def width(self) -> float:
        return sum(self.undecided.values())

    def best(self) -> str:
        return max(self.p, key=lambda a: self.p[a])


def distribution(top: Mapping[str, float], answers: Sequence[str], after: str = "", *, exact: bool = False,
                 complete: bool = False) -> Distribution | None:
    """P of each answer from a reading's alternatives (token -> log-probability); None where the answers
    hold no mass at all. `exact` (a version with `exact_readings`): tokens without text are no answer, and
    where the alternatives are not `complete` (an engine that returns its likeliest tokens only, not every
    token of an answer) an answer missing from them is charged the lowest listed probability, an upper bound
    on its mass (`bounded` names it), instead of none."""
    mass = dict.fromkeys(answers, 0.0)
    undecided: dict[str, float] = {}
    for token, logprob in top.items():
        found = matching(token, answers, after) if token or not exact else []
        p = math.exp(logprob)
        if len(found) == 1:
            mass[found[0]] += p
        elif len(found) > 1:
            undecided[token] = undecided.get(token, 0.0) + p
    decided = sum(mass.values())
    total = decided + sum(undecided.values())
    if exact:
        if total == 0:
            return None
        bounded = () if complete else tuple(a for a, m in mass.items() if m == 0)
        lowest = math.exp(min(top.values())) if bounded else 0.0
        charged = {a: (lowest if a in bounded else m) for a, m in mass.items()}
        share = sum(charged.values())
        return Distribution(p={a: (m / share if share else 1 / len(answers)) for a, m in charged.items()},
                            undecided={t: p / total for t, p in undecided.items()}, answer_mass=total, bounded=bounded)
    if total < MIN_ANSWER_MASS:
        return None
    if decided == 0:
        return Distribution(p={a: 1 / len(answers) for a in answers}, undecided={t: p / total for t, p in undecided.items()},
                            answer_mass=total)
    return Distribution(p={a: m / decided for a, m in mass.items()},
                        undecided={t: p / total for t, p in undecided.items()}, answer_mass=total)


def continued(first: Distribution, token: str, then: Distribution) -> Distribution:
    """A first reading whose undecided `token` a second reading continued (`then`: P of the answers the
    token begins): the token's mass shared out as `then` says."""
    share = first.undecided.get(token, 0.0)
    decided = 1.0 - first.width
    p = {a: q * decided for a, q in first.p.items()}
    for answer, q in then.p.items():
        p[answer] = p.get(answer, 0.0) + share * q
    total = sum(p.values())
    rest = {t: w for t, w in first.undecided.items() if t != token}
    return Distribution(p={a: v / total for a, v in p.items()}, undecided=rest, answer_mass=first.answer_mass)


def expected(d: Distribution) -> float:
    """The probability-weighted mean of integer answers (a grade, as G-Eval reads it)."""
    return sum(int(a) * p for a, p in d.p.items())


def stored(d: Distribution) -> dict[str, Any]:
    """A distribution as a record keeps it."""
    return {"p": dict(d.p), **({"undecided": dict(d.undecided)} if d.undecided else {})}


def resolved(verdict: Mapping[str, Any], key: str) -> Distribution:
    """The distribution of a verdict's `key`, its undecided tokens continued where a continuation reading
    was made ("<key> after <token>")."""
    first = Distribution(p=verdict[key]["p"], undecided=verdict[key].get("undecided", {}))
    for token in list(first.undecided):
        then = verdict.get(f"{key} after {token.lstrip()}")
        if then is not None:
            first = continued(first, token, Distribution(p=then["p"]))
    return first
