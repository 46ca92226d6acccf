"""A deterministic responder for unit tests: it computes each answer from the request itself.

It reads the structured inputs the prompt was rendered from (`Request.context`) and answers with
simple lexical rules, so a test can work out every metric by hand:

- extraction: each document sentence is a fact, labelled "other" when it starts with a metadata
  word (Published, Posted, Updated, Copyright, Contact), "main point" for the first two remaining
  sentences, else "supporting detail". Each non-other fact yields a question whose expected answer
  is the fact. Entities are capitalised names not at a sentence start (without any, as in
  lower-cased text or a script without case, the longest word; in Chinese and Japanese a run of
  Han characters or of katakana is a word); their attributes are the sentences that mention them.
- alignment: a fact (question) is inferred (answered) when some summary sentence contains at least
  60% (50%) of its content words (`text.content_words`: any script, each Han character a word); an
  entity attribute is preserved when the summary names the entity and some sentence holds 60% of
  the attribute's content words.
- faithfulness: a sentence is faithful when 80% of its content words occur in the document, an
  "entity error" when it has a number the document lacks, else "out-of-context error".
- direct score: faithfulness = hallucination = round(10 x faithful share), completeness =
  round(10 x main facts covered share), understandability = 8; each at least 1.

Sampling noise: at a temperature above 0, a fact or question verdict flips when the SHA-256 of
"<seed>:<doc>/<system>:<item id>" starts with a byte below 64 (about one in four), so reruns with
different seeds disagree the way a sampled judge does, reproducibly.

Test hooks: a summary containing "[[responder:invalid]]" gets malformed JSON, one containing
"[[responder:error]]" gets an engine error. Output longer than max_tokens (4 characters a token)
is cut off with finish_reason "length". Every complete answer is checked against the schema.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from ..records import Message
from ..text import HAN, overlap, split_sentences
from .base import (
    BaseBackend,
    EngineConfig,
    EngineOptions,
    Request,
    Result,
    TokenAlternatives,
    Usage,
    context_overflow,
    validate_json,
)

CHARS_PER_TOKEN = 4
_METADATA = ("published", "posted", "updated", "copyright", "contact")
_EVIDENCE_OPENERS = ('"sentence_ids":[', '"ids":[')


def prompt_tokens(messages: Sequence[Message]) -> int:
    """The responder's tokenizer: 4 characters a token, the count its usage and context checks use
    (so the planner can check a prompt against max_model_len exactly, before sending)."""
    return math.ceil(sum(len(m.content) for m in messages) / CHARS_PER_TOKEN)


def _supporting(sentences: Sequence[str], text: str, threshold: float) -> list[int]:
    return [i for i, s in enumerate(sentences, 1) if overlap(text, s) >= threshold]


class ResponderOptions(EngineOptions):
    """The test double's one setting: a pause per engine call, so tests can overlap two runs."""

    throughput_only: ClassVar[frozenset[str]] = frozenset({"delay_s"})
    delay_s: float = Field(0.0, ge=0, description="seconds to sleep in each generate call")


class ResponderTokens:
    """The test double's own count (4 characters a token): exact for it."""

    exact = True
    how = "counted as the responder counts (4 characters a token)"

    def count(self, messages: Sequence[Message]) -> int:
        return prompt_tokens(messages)


class ResponderBackend(BaseBackend):
    name = "responder"
    engine_options = ResponderOptions

    def __init__(self, config: EngineConfig):
        super().__init__(config)
        self.delay_s = self.options.delay_s

    @staticmethod
    def token_counter(config: EngineConfig) -> ResponderTokens:
        return ResponderTokens()

    def describe(self) -> dict[str, Any]:
        return {"engine": "responder", "structured_outputs": "computed (test double)"}

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        time.sleep(self.delay_s)
        return [self._answer(r) for r in requests]

    def _answer(self, request: Request) -> Result:
        summary = request.context.get("summary", "")
        tokens = prompt_tokens(request.messages)
        overflow = context_overflow(request, tokens, self.config.max_model_len)
        if overflow:
            return overflow
        if "[[responder:error]]" in summary:
            return Result(id=request.id, text=None, finish_reason="error", error="responder: injected engine error",
                          failure="engine_crash")
        if "[[responder:invalid]]" in summary:
            text = '{"broken": '
        else:
            answer = _ANSWERS[request.context["task"]](request.context, request.json_schema or {})
            if request.sampling.temperature > 0:
                answer = _sampling_noise(answer, request)
            if request.json_schema:
                validate_json(answer, request.json_schema)  # a responder bug, not a model error
            text = json.dumps(answer, separators=(",", ":"))
        limit = request.sampling.max_tokens * CHARS_PER_TOKEN
        finish = "length" if len(text) > limit else "stop"
        text = text[:limit]
        usage = Usage(prompt_tokens=tokens, completion_tokens=math.ceil(len(text) / CHARS_PER_TOKEN))
        logprobs = _token_alternatives(text, request) if request.sampling.top_logprobs else None
        return Result(id=request.id, text=text, finish_reason=finish, usage=usage, logprobs=logprobs)


