"""The one sentence splitter."""

from scaffold_local.text import split_sentences


def test_splits_on_terminal_punctuation_before_capitals_and_digits():
    assert split_sentences("The vote passed. It cost $4.5 million! Why? 2025 was busy.") == [
        "The vote passed.", "It cost $4.5 million!", "Why?", "2025 was busy.",
    ]


def test_keeps_abbreviations_initials_and_decimals_together():
    text = "Dr. Ruiz met Mr. J. Smith at 3.30 p.m. in the U.S. Senate. They agreed."
    assert split_sentences(text) == ["Dr. Ruiz met Mr. J. Smith at 3.30 p.m. in the U.S. Senate.", "They agreed."]


def test_line_breaks_and_bullets_end_sentences():
    assert split_sentences("- first point\n* second point\n1. third point\n\n") == ["first point", "second point", "third point"]


def test_quotes_after_the_full_stop_stay_with_the_sentence():
    assert split_sentences('He said "no." Then he left.') == ['He said "no."', "Then he left."]


def test_empty_and_whitespace_only_text_has_no_sentences():
    assert split_sentences("") == [] and split_sentences("  \n \t") == []
