"""Judge text as a reader sees it: cut at a word with an ellipsis, flagged where it drifts into another script."""

from __future__ import annotations

from scaffold_local.analysis.judge_text import foreign_letters, shown, whole_or_cut


def test_a_justification_cut_by_its_bound_ends_at_a_whole_word_with_an_ellipsis():
    cut = "Sentence 2 states that the plant employs two hundred local workers, which is the fa"
    assert whole_or_cut(cut) == "Sentence 2 states that the plant employs two hundred local workers, which is the…"
    whole = "Sentence 2 states that the plant employs two hundred local workers."
    assert whole_or_cut(whole) == whole  # a closing mark: as written
    assert whole_or_cut("Not mentioned") == "Not mentioned"  # short: a phrase the judge ended
    assert whole_or_cut("「工場は月曜日に開いた」と述べている。") == "「工場は月曜日に開いた」と述べている。"


def test_letters_of_a_script_neither_the_item_nor_the_summary_uses_are_flagged():
    context = "The heater recall covers 40,000 units. Customers get a refund."
    assert foreign_letters("Customers having烧 a refund.", context) == "烧"
    assert shown("Customers having烧 a refund.", context) == ("Customers having烧 a refund. [the judge wrote letters of "
                                                               "another script here: 烧]")
    assert shown("Customers get a refund (stated).", context) == "Customers get a refund (stated)."
    # Japanese mixes Han and kana: a justification in the summary's own scripts is not flagged, Hangul is
    japanese = "東京都は図書館を開いた。"
    assert foreign_letters("図書館が開いたと述べている。", japanese) == ""
    assert foreign_letters("図書館が開いた 도서관", japanese) == "도서관"
