"""Method versions: what a version of the method fixes, so that a number can be reproduced.

A version pins the scaffold views it uses, the prompt template of every task (`prompts/<task>.v<N>.jinja`: the
newest up to its number, or the one it pins), the shape of every JSON schema the judge fills in, the sentence
splitter, and which judgments it reads from the judge's next-token distribution instead of letting it write them.
Each version is built from the one it changes (`dataclasses.replace`), so its definition says what it changed;
why, on what evidence, and whether it was kept is in the docs' decision records (docs/decisions.md). Every version
stays selectable and byte-identical, so that an old run resumes and reproduces. Metric definitions are not
versioned: they follow the README's "What the metrics mean".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from ..errors import UsageError

Splitter = Literal["rules-v1", "pysbd", "pysbd-language"]

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
# The views of the paper, which every version up to 5 uses.
PAPER_VIEWS = ("facts", "questions", "entities")
# The fields added after version 5; a version that leaves one unset describes itself without it, so run specs written
# before the field existed keep their identity.
_ADDED_FIELDS = ("in_document_language", "judges_like", "reads_verdicts", "prompt_pins", "read_kinds", "sentences_yes_no",
                 "sentences_on_passages", "exact_readings", "citations_apart", "readings_together", "yes_no_kinds",
                 "prior_free_kinds", "reads_main")


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
    # The paper's order: verdict (category, kept attributes), then cited sentences, then justification.
    verdict_first: bool = False
    # One request per fact, question, entity and summary sentence instead of one per view.
    one_item_per_request: bool = False
    views: tuple[str, ...] = PAPER_VIEWS  # the scaffold views, in extraction and display order
    # The scaffold in the document's language: its extraction prompts name the detected language.
    in_document_language: bool = False
    judges_like: int | None = None  # the version whose judgment requests it sends (its calibration holds)
    # Verdicts read from the judge's next-token distribution at the answer position, nothing generated.
    reads_verdicts: bool = False
    # The judgment kinds ("faithfulness", a view's name) whose verdicts it reads while it writes the others.
    read_kinds: tuple[str, ...] = ()
    # Its sentence check a plain yes / no question (no JSON, no worked examples, no error category) where it is read.
    sentences_yes_no: bool = False
    # Its sentence check reads each sentence against that sentence's best passages of the document, not the whole.
    sentences_on_passages: bool = False
    # Each answer's whole probability read where the engine has the full distribution (every token that spells or
    # begins it), bounded where it has only its likeliest tokens; a reading with too little mass on the answers fails.
    exact_readings: bool = False
    # A kept fact's cited sentence is not part of its verdict: a one-sentence summary's is that sentence (not read),
    # and a citation reading that fails leaves Fact Focus unknown where it matters, never voiding the verdict.
    citations_apart: bool = False
    # Each task's readings of a summary are computed together, in passes fixed by that group alone (an engine that
    # computes prompts part by part decodes them side by side where it would decode each alone).
    readings_together: bool = False
    # Tasks whose template is an earlier version's (task, version): a version built on an older one than the
    # newest keeps that one's prompts where it changes nothing.
    prompt_pins: tuple[tuple[str, int], ...] = ()
    # Views read as a plain yes / no (P(yes)) on whether the summary states the document's answer or claim, not a
    # JSON boolean on whether it answers or mentions it: an answer stated otherwise is not counted.
    yes_no_kinds: tuple[str, ...] = ()
    # Views whose verdict is the gain of a reading over the same reading of an empty summary (the item's prior, read
    # once per item and shared by every summary): sigmoid(logit P - logit P0), 0.5 where the summary adds nothing.
    prior_free_kinds: tuple[str, ...] = ()
    # Each extracted fact's and question's importance read (P(yes) to "would a short summary have to state this?",
    # the document in the shared prefix) and its label set from it: main above the config's `main` threshold.
    reads_main: bool = False

    def describe(self) -> dict[str, Any]:
        """As run specs store it; the paper's views are left out, so runs made before versions named
        their views keep their identity."""
        described = asdict(self)
        if self.views == PAPER_VIEWS:
            del described["views"]
        for added in _ADDED_FIELDS:
            if not described[added]:
                del described[added]
        return described

    def reads(self, kind: str) -> bool:
        """Whether the verdicts of a judgment kind (a view's name, "faithfulness", "direct_score") are read."""
        return self.reads_verdicts or kind in self.read_kinds

    @property
    def decided_by_evidence(self) -> bool:
        """Where a fact's or question's verdict is decided in the output: at the first character of
        the cited-sentence list (versions 2 and 3: the verdict word after it is then forced), or
        at the verdict word itself (versions 1, 4 and 5)."""
        return self.verdict_needs_evidence and not self.verdict_first

    @property
    def decides_before_rationale(self) -> bool:
        """Whether the judge decides before writing any text that states its decision: only then is
        the decision token's probability a confidence rather than consistency with a rationale."""
        return self.verdict_first or self.compact_verdicts or self.reads_verdicts

    @property
    def not_a_confidence(self) -> str | None:
        """Where P(kept) is read after text that states the verdict, what it measures instead (said
        wherever it is shown); None where it is the judge's confidence."""
        if self.decides_before_rationale:
            return None
        return (f"under method version {self.number} the judge writes its justification before its verdict is "
                f"decided, so P(kept) measures consistency with that justification, not the judge's confidence "
                f"(method versions 3, 4 and 5 decide first)")



V1 = MethodVersion(number=1, splitter="rules-v1", error_categories=V1_ERROR_CATEGORIES, entity_kinds=None,
                   scores_before_rationale=False, verdict_needs_evidence=False)
# The paper where it speaks.
V2 = replace(V1, number=2, splitter="pysbd", error_categories=FINESURE_ERROR_CATEGORIES, entity_kinds=ENTITY_KINDS,
             scores_before_rationale=True, verdict_needs_evidence=True)
V3 = replace(V2, number=3, compact_verdicts=True, justification_chars=100)
V4 = replace(V2, number=4, verdict_first=True)
V5 = replace(V4, number=5, one_item_per_request=True)
V6 = replace(V5, number=6, splitter="pysbd-language", in_document_language=True, judges_like=5)
V7 = replace(V6, number=7, judges_like=None, reads_verdicts=True)
V8 = replace(V7, number=8)  # its own fact and question templates (align_*.v8)
_V5_JUDGMENTS = (("align_facts", 5), ("align_questions", 5), ("align_entities", 5))
V9 = replace(V6, number=9, prompt_pins=(*_V5_JUDGMENTS, ("check_faithfulness", 5)))
V10 = replace(V9, number=10, read_kinds=("faithfulness",), sentences_yes_no=True, prompt_pins=_V5_JUDGMENTS)
V12 = replace(V10, number=12, read_kinds=("faithfulness", "entities"), prompt_pins=_V5_JUDGMENTS[:2])
V14 = replace(V10, number=14, sentences_on_passages=True)
# Every judgment read: version 7's facts, questions, attributes and direct score, version 14's sentence check.
V15 = replace(V7, number=15, sentences_yes_no=True, sentences_on_passages=True, exact_readings=True,
              prompt_pins=(("align_facts", 7), ("align_questions", 7), ("align_entities", 7), ("direct_score", 7),
                           ("check_faithfulness", 10)))
# Version 15's requests (one-sentence summaries' citations not sent) and thresholds; a citation no longer voids a verdict.
V16 = replace(V15, number=16, judges_like=15, citations_apart=True)

# Version 16's requests and thresholds, the readings of each task of a summary computed together.
V17 = replace(V16, number=17, readings_together=True)

# Version 17's readings with the summary quoted as data in every prompt; questions and entity claims checked against
# the document's answer and claim; facts, questions and claims read against their prior; main points read.
V19 = replace(V17, number=19, judges_like=None, prompt_pins=(), yes_no_kinds=("questions", "entities"),
              prior_free_kinds=PAPER_VIEWS, reads_main=True)

# Version 19's parts that decision 0004 kept on dev halves: summaries quoted, answers and claims checked, facts and
# questions read against their prior; entity claims read without it, and the labels as extracted.
V20 = replace(V19, number=20, prior_free_kinds=("facts", "questions"), reads_main=False)

METHOD_VERSIONS = {v.number: v for v in (V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V12, V14, V15, V16, V17, V19, V20)}
DEFAULT_METHOD_VERSION = 17


def method_version(number: int | None = None) -> MethodVersion:
    number = DEFAULT_METHOD_VERSION if number is None else number
    if number not in METHOD_VERSIONS:
        raise UsageError(f"unknown method version {number} (known: {', '.join(map(str, METHOD_VERSIONS))})")
    return METHOD_VERSIONS[number]