_THRESHOLD = {"align_facts": ("text", 0.6), "align_questions": ("expected_answer", 0.5)}


def _token_alternatives(text: str, request: Request) -> list[TokenAlternatives]:
    """Token log-probabilities for the output, as an engine gives them: at each verdict's deciding
    tokens (the evidence list's first character and the true/false word), P(kept) grows with the
    item's best word overlap with a summary sentence (0.5 at the rule's threshold)."""
    task = request.context["task"]
    p_kept: dict[str, float] = {}
    if task in _THRESHOLD:
        field, threshold = _THRESHOLD[task]
        for item in request.context[task.removeprefix("align_")]:
            best = max((overlap(item[field], s) for s in request.context["sentences"]), default=0.0)
            p_kept[item["id"]] = 1 / (1 + math.exp(-12 * (best - threshold)))
    tokens: list[TokenAlternatives] = []
    item = None
    for piece in re.findall(r'"[A-Z]\d+"|"(?:sentence_ids|ids)":\[|true|false|\]|\d+|[^"tf\]\d]+|.', text):
        top = {piece: 0.0}
        if piece.startswith('"') and piece[1:-1] in p_kept:
            item = piece[1:-1]
        elif item is not None and (piece in ("true", "false") or tokens and tokens[-1].text in _EVIDENCE_OPENERS):
            kept = piece not in ("false", "]")
            p = p_kept[item] if kept == (p_kept[item] >= 0.5) else 1 - p_kept[item]  # noise flipped it
            p = min(max(p, 1e-6), 1 - 1e-6)  # P(kept)
            kept_piece, dropped_piece = ("true", "false") if piece in ("true", "false") else \
                ((piece, "]") if kept else ("1", piece))
            top = {kept_piece: math.log(p), dropped_piece: math.log(1 - p)}
        tokens.append(TokenAlternatives(text=piece, top=top))
    return tokens


def _sampling_noise(answer: dict[str, Any], request: Request) -> dict[str, Any]:
    verdict = {"align_facts": "inferred", "align_questions": "answered"}.get(request.context["task"])
    if verdict is None:
        return answer
    owner = request.id.rsplit("/", 1)[0]  # "<doc>/<system>"
    noisy = {}
    for item_id, v in answer.items():
        if hashlib.sha256(f"{request.sampling.seed}:{owner}:{item_id}".encode()).digest()[0] < 64:
            kept = not v.get(verdict, bool(v.get("ids")))
            v = _cited_verdict("ids" in v, [1] if kept else [], verdict)  # evidence agrees with the verdict
        noisy[item_id] = v
    return noisy


# ---------------------------------------------------------------- answers per task


def _bound(schema: dict[str, Any], *path: str) -> dict[str, Any]:
    node = schema
    for key in path:
        node = node[key]
    return node


def _clip(text: str, max_chars: int) -> str:
    return text[:max_chars]


def _document_facts(document: str) -> list[tuple[str, str]]:
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


