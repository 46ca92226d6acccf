"""The sentence check: each summary sentence faithful to the source or not, with FineSurE's error
category (F). It needs no scaffold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel

from ..schemas import SchemaLimits, in_order, justification, strict_model
from ..versions import NO_ERROR, MethodVersion
from .scoring import Scores

TASK = "check_faithfulness"
KIND = "faithfulness"  # its records' judgment kind
METRICS = {"f": "F"}


@lru_cache(maxsize=512)
def faithfulness_model(n_sentences: int, limits: SchemaLimits, method: MethodVersion,
                       only: int | None = None) -> type[BaseModel]:
    """One verdict per summary sentence S1..Sn, or for sentence `only` alone (one item per request)."""
    verdict: Any
    if method.compact_verdicts:
        errors = tuple(c for c in method.error_categories if c != NO_ERROR)
        verdict = strict_model("FaithfulSentence", category=(Literal[NO_ERROR], ...)) | strict_model(
            "SentenceError", category=(Literal[errors], ...), why=(justification(limits, method), ...))
    else:
        verdict = strict_model("SentenceVerdict", **in_order({
            "reason": (justification(limits), ...), "category": (Literal[method.error_categories], ...),
        }, "category", method))
    numbers = [only] if only is not None else range(1, n_sentences + 1)
    return strict_model("SentenceFaithfulness", **{f"S{i}": (verdict, ...) for i in numbers})


def read_faithful(parsed: Mapping[str, Any], failed: Mapping[str, str], n_sentences: int) -> list[bool | None]:
    """Each sentence faithful or not; None where its verdict failed."""
    return [None if f"S{i}" in failed else parsed[f"S{i}"]["category"] == NO_ERROR for i in range(1, n_sentences + 1)]


def score(out: Scores, faithful: Sequence[float | None] | None, n_sentences: int, failure: str) -> None:
    if faithful is None:
        out.set("f", None, "summary has no sentences" if n_sentences == 0 else f"faithfulness check failed: {failure}")
        return
    sentences = [(f"S{i}", None if ok is None else float(ok)) for i, ok in enumerate(faithful, 1)]
    out.share("f", sentences, "sentence", "summary has no sentences")
