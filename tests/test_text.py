"""The one sentence splitter: pysbd (method version 2) with our line and missing-space rules, and
method version 1's rules, kept for reproducing earlier runs; content words in any script."""

import pytest

from scaffold_local.method.text import content_words, counted, overlap, split_sentences

# Each case splits as a reader would; the ones pysbd alone gets wrong are marked.
CASES = [
    ("He moved to the U.S. The move was hard.", ["He moved to the U.S.", "The move was hard."]),
    ("It closed at 5 p.m. Then it rained.", ["It closed at 5 p.m.", "Then it rained."]),
    ("Prices rose.The index fell.", ["Prices rose.", "The index fell."]),  # pysbd alone: one sentence
    ("Revenue rose 3.5 percent. iPhone sales fell.", ["Revenue rose 3.5 percent.", "iPhone sales fell."]),
    ("東京は日本の首都です。人口は約1400万人です。", ["東京は日本の首都です。", "人口は約1400万人です。"]),
    ("今天天气很好。我们去公园吧！你来吗？", ["今天天气很好。", "我们去公园吧！", "你来吗？"]),
    ("- First point\n* Second point\n• Third point", ["First point", "Second point", "Third point"]),
    ("Key results:\n1. Sales up 5%.\n2) Costs down.", ["Key results:", "Sales up 5%.", "Costs down."]),
    ("Line one without a full stop\nLine two", ["Line one without a full stop", "Line two"]),
    ("the summary starts in lower case. and goes on.", ["the summary starts in lower case.", "and goes on."]),
    ("Dr. Ruiz met Mr. J. Smith at 3.30 p.m. in the U.S. Senate. They agreed.",
     ["Dr. Ruiz met Mr. J. Smith at 3.30 p.m. in the U.S. Senate.", "They agreed."]),
    ("The rate was 4.5%. It fell to 3.2% by Jan. 5. Analysts were surprised.",
     ["The rate was 4.5%.", "It fell to 3.2% by Jan. 5.", "Analysts were surprised."]),
    ('She said, "We won." Then she left.', ['She said, "We won."', "Then she left."]),
    ("Is it true? Yes! It is.", ["Is it true?", "Yes!", "It is."]),
    ("Alpha Inc., e.g. its CEO, agreed. Visit example.com today.", ["Alpha Inc., e.g. its CEO, agreed.", "Visit example.com today."]),
    ("He earned a Ph.D. in 1999. He then moved to Boston.", ["He earned a Ph.D. in 1999.", "He then moved to Boston."]),
    ("Они приехали в Москву. Там было холодно.", ["Они приехали в Москву.", "Там было холодно."]),
    ("The vote passed. It cost $4.5 million! Why? 2025 was busy.",
     ["The vote passed.", "It cost $4.5 million!", "Why?", "2025 was busy."]),
]


@pytest.mark.parametrize("text, sentences", CASES)
def test_splits_as_a_reader_would(text, sentences):
    assert split_sentences(text) == sentences


def test_empty_and_whitespace_only_text_has_no_sentences():
    for splitter in ("pysbd", "rules-v1"):
        assert split_sentences("", splitter) == [] and split_sentences("  \n \t", splitter) == []


def test_method_version_1_splits_exactly_as_before():
    """v1's rules, kept so v1 runs reproduce: they keep abbreviations and decimals together but miss
    lower-case starts, missing spaces and CJK punctuation."""
    assert split_sentences("Dr. Ruiz met Mr. J. Smith at 3.30 p.m. in the U.S. Senate. They agreed.", "rules-v1") == [
        "Dr. Ruiz met Mr. J. Smith at 3.30 p.m. in the U.S. Senate.", "They agreed."]
    assert split_sentences("- first point\n1. second point", "rules-v1") == ["first point", "second point"]
    assert split_sentences("Revenue rose 3.5 percent. iPhone sales fell.", "rules-v1") == [
        "Revenue rose 3.5 percent. iPhone sales fell."]
    assert split_sentences("東京です。雨です。", "rules-v1") == ["東京です。雨です。"]


def test_content_words_in_any_script_and_unchanged_on_ascii():
    """Word overlap (the lexical baselines, the scaffold checks, the test double) reads every script:
    letters of any alphabet, and each Han character alone (Chinese and Japanese put no spaces between
    words). On ASCII text the words are exactly the old ones: lower-case runs of a-z and 0-9."""
    import re

    ascii_text = "Alpha Corp's plant_2 cost 50 million dollars (to build) -- and it's NEW; e-mail x@y.org"
    old = {w for w in re.findall(r"[a-z0-9]+", ascii_text.lower()) if len(w) >= 3} - {"and"}
    assert content_words(ascii_text) == old
    assert content_words("Der Bäcker öffnete in Zürich") == {"der", "bäcker", "öffnete", "zürich"}
    assert content_words("Москва открыла новую библиотеку") == {"москва", "открыла", "новую", "библиотеку"}
    assert content_words("東京都は図書館を開いた。") == {"東", "京", "都", "図", "書", "館", "開"}
    assert overlap("東京都は新しい図書館を開いた。", "東京都は月曜日に新しい図書館を開いた。") == 1.0


def test_counts_take_the_noun_in_the_right_number():
    assert [counted(n, "document") for n in (0, 1, 2, 1500)] == ["0 documents", "1 document", "2 documents",
                                                                  "1,500 documents"]
    assert counted(1, "summary", "summaries") == "1 summary" and counted(3, "summary", "summaries") == "3 summaries"
