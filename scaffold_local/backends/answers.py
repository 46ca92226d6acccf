"""A reading's answer space, and which tokens count for which answer: shared by the judge, which reads P from a
reading's alternatives, and the engines that have the whole next-token distribution, which add every token of
the vocabulary that spells or begins an answer to the alternatives they return (so P is exact, not limited to
the likeliest few)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

# An answer token less likely than this is left out of a reading's alternatives: together the hundreds of such tokens
# (whitespace of every length, which decides nothing) hold under a millionth of the mass.
NEGLIGIBLE_LOGPROB = -20.0
YES_NO = ("yes", "no")  # a plain answer, not JSON: the first word of the judge's reply, in any case


class AnswerSpace(BaseModel):
    """The values a reading's answer may take (JSON text of each; strings without their quotes), and text already
    forced after the value's start (`after`: the `1` of a grade that may be 10)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    answers: tuple[str, ...]
    after: str = ""


def _ends(follows: str, answer: str) -> bool:
    """What `follows` an answer written in full ends its value: a string's closing quote; after a number or
    a boolean, whitespace and then `,`, `}`, `]` or nothing; after a plain yes / no, anything but a letter."""
    if answer in YES_NO:  # a plain word ends where a letter does not follow ("Yes." "no,")
        return not follows[:1].isalpha()
    if not (answer.isdigit() or answer in ("true", "false")):
        return follows.startswith('"')
    rest = follows.lstrip()
    return not rest or rest[0] in ",}]"


def matching(token: str, answers: Sequence[str], after: str = "") -> list[str]:
    """The answers a token is consistent with: it begins what is left of the answer, or writes all of it
    and then something that ends the value. At the first position a token's leading whitespace is JSON's;
    a plain yes / no counts in any case ("Yes")."""
    piece = token if after else token.lstrip()
    if tuple(answers) == YES_NO:
        piece = piece.lower()
    if not piece:
        return list(answers)
    out = []
    for answer in answers:
        if not answer.startswith(after):
            continue
        rest = answer[len(after):]
        if (rest and rest.startswith(piece)) or (piece.startswith(rest) and _ends(piece[len(rest):], answer)):
            out.append(answer)
    return out


def answer_tokens(vocabulary: Sequence[str], space: AnswerSpace) -> list[int]:
    """The ids of every token whose text counts for one or more answers (`matching`), whitespace that decides
    nothing yet included; tokens without text (control tokens) are no answer."""
    yes_no = tuple(space.answers) == YES_NO
    rests = [a[len(space.after):] for a in space.answers if a.startswith(space.after)]
    # a token's first character must begin an answer, unless a value may already have ended (after its last digit)
    starts = None if any(not r for r in rests) else {r[0].lower() if yes_no else r[0] for r in rests}
    out = []
    for token, text in enumerate(vocabulary):
        if not text:
            continue
        piece = text if space.after else text.lstrip()
        if starts is not None and piece and (piece[0].lower() if yes_no else piece[0]) not in starts:
            continue
        if matching(text, space.answers, space.after):
            out.append(token)
    return out


class AnswerVocabulary:
    """An engine's vocabulary as the text its alternatives carry, and each answer space's tokens, found once."""

    def __init__(self, texts: Sequence[str]):
        self.texts = texts
        self._found: dict[AnswerSpace, list[int]] = {}

    def ids(self, space: AnswerSpace) -> list[int]:
        if space not in self._found:
            self._found[space] = answer_tokens(self.texts, space)
        return self._found[space]


def with_answers(chosen: list[int], space: AnswerSpace | None, vocabulary: Callable[[], AnswerVocabulary],
                 logprobs: Any) -> list[int]:
    """A reading's alternatives for an engine with the whole distribution (`logprobs`, indexed by token id): the
    likeliest tokens (`chosen`), and where the request names its answers every other token of them that is not
    negligible (so P is exact)."""
    if space is None:
        return chosen
    top = set(chosen)
    return chosen + [t for t in vocabulary().ids(space) if t not in top and float(logprobs[t]) >= NEGLIGIBLE_LOGPROB]
