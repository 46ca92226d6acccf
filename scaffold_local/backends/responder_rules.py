"""The test double's rules (backends/responder.py): how it answers each task, computed from the request
alone so that a test can work out every answer by hand. Each document sentence is a fact ("other"
when it starts with a metadata word, "main point" for the first two others, else "supporting
detail"), and an item is kept where some summary sentence holds enough of its content words. Every
answer follows the request's schema: its bounds, its verdict shapes and its key order (a grammar
writes keys in the schema's order). A view registered from outside adds its own with `register_rules`."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..method import holistic_pairwise
from ..method.text import HAN, overlap, split_sentences
from ..method.versions import NO_ERROR
from ..method.views import VIEW_SPECS, direct_score, labelling
from ..method.views import sentences as sentence_check
from .responder_reading import (
    P_ANSWERED,
    P_TEXT_KEPT,
    align_cited,
    bound,
    compact,
    document_facts,
    schema_order,
    sentence_category,
    supporting,
)

# The answer to one request: (the request's structured inputs, its JSON schema) -> output.
Rule = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
# The probability of one item's verdict given the summary's sentences.
ItemProbability = Callable[[dict[str, Any], Sequence[str]], float]


@dataclass(frozen=True)
class ResponderRules:
    """How the test double answers one view's requests."""

    extract: Rule
    align: Rule
    # P(kept) of an item for the token probabilities of a written verdict (None: the view's verdicts carry none).
    p_kept: ItemProbability | None = None
    # P(true) of an item's reading (method versions that read their verdicts; None: 0.5 either way).
    p_true: ItemProbability | None = None


