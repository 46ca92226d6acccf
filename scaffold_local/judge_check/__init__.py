"""The built-in judge check: can this judge tell whether a summary conveys a fact better than word
overlap can?

Its built-in cases (`cases.jsonl`, read by cases.py) are six short documents written for this check,
each with four key facts and three summaries built so that every fact's presence is known: kept
verbatim, paraphrased (few shared words), dropped, or contradicted (many shared words, the
opposite meaning). Verbatim and paraphrased facts are present; dropped and contradicted ones are
not. Word overlap gets verbatim and dropped facts right and is fooled by the other two, so a
judge that reads meaning beats it clearly; one that does not, does not. checking.py runs it and keeps
its result.

`check-judge --cases FILE` runs the same check on cases of your own in this shape (one JSON object
per line); its result is saved apart from the built-in check's, which `score` and `show` cite.
"""

from .cases import KINDS, PRESENT
from .checking import SANITY_GATE, describe_saved, run_check, save, saved_balanced_accuracy

__all__ = [
    "KINDS", "PRESENT", "SANITY_GATE", "describe_saved", "run_check", "save", "saved_balanced_accuracy",
]
