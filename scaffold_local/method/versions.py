"""Method versions: what a version of the method fixes, so that a number can be reproduced.

A version pins the scaffold views it uses (`views`: adding a view to the registry changes no earlier
version, neither its requests nor its scaffold keys), the prompt templates
(`prompts/<task>.v<N>.jinja`), the shape of every JSON schema the judge fills in, and the sentence
splitter that numbers summary sentences. Version 2 follows the paper where it speaks (README,
"Method versions"); version 3 is version 2 with compact verdicts (evidence first, a short
justification only where something is cited or an error found: about half the output tokens);
version 4 writes each verdict in the paper's own order (the verdict, then the cited sentences, then
the justification), so that the judge decides before it writes any text, and the probability of the
verdict token is its confidence; version 5 asks about one item per request (one fact, question,
entity or summary sentence), in the paper's order, so a small judge's verdict on one item is not
pulled along by its verdicts on the others (the summary comes before the item, so a prefix cache
computes it once for all its items), with worked examples in its alignment and extraction prompts
(without them the 1.5B CPU judge wrote the labels themselves as entity attributes: "main point");
version 6 is version 5 for documents in any language: the scaffold is written in its document's
language (detected offline, named in the extraction prompts and recorded in the scaffold) and
summary sentences are split with the rules of their own language (text.py); its judgment
requests are version 5's, so a decision threshold calibrated under 5 holds. Version 7 is version 6
with verdicts read instead of written: every yes/no judgment (a fact kept, a question answered, an
entity attribute kept, a summary sentence supported) is one prompt that ends where the judge's JSON
answer gives its value, and the verdict is the judge's probability there (judging/readings.py),
nothing generated; its prompts put every constant first (instructions and examples, then the summary
or the document, then the item); items labelled "other" are asked about only where a metric counts
them (entity attributes); the sentences that carry a kept fact (Fact Focus) and the error category of
an unsupported sentence are read the same way, after the verdict; each direct-score axis is the
probability-weighted mean grade (as G-Eval reads it), without a rationale. Justifications are written
only on demand (`show --explain`), never read by a metric. Version 8 is version 7 with the key facts and
key questions asked as version 5 asks them (its instructions, worked examples and answer under the item's
id), read at the same answer position: version 5's knowledge of a fact that a summary states wrongly
(its worked examples say why a changed number is not kept) at version 7's cost; entity attributes,
sentence checks and the direct score are read as in version 7. Version 9 is version 6 (its judgment
requests are version 5's, so version 5's calibration holds) with the direct score asked without example
grades: version 2's prompt, which versions 2-6 use, shows `{"faithfulness": 9, "completeness": 7, ...}`,
and a small judge wrote exactly those grades for 7 of the demo's 15 summaries. Version 10 is version 9 with
the sentence check read, not written, and asked as a plain question ("Is this sentence of the summary
supported by the document? Answer yes or no."; P(yes) at the answer's first token against its own threshold;
no JSON, no worked examples, no error category): chosen on FRANK's dev half over version 7's JSON check,
which ranked sentences worse; version 9's written check was its weakest judgment (below word overlap on FRANK).
Version 12 is version 10 with each entity attribute read as version 7 reads it (one prompt per attribute, P(kept)
at the answer's value, nothing generated) instead of written as a list of kept ids, so that every attribute has a
P and EPS a threshold of its own, chosen on SummEdits' entity edits (dev documents); every other request is
version 10's. (Number 11 was an extraction prompt tried on dev documents and not kept: docs, "An extraction prompt
tried on dev documents"; number 13 each entity attribute asked as a plain yes / no question, tried on version 12's
dev documents and not kept: docs, "Entity attributes against SummEdits' entity edits".) Version 14 is version 10
with each sentence checked against its own best passages of the document (BM25, at most three, in document order),
not the whole document, as MiniCheck reads chunks: chosen on FRANK's and SummEdits' dev documents
(benchmarks/passage_dev.py), where a 1.5B judge reading a whole document of up to 1,500 words missed the line a
sentence rests on; every other request is version 10's.
Older versions stay selectable so that their scores can be reproduced. Metric definitions are not
versioned: they follow the README's "What the metrics mean".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
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
    # Tasks whose template is an earlier version's (task, version): a version built on an older one than the
    # newest keeps that one's prompts where it changes nothing.
    prompt_pins: tuple[tuple[str, int], ...] = ()

    def describe(self) -> dict[str, Any]:
        """As run specs store it; the paper's views are left out, so runs made before versions named
        their views keep their identity."""
        described = asdict(self)
        if self.views == PAPER_VIEWS:
            del described["views"]
        for added in ("in_document_language", "judges_like", "reads_verdicts", "prompt_pins", "read_kinds",
                      "sentences_yes_no", "sentences_on_passages"):  # added with 6, 7, 9, 10 and 14
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


METHOD_VERSIONS = {
    1: MethodVersion(1, "rules-v1", V1_ERROR_CATEGORIES, None, False, False),
    2: MethodVersion(2, "pysbd", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True),
    3: MethodVersion(3, "pysbd", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True,
                     compact_verdicts=True, justification_chars=100),
    4: MethodVersion(4, "pysbd", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True, verdict_first=True),
    5: MethodVersion(5, "pysbd", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True, verdict_first=True,
                     one_item_per_request=True),
    6: MethodVersion(6, "pysbd-language", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True, verdict_first=True,
                     one_item_per_request=True, in_document_language=True, judges_like=5),
    7: MethodVersion(7, "pysbd-language", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True, verdict_first=True,
                     one_item_per_request=True, in_document_language=True, reads_verdicts=True),
    8: MethodVersion(8, "pysbd-language", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True, verdict_first=True,
                     one_item_per_request=True, in_document_language=True, reads_verdicts=True),
    9: MethodVersion(9, "pysbd-language", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True, verdict_first=True,
                     one_item_per_request=True, in_document_language=True, judges_like=5,
                     prompt_pins=(("align_facts", 5), ("align_questions", 5), ("align_entities", 5),
                                  ("check_faithfulness", 5))),
    10: MethodVersion(10, "pysbd-language", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True, verdict_first=True,
                      one_item_per_request=True, in_document_language=True, judges_like=5, read_kinds=("faithfulness",),
                      sentences_yes_no=True,
                      prompt_pins=(("align_facts", 5), ("align_questions", 5), ("align_entities", 5))),
    12: MethodVersion(12, "pysbd-language", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True, verdict_first=True,
                      one_item_per_request=True, in_document_language=True, judges_like=5,
                      read_kinds=("faithfulness", "entities"), sentences_yes_no=True,
                      prompt_pins=(("align_facts", 5), ("align_questions", 5))),
    14: MethodVersion(14, "pysbd-language", FINESURE_ERROR_CATEGORIES, ENTITY_KINDS, True, True, verdict_first=True,
                      one_item_per_request=True, in_document_language=True, judges_like=5, read_kinds=("faithfulness",),
                      sentences_yes_no=True, sentences_on_passages=True,
                      prompt_pins=(("align_facts", 5), ("align_questions", 5), ("align_entities", 5))),
}
DEFAULT_METHOD_VERSION = 2


def method_version(number: int | None = None) -> MethodVersion:
    number = DEFAULT_METHOD_VERSION if number is None else number
    if number not in METHOD_VERSIONS:
        raise UsageError(f"unknown method version {number} (known: {', '.join(map(str, METHOD_VERSIONS))})")
    return METHOD_VERSIONS[number]