def _extract_facts(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    items = bound(schema, "properties", "facts")
    max_chars = items["items"]["properties"]["fact"]["maxLength"]
    facts = document_facts(ctx["document"])[: items["maxItems"]]
    return {"facts": [{"fact": f[:max_chars], "label": label} for f, label in facts]}


def _align_facts(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    return align_cited(ctx["facts"], ctx["sentences"], "text", "inferred", 0.6, schema)


def _extract_questions(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A question per non-other fact, whose expected answer is the fact."""
    items = bound(schema, "properties", "questions")
    max_chars = items["items"]["properties"]["question"]["maxLength"]
    questions = [
        {
            "question": f"What does the document state about: {' '.join(fact.split()[:6])}?"[:max_chars],
            "expected_answer": fact[:max_chars],
            "provenance": f"Sentence {i}",
            "label": label,
        }
        for i, (fact, label) in enumerate(document_facts(ctx["document"]), 1)
        if label != "other"
    ]
    return {"questions": questions[: items["maxItems"]]}


def _align_questions(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    return align_cited(ctx["questions"], ctx["sentences"], "expected_answer", "answered", 0.5, schema)


_NAME_WORD = re.compile(f"[{HAN}]+|[\u30a0-\u30ff]+|[^\\W_{HAN}\u3040-\u30ff]+")


def _entity_names(document: str) -> list[str]:
    """Capitalised names not at a sentence start; without any (lower-cased text, a script without
    case), the longest word, taken from a sentence so that some fact mentions it."""
    names: list[str] = []
    sentences = split_sentences(document)
    for sentence in sentences:
        for match in re.finditer(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*", sentence):
            if match.start() > 0 and match.group() not in names:
                names.append(match.group())
    words = [w for sentence in sentences for w in _NAME_WORD.findall(sentence)]
    return names or [max(words, key=len, default=sentences[0] if sentences else "document")]


def _extract_entities(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Entities are names; their attributes the document sentences that mention them."""
    items = bound(schema, "properties", "entities")
    entity = items["items"]["properties"]
    max_attributes = entity["attributes"]["maxItems"]
    max_chars = entity["attributes"]["items"]["properties"]["attribute"]["maxLength"]
    facts = document_facts(ctx["document"])
    entities = []
    for name in _entity_names(ctx["document"])[: items["maxItems"]]:
        name = name[:entity["name"]["maxLength"]]  # still in the sentences that mention it
        attributes = [{"attribute": f[:max_chars], "label": label} for f, label in facts if name in f]
        kind = "other" if "enum" in entity["kind"] else "name"  # method v2 has an enum of kinds
        entities.append({"name": name, "kind": kind, "attributes": attributes[:max_attributes]})
    return {"entities": entities}


def _align_entities(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """An attribute is preserved where the summary names the entity and a sentence holds 60% of its words."""
    summary = ctx["summary"].lower()
    answer = {}
    for entity in ctx["entities"]:
        named = entity["name"].lower() in summary
        kept = [a["id"] for a in entity["attributes"] if named and supporting(ctx["sentences"], a["text"], 0.6)]
        why = "named in summary" if named else "not named"
        verdict_schema = schema["properties"][entity["id"]]
        if not compact(verdict_schema):
            answer[entity["id"]] = schema_order({"justification": why, "preserved_attribute_ids": kept}, verdict_schema)
        else:
            answer[entity["id"]] = {"kept": kept, "why": why} if kept else {"kept": []}
    return answer


def _p_preserved(item: dict[str, Any], sentences: Sequence[str]) -> float:
    """The responder's P(preserved): the attribute's best word overlap, where the summary names the entity."""
    named = item["entity"].lower() in " ".join(sentences).lower()
    return P_TEXT_KEPT(item, sentences) if named else 0.02


def check_sentences(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The sentence check: each sentence asked about, by word overlap with the document."""
    answer = {}
    for i, sentence in enumerate(ctx["sentences"], 1):
        if f"S{i}" not in schema["properties"]:
            continue  # one sentence per request (method v5): only the one asked about
        category = sentence_category(sentence, ctx["document"])
        if not compact(schema["properties"][f"S{i}"]):
            answer[f"S{i}"] = schema_order({"reason": "lexical check", "category": category}, schema["properties"][f"S{i}"])
        else:
            answer[f"S{i}"] = {"category": category, **({"why": "lexical check"} if category != NO_ERROR else {})}
    return answer


def direct_score_grades(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The direct score: faithfulness = hallucination = round(10 x faithful share), completeness =
    round(10 x main facts covered share), understandability = 8; each at least 1."""
    sentences = ctx["sentences"]
    faithful = sum(sentence_category(s, ctx["document"]) == NO_ERROR for s in sentences) / max(len(sentences), 1)
    main = [f for f, label in document_facts(ctx["document"]) if label == "main point"]
    covered = sum(bool(supporting(sentences, f, 0.6)) for f in main) / max(len(main), 1)
    grade = lambda share: max(1, round(10 * share))  # noqa: E731
    grades = {"rationale": "lexical grades", "faithfulness": grade(faithful), "completeness": grade(covered),
              "understandability": 8, "hallucination": grade(faithful)}
    return {key: grades[key] for key in schema["properties"]}  # in the schema's order, as a grammar would


def p_main(context: dict[str, Any]) -> float:
    """Method version 19's importance reading: 0.9 where the item's best-overlapping document sentence is one the
    extraction rule labels a main point, else 0.2."""
    item = context["item"]
    text = item.get("text") or item["expected_answer"]
    facts = document_facts(context["document"])
    label = max(facts, key=lambda fact: overlap(text, fact[0]))[1] if facts else "other"
    return 0.9 if label == "main point" else 0.2


def labels(context: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Chunked mode's labels: an item labelled "other" in its part stays so;
    of the rest, the first two items of each kind (F, Q, E: the id's letter) in the list are main
    points for the whole document and every later one a supporting detail."""
    seen: dict[str, int] = {}
    out = {}
    for item in context["items"]:
        kind = item["id"][:1]
        if item["label"] == "other":
            out[item["id"]] = "other"
            continue
        seen[kind] = seen.get(kind, 0) + 1
        out[item["id"]] = "main point" if seen[kind] <= 2 else "supporting detail"
    return out


_RULES: dict[str, ResponderRules] = {
    "facts": ResponderRules(_extract_facts, _align_facts, P_TEXT_KEPT, P_TEXT_KEPT),
    "questions": ResponderRules(_extract_questions, _align_questions, P_ANSWERED, P_ANSWERED),
    "entities": ResponderRules(_extract_entities, _align_entities, p_true=_p_preserved),
}


def register_rules(view: str, rules: ResponderRules) -> None:
    """The test double's rules for a view registered from outside the package."""
    _RULES[view] = rules


def unregister_rules(view: str) -> None:
    _RULES.pop(view, None)


def view_rules(view: str) -> ResponderRules | None:
    return _RULES.get(view)


def task_rules() -> dict[str, Rule]:
    """The rule for every task: the sentence check, the direct score, chunked mode's labels, and each
    registered view's extraction and alignment."""
    rules: dict[str, Rule] = {sentence_check.TASK: check_sentences, direct_score.TASK: direct_score_grades,
                              labelling.TASK: labels}
    for name, spec in VIEW_SPECS.items():
        if name in _RULES:
            rules[spec.extract_task], rules[spec.align_task] = _RULES[name].extract, _RULES[name].align
    return rules


# The holistic pairwise baseline's rule: a summary's worth is the share of the document's words it holds
# times the share of its own words the document holds; the first shown gets a fixed lift (a position bias
# that asking in both orders must cancel), and a tie keeps a fixed share.
PAIR_POSITION_BIAS = 0.4  # logit added for the summary shown first
PAIR_TIE = 0.1


def pair_preference(document: str, first: str, second: str) -> dict[str, float]:
    """P of A (first better), B and tie."""
    def worth(summary: str) -> float:
        return overlap(document, summary) * overlap(summary, document)
    p_first = 1 / (1 + math.exp(-(10 * (worth(first) - worth(second)) + PAIR_POSITION_BIAS)))
    return {holistic_pairwise.FIRST: (1 - PAIR_TIE) * p_first, holistic_pairwise.SECOND: (1 - PAIR_TIE) * (1 - p_first),
            holistic_pairwise.TIE: PAIR_TIE}
