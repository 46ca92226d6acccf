"""The judge's requests: planned and read back by the judge (judge.py), the verdicts' confidence
(confidence.py) and id rules (verdicts.py), and fitting the judge's context before anything is
sent (context_fit.py)."""

from .confidence import verdict_confidence
from .context_fit import ContextFit, fit_context, token_counter
from .judge import Judge, PlannedRequest
from .verdicts import join_records

__all__ = ["ContextFit", "Judge", "PlannedRequest", "fit_context",
           "join_records", "token_counter", "verdict_confidence"]
