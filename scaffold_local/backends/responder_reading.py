"""How the test double reads a request, computed from it alone: a document's sentences as facts, the summary
sentences that hold an item's words, P(kept) from that overlap, a sentence's error category; and how it writes a
verdict in the shape the request's schema asks for (its bounds, its verdict shapes, its key order)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from ..method.text import overlap, split_sentences

_METADATA = ("published", "posted", "updated", "copyright", "contact")


def bound(schema: dict[str, Any], *path: str) -> dict[str, Any]:
    node = schema
    for key in path:
        node = node[key]
    return node


def document_facts(document: str) -> list[tuple[str, str]]:
    """(sentence, label) for every sentence of the document."""
    facts, main_left = [], 2
    for sentence in split_sentences(document):
        if sentence.lower().startswith(_METADATA):
            label = "other"
        elif main_left:
            label, main_left = "main point", main_left - 1
        else:
            label = "supporting detail"
        facts.append((sentence, label))
    return facts


def supporting(sentences: Sequence[str], text: str, threshold: float) -> list[int]:
    """The summary sentences (1-based) that hold at least `threshold` of the text's content words."""
    return [i for i, s in enumerate(sentences, 1) if overlap(text, s) >= threshold]


def p_kept_by_overlap(text_key: str, threshold: float) -> Any:
    """P(kept) growing with the item's best word overlap with a summary sentence (0.5 at the threshold)."""
    def p_kept(item: dict[str, Any], sentences: Sequence[str]) -> float:
        best = max((overlap(item[text_key], s) for s in sentences), default=0.0)
        return 1 / (1 + math.exp(-12 * (best - threshold)))
    return p_kept


# The alignment rules' own thresholds: 60% of a fact's (an attribute's) words, 50% of an expected answer's.
P_TEXT_KEPT = p_kept_by_overlap("text", 0.6)
P_ANSWERED = p_kept_by_overlap("expected_answer", 0.5)


def justify(cited: list[int]) -> str:
    return f"matched sentences {cited}" if cited else "no sentence matches"


def shapes(verdict_schema: dict[str, Any]) -> list[dict[str, Any]]:
    """A verdict's shapes: one, or (method v2 and later) the citing one and the empty one."""
    return verdict_schema.get("anyOf", [verdict_schema])


def compact(verdict_schema: dict[str, Any]) -> bool:
    """Method v3's compact verdicts: the evidence list is the verdict, a "why" only beside evidence."""
    return any("why" in shape["properties"] for shape in shapes(verdict_schema))


def cited_verdict(is_compact: bool, cited: list[int], verdict: str) -> dict[str, Any]:
    if is_compact:
        return {"ids": cited, "why": justify(cited)} if cited else {"ids": []}
    return {"justification": justify(cited), "sentence_ids": cited, verdict: bool(cited)}


def schema_order(verdict: dict[str, Any], verdict_schema: dict[str, Any]) -> dict[str, Any]:
    """A verdict's keys in the order of its schema (a grammar writes them so: method v4 puts the verdict first)."""
    order = next(list(shape["properties"]) for shape in shapes(verdict_schema) if set(shape["properties"]) == set(verdict))
    return {key: verdict[key] for key in order}


def align_cited(items: list[dict[str, Any]], sentences: list[str], text_key: str, verdict: str,
                threshold: float, schema: dict[str, Any]) -> dict[str, Any]:
    """Verdicts that cite every summary sentence holding `threshold` of the item's `text_key` words."""
    answer = {}
    for item in items:
        verdict_schema = schema["properties"][item["id"]]
        most = max(p["maxItems"] for shape in shapes(verdict_schema) for k, p in shape["properties"].items()
                   if k in ("sentence_ids", "ids"))
        cited = supporting(sentences, item[text_key], threshold)[:most]
        answer[item["id"]] = schema_order(cited_verdict(compact(verdict_schema), cited, verdict), verdict_schema)
    return answer


def sentence_category(sentence: str, document: str) -> str:
    """Faithful where 80% of its content words are in the document; an "entity error" where it has a
    number the document lacks; else "out-of-context error"."""
    if overlap(sentence, document) >= 0.8:
        return "no error"
    document_numbers = set(re.findall(r"\d+", document))
    if any(n not in document_numbers for n in re.findall(r"\d+", sentence)):
        return "entity error"
    return "out-of-context error"


# ------------------------------------------------------------ each view's rules
