"""What a judge wrote, made fit to show beside a verdict: a justification cut by its length bound ends at a whole word
with an ellipsis, and text in a script that neither the item nor the summary uses (a small judge drifting into
Chinese mid-sentence) is flagged rather than shown as if fine."""

from __future__ import annotations

import unicodedata

ENDINGS = tuple('.!?)"\'»”’。！？…')
CUT_FROM = 40  # a shorter text without a closing mark is a phrase the judge ended, not one its bound cut


def whole_or_cut(text: str) -> str:
    """The text as written, or, where it stops without a closing mark (the schema's length bound cut it), up to its
    last whole word with an ellipsis."""
    text = text.strip()
    if len(text) < CUT_FROM or text.endswith(ENDINGS) or " " not in text:
        return text
    return text[: text.rfind(" ")].rstrip(" ,;:-") + "…"


def script(character: str) -> str | None:
    """The script of a letter by its Unicode name ("LATIN", "CJK", "HIRAGANA", "CYRILLIC", ...); None for the rest."""
    if not character.isalpha():
        return None
    return unicodedata.name(character, "").split(" ")[0] or None


def foreign_letters(text: str, context: str) -> str:
    """The letters of `text` whose script `context` (the item and the summary) never uses, in order, once each."""
    known = {script(c) for c in context} | {None}
    return "".join(dict.fromkeys(c for c in text if script(c) not in known))


def shown(text: str, context: str) -> str:
    """A judge's justification as a reader should see it: whole or cut at a word, flagged where it holds letters of a
    script that neither the item nor the summary uses."""
    cut = whole_or_cut(text)
    foreign = foreign_letters(cut, context)
    return f"{cut} [the judge wrote letters of another script here: {foreign[:12]}]" if foreign else cut
