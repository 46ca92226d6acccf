"""P(kept): the probability a judge gives a fact's or question's verdict, read from the engine's
token alternatives at the point where the output decides it.

The decision is one character: the first of the cited-sentence list where the schema ties verdict
and evidence and the evidence comes first (a sentence id: kept; `]`: not kept), else the first of
the verdict word (`true` / `false`). Tokenizers do not cut there. SmolLM2 and Qwen2.5 write ` []` as
one token but ` [` then an id, so at ` [` the alternative ` []` has already decided "not kept";
Qwen2.5 writes `":[` then an id but `":` then `[]`, so the choice between `":[` and `":` is itself
the decision. The reading therefore starts at the token that writes the key's closing quote and
follows the output's own tokens to the one that holds the deciding character. At each, an
alternative that writes the output's text up to the deciding character and then a deciding one
counts for its side; the token taken carries on to the next position; an alternative that stops at
or short of the deciding character (`":` where `":[` was taken) would decide on a token that was
never generated: it is not counted, and bounds how far P(kept) could move. Where that is more than
MAX_UNSEEN, no P(kept) is offered for the item.

Engines report alternatives before the grammar's mask (transformers, llama.cpp: the model's own
distribution) or after it (vLLM and servers built on it: the allowed tokens renormalised, the others
at -inf). The reading is the same either way: every alternative counted writes the output's own text
up to the deciding character (which the grammar allowed, so every prefix of it is allowed too), both
decisions are allowed where the output decides, and P(kept) is a ratio of probabilities at each
position, so the mask's renormalisation cancels. What can still differ: a merged deciding token
whose tail the schema forbids (`],` where only `]}` may follow) counts before the mask only, and a
side missing from the alternatives counts at the least likely alternative's probability, whose
value depends on which 20 tokens the engine listed.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Callable, Sequence

from ..backends.protocol import TokenAlternatives

# How far the paths not followed may move P(kept) (the width of its bounds) for it to be offered.
MAX_UNSEEN = 0.05

_ITEM = re.compile(r'"([A-Z]\d+)"\s*:\s*\{')
# Where a decision falls: group 1 is the key's closing quote (where the tokens that may decide begin),
# the match ends at the deciding character, after any whitespace the output wrote.
_EVIDENCE = re.compile(r'"(?:sentence_ids|ids)(")\s*:\s*\[\s*')

CONFIDENCE_ALTERNATIVES = 20  # top tokens per position (the most vLLM and OpenAI-compatible servers give)


def _evidence_side(rest: str) -> bool | None:
    """After `[`: a sentence id (they start at 1) is kept, `]` is not."""
    return True if rest[0] in "123456789" else False if rest[0] == "]" else None


def _word_side(rest: str) -> bool | None:
    """`true` / `false`, a piece of one (`t`, `fa`), or one followed by punctuation (`true,`)."""
    for word in ("true", "false"):
        if word.startswith(rest) or (rest.startswith(word) and not rest[len(word)].isalnum()):
            return word == "true"
    return None


def verdict_confidence(text: str, tokens: Sequence[TokenAlternatives], verdict: str,
                       evidence_decides: bool) -> dict[str, float]:
    """P(kept) for each item whose decision the alternatives pin down (see the module's docstring):
    read at the cited list's first character where `evidence_decides`, else at the `verdict` word."""
    pattern, side = (_EVIDENCE, _evidence_side) if evidence_decides else \
        (re.compile(rf'"{verdict}(")\s*:\s*'), _word_side)
    starts = list(itertools.accumulate((len(t.text) for t in tokens), initial=0))  # then the end of the last
    items = list(_ITEM.finditer(text))
    confidence = {}
    for item, following in zip(items, [*items[1:], None]):
        found = pattern.search(text, item.end(), following.start() if following else len(text))
        if found is None or found.end() >= min(len(text), starts[-1]):
            continue
        reading = _read(text, tokens, starts, found.start(1), found.end(), side)
        if reading is not None and reading[2] - reading[1] <= MAX_UNSEEN:
            confidence[item.group(1)] = reading[0]
    return confidence


def _read(text: str, tokens: Sequence[TokenAlternatives], starts: list[int], first: int, decision: int,
          side: Callable[[str], bool | None]) -> tuple[float, float, float] | None:
    """(P(kept), lowest, highest) from the token that writes character `first` to the one that holds
    the deciding character at `decision`: lowest and highest where every path not followed went to
    "not kept" / "kept"."""
    last = bisect.bisect_right(starts, decision) - 1
    reading = None
    for i in range(last, bisect.bisect_right(starts, first) - 2, -1):
        before = text[starts[i]:decision]  # what an alternative here must write before deciding
        taken = tokens[i].text
        mass = {True: 0.0, False: 0.0}
        unseen = 0.0
        for alternative, logprob in tokens[i].top.items():
            if i < last and alternative == taken:
                continue  # the token taken: it carries on to the next position
            if len(alternative) > len(before) and alternative.startswith(before):
                decided = side(alternative[len(before):])
                if decided is not None:
                    mass[decided] += math.exp(logprob)
            elif alternative and before.startswith(alternative):
                unseen += math.exp(logprob)  # decides on a token that was never generated
        kept, dropped = mass[True], mass[False]
        if i == last:
            # A side missing from the alternatives counts at the least likely one's probability, its upper
            # bound, so P(kept) stays below 1 and keeps its order.
            finite = [lp for lp in tokens[i].top.values() if lp > -math.inf]
            floor = math.exp(min(finite)) if finite else 0.0
            most_kept, most_dropped = kept or floor, dropped or floor
            if most_kept + most_dropped == 0:
                return None
            reading = (most_kept / (most_kept + most_dropped), kept / (kept + most_dropped + unseen),
                       (most_kept + unseen) / (most_kept + dropped + unseen))
        elif (carried := math.exp(tokens[i].top.get(taken, -math.inf))) > 0:  # unlisted: nothing to weigh
            assert reading is not None  # read at the last position, where the loop starts
            p, low, high = reading
            total = kept + dropped + carried
            reading = ((kept + carried * p) / total, (kept + carried * low) / (total + unseen),
                       (kept + carried * high + unseen) / (total + unseen))
    return reading
