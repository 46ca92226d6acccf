"""The one sentence splitter, and hashing of text.

Summaries are split into numbered sentences before judgment; sentence ids in every verdict, F and
Fact Focus all refer to this split, so it is deliberately simple and deterministic:

1. Line breaks always end a sentence (bullet lists, one-claim-per-line summaries); leading bullet
   markers ("-", "*", "•", "1.", "2)") are removed.
2. Within a line, a sentence ends at ".", "!" or "?" (optionally followed by closing quotes or
   brackets) when whitespace and then an upper-case letter, a digit or an opening quote follows.
3. No split after common abbreviations (Mr., Dr., U.S., e.g., Inc., Jan., ...) or single initials
   ("J. Smith"), and never inside numbers ("3.5").
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "inc", "ltd", "co", "corp",
    "fig", "eq", "al", "approx", "dept", "est", "gov", "gen", "sen", "rep", "rev", "capt", "col",
    "lt", "sgt", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "e.g", "i.e", "u.s", "u.k", "u.n", "a.m", "p.m", "ph.d",
}
_BOUNDARY = re.compile(r"""[.!?]+["'”’)\]]*(?=\s+["'“‘(\[]?[A-Z0-9])""")
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d{1,2}[.)])\s+")


def _ends_with_abbreviation(text: str) -> bool:
    match = re.search(r"([A-Za-z][A-Za-z.]*)\.$", text)
    if not match:
        return False
    word = match.group(1).lower().rstrip(".")
    return word in _ABBREVIATIONS or len(word) == 1


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (rules in the module docstring). Empty text gives []."""
    sentences: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        start = 0
        for match in _BOUNDARY.finditer(line):
            candidate = line[start : match.end()].strip()
            if match.group().startswith(".") and _ends_with_abbreviation(line[start : match.start() + 1]):
                continue
            if candidate:
                sentences.append(candidate)
            start = match.end()
        rest = line[start:].strip()
        if rest:
            sentences.append(rest)
    return sentences


def normalize(text: str) -> str:
    """Unicode NFC and trimmed whitespace: the form that is hashed and sent to the judge."""
    return re.sub(r"[ \t]+\n", "\n", unicodedata.normalize("NFC", text)).strip()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
