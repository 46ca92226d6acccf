"""The holistic pairwise baseline, read not written: the judge sees the document and two summaries, and its
preference is read where its JSON answer names the better one (`{"better": "` then A, B or tie). No
scaffold and no evidence: this is the holistic judge that grounded pairwise comparison is set against.
Each pair is asked in both orders (`pair_requests`), so that a preference for a position can be measured
and averaged away (runs/holistic_pairs.py)."""

from __future__ import annotations

from ..data.inputs import Candidate, Document
from ..method.holistic_pairwise import ANSWERS, FIELD, TASK
from .judge_setup import JudgeSetup
from .planned import PlannedRequest
from .read_verdicts import reading_request
from .readings import Reading

PAIR_ITEM = "pair"  # the reading's item: where its distribution goes in the record


def pair_request(judge: JudgeSetup, document: Document, first: Candidate, second: Candidate) -> PlannedRequest:
    """One reading: `first` shown as summary A, `second` as summary B."""
    pair = f"{first.system}|{second.system}"
    return reading_request(judge, f"{document.doc_id}/{pair}/pair", Reading(PAIR_ITEM, FIELD, ANSWERS),
                           task=TASK, doc_id=document.doc_id, system=pair,
                           variables={"document": document.text, "first": first.summary, "second": second.summary})


def pair_requests(judge: JudgeSetup, document: Document, a: Candidate,
                  b: Candidate) -> tuple[PlannedRequest, PlannedRequest]:
    """The pair in both orders: A first, then B first."""
    return pair_request(judge, document, a, b), pair_request(judge, document, b, a)
