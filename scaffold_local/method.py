"""Method versions: what a version of the method fixes, so that a number can be reproduced.

A version pins the prompt templates (`prompts/<task>.v<N>.jinja`), the shape of every JSON schema
the judge fills in, and the sentence splitter that numbers summary sentences. Version 2 follows the
paper where it speaks (README, "Method versions"); version 3 is version 2 with compact verdicts
(evidence first, a short justification only where something is cited or an error found: about
half the output tokens); older versions stay selectable so that their scores can be
reproduced. Metric definitions are not versioned: they follow METHOD.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Splitter = Literal["rules-v1", "pysbd"]

# v1's names for FineSurE's error types (one of them, "grammatical", was missing).
V1_ERROR_CATEGORIES = (
    "no error", "out-of-context error", "predicate error", "entity error", "circumstance error",
    "coreference error", "discourse link error", "other error",
)
# FineSurE's released fact-checking categories, as the paper uses them.
FINESURE_ERROR_CATEGORIES = (
    "no error", "out-of-context error", "entity error", "predicate error", "circumstantial error",
    "grammatical error", "coreference error", "linking error", "other error",
)
# The paper's entity types.
ENTITY_KINDS = ("person", "org", "product", "concept", "other")
NO_ERROR = "no error"


@dataclass(frozen=True)
class MethodVersion:
    number: int
    splitter: Splitter
    error_categories: tuple[str, ...]
    entity_kinds: tuple[str, ...] | None  # None: free text
    scores_before_rationale: bool  # direct score: the four grades first, the rationale last (the paper)
    verdict_needs_evidence: bool  # inferred / answered <=> at least one cited sentence, in the schema
    # Compact verdicts: short keys, the evidence list is the verdict (no true/false word), and a
    # justification of at most `justification_chars` only for what is kept or found wrong.
    compact_verdicts: bool = False
    justification_chars: int | None = None  # None: the model config's limit

    def describe(self) -> dict[str, Any]:
        return asdict(self)


METHOD_VERSIONS = {
    1: MethodVersion(1, "rules-v1", V1_ERROR_CATEGORIES, None, False, False),
    2: MethodVersion(2, "pysbd", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True),
    3: MethodVersion(3, "pysbd", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True,
                     compact_verdicts=True, justification_chars=100),
}
DEFAULT_METHOD_VERSION = 2


def method_version(number: int | None = None) -> MethodVersion:
    number = DEFAULT_METHOD_VERSION if number is None else number
    if number not in METHOD_VERSIONS:
        raise ValueError(f"unknown method version {number} (known: {', '.join(map(str, METHOD_VERSIONS))})")
    return METHOD_VERSIONS[number]
