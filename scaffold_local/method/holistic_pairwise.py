"""The holistic pairwise question the method sets against grounded pairwise comparison: which of two
summaries of one document is better, answered as JSON (`{"better": "A"}`), A being the summary shown first.
Its wording is prompts/compare_pair.v<N>.jinja; judging/pair_readings.py reads the answer."""

TASK = "compare_pair"
FIELD = "better"  # the answer's field
FIRST, SECOND, TIE = "A", "B", "tie"  # its values: the summary shown first, the one shown second, neither
ANSWERS = (FIRST, SECOND, TIE)