def _extract_facts(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    items = _bound(schema, "properties", "facts")
    max_chars = items["items"]["properties"]["fact"]["maxLength"]
    facts = _document_facts(ctx["document"])[: items["maxItems"]]
    return {"facts": [{"fact": _clip(f, max_chars), "label": label} for f, label in facts]}


def _extract_questions(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    items = _bound(schema, "properties", "questions")
    max_chars = items["items"]["properties"]["question"]["maxLength"]
    questions = [
        {
            "question": _clip(f"What does the document state about: {' '.join(fact.split()[:6])}?", max_chars),
            "expected_answer": _clip(fact, max_chars),
            "provenance": f"Sentence {i}",
            "label": label,
        }
        for i, (fact, label) in enumerate(_document_facts(ctx["document"]), 1)
        if label != "other"
    ]
    return {"questions": questions[: items["maxItems"]]}


# A word of a name: a run of Han characters, of katakana, or of letters and digits in any other script
# (hiragana, which spells Japanese grammar, is never one).
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
    items = _bound(schema, "properties", "entities")
    entity = items["items"]["properties"]
    max_attributes = entity["attributes"]["maxItems"]
    max_chars = entity["attributes"]["items"]["properties"]["attribute"]["maxLength"]
    facts = _document_facts(ctx["document"])
    entities = []
    for name in _entity_names(ctx["document"])[: items["maxItems"]]:
        name = _clip(name, entity["name"]["maxLength"])  # still in the sentences that mention it
        attributes = [{"attribute": _clip(f, max_chars), "label": label} for f, label in facts if name in f]
        kind = "other" if "enum" in entity["kind"] else "name"  # method v2 has an enum of kinds
        entities.append({"name": name, "kind": kind,
                         "attributes": attributes[:max_attributes]})
    return {"entities": entities}


def _justify(cited: list[int]) -> str:
    return f"matched sentences {cited}" if cited else "no sentence matches"


def _shapes(verdict_schema: dict[str, Any]) -> list[dict[str, Any]]:
    """A verdict's shapes: one, or (method v2 and later) the citing one and the empty one."""
    return verdict_schema.get("anyOf", [verdict_schema])


def _compact(verdict_schema: dict[str, Any]) -> bool:
    """Method v3's compact verdicts: the evidence list is the verdict, a "why" only beside evidence."""
    return any("why" in shape["properties"] for shape in _shapes(verdict_schema))


def _cited_verdict(compact: bool, cited: list[int], verdict: str) -> dict[str, Any]:
    if compact:
        return {"ids": cited, "why": _justify(cited)} if cited else {"ids": []}
    return {"justification": _justify(cited), "sentence_ids": cited, verdict: bool(cited)}


def _schema_order(verdict: dict[str, Any], verdict_schema: dict[str, Any]) -> dict[str, Any]:
    """A verdict's keys in the order of its schema (a grammar writes them so: method v4 puts the verdict first)."""
    order = next(list(shape["properties"]) for shape in _shapes(verdict_schema) if set(shape["properties"]) == set(verdict))
    return {key: verdict[key] for key in order}


def _align(items: list[dict[str, Any]], sentences: list[str], text_key: str, verdict: str,
           threshold: float, schema: dict[str, Any]) -> dict[str, Any]:
    answer = {}
    for item in items:
        shapes = _shapes(schema["properties"][item["id"]])
        most = max(p["maxItems"] for shape in shapes for k, p in shape["properties"].items() if k in ("sentence_ids", "ids"))
        cited = _supporting(sentences, item[text_key], threshold)[:most]
        answer[item["id"]] = _schema_order(_cited_verdict(_compact(schema["properties"][item["id"]]), cited, verdict),
                                           schema["properties"][item["id"]])
    return answer


def _align_facts(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    return _align(ctx["facts"], ctx["sentences"], "text", "inferred", 0.6, schema)


def _align_questions(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    return _align(ctx["questions"], ctx["sentences"], "expected_answer", "answered", 0.5, schema)


def _align_entities(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    summary = ctx["summary"].lower()
    answer = {}
    for entity in ctx["entities"]:
        named = entity["name"].lower() in summary
        kept = [a["id"] for a in entity["attributes"] if named and _supporting(ctx["sentences"], a["text"], 0.6)]
        why = "named in summary" if named else "not named"
        verdict_schema = schema["properties"][entity["id"]]
        if not _compact(verdict_schema):
            answer[entity["id"]] = _schema_order({"justification": why, "preserved_attribute_ids": kept}, verdict_schema)
        else:
            answer[entity["id"]] = {"kept": kept, "why": why} if kept else {"kept": []}
    return answer


def _sentence_category(sentence: str, document: str) -> str:
    if overlap(sentence, document) >= 0.8:
        return "no error"
    document_numbers = set(re.findall(r"\d+", document))
    if any(n not in document_numbers for n in re.findall(r"\d+", sentence)):
        return "entity error"
    return "out-of-context error"


def _check_faithfulness(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    answer = {}
    for i, sentence in enumerate(ctx["sentences"], 1):
        if f"S{i}" not in schema["properties"]:
            continue  # one sentence per request (method v5): only the one asked about
        category = _sentence_category(sentence, ctx["document"])
        if not _compact(schema["properties"][f"S{i}"]):
            answer[f"S{i}"] = _schema_order({"reason": "lexical check", "category": category}, schema["properties"][f"S{i}"])
        else:
            answer[f"S{i}"] = {"category": category, **({"why": "lexical check"} if category != "no error" else {})}
    return answer


def _direct_score(ctx: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    sentences = ctx["sentences"]
    faithful = sum(_sentence_category(s, ctx["document"]) == "no error" for s in sentences) / max(len(sentences), 1)
    main = [f for f, label in _document_facts(ctx["document"]) if label == "main point"]
    covered = sum(bool(_supporting(sentences, f, 0.6)) for f in main) / max(len(main), 1)
    grade = lambda share: max(1, round(10 * share))  # noqa: E731
    grades = {"rationale": "lexical grades", "faithfulness": grade(faithful), "completeness": grade(covered),
              "understandability": 8, "hallucination": grade(faithful)}
    return {key: grades[key] for key in schema["properties"]}  # in the schema's order, as a grammar would


_ANSWERS = {
    "extract_facts": _extract_facts,
    "extract_questions": _extract_questions,
    "extract_entities": _extract_entities,
    "align_facts": _align_facts,
    "align_questions": _align_questions,
    "align_entities": _align_entities,
    "check_faithfulness": _check_faithfulness,
    "direct_score": _direct_score,
}
