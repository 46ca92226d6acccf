"""A deterministic responder for unit tests: it computes each answer from the request itself.

It reads the structured inputs the prompt was rendered from (`Request.context`) and answers with
lexical rules (responder_rules.py, where a view registered from outside adds its own), so a test can
work out every metric by hand:

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
- readings (method version 7): P(true) of a verdict grows with the same overlaps (0.5 at the rule's
  threshold); a kept item's sentence is its best-overlapping one; an unsupported sentence's category
  is the faithfulness rule's; a grade is the direct-score rule's (0.8) or one below it (0.2). Numbers
  come one digit a token (as Qwen writes them: `1` then `0`), words with the space before them.
- holistic pairwise: P(A), P(B), P(tie) from each summary's worth (document words it holds x its own
  words the document holds), the summary shown first lifted by a fixed position bias, a tie 0.1.

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

from ..method import holistic_pairwise
from ..method.text import overlap
from ..method.versions import NO_ERROR
from ..method.views import VIEW_SPECS, judgment_kind, labelling, verdict_field
from ..records import Message
from .base import BaseBackend, EngineOptions, context_overflow, validate_json
from .protocol import EngineConfig, Request, Result, TokenAlternatives, Usage
from .responder_reading import cited_verdict, sentence_category
from .responder_rules import direct_score_grades, p_main, pair_preference, task_rules, view_rules

CHARS_PER_TOKEN = 4
_EVIDENCE_OPENERS = ('"sentence_ids":[', '"ids":[')


def prompt_tokens(messages: Sequence[Message]) -> int:
    """The responder's tokenizer: 4 characters a token, the count its usage and context checks use
    (so the planner can check a prompt against max_model_len exactly, before sending)."""
    return math.ceil(sum(len(m.content) for m in messages) / CHARS_PER_TOKEN)


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
        return [self._answer(r) for r in requests]  # all at once, as the call returns (tests wrap the results)

    def _answer(self, request: Request) -> Result:
        summary = request.context.get("summary", "")
        tokens = prompt_tokens(request.messages)
        overflow = context_overflow(request, tokens, self.config.max_model_len)
        if overflow:
            return overflow
        if request.sampling.reading:
            return Result(id=request.id, text="", finish_reason="stop", next_token=_reading(request.context),
                          answers_complete=request.answers is not None,  # its alternatives hold every answer
                          usage=Usage(prompt_tokens=tokens, completion_tokens=0))
        if "[[responder:error]]" in summary:
            return Result(id=request.id, text=None, finish_reason="error", error="responder: injected engine error",
                          failure="engine_crash")
        if "[[responder:invalid]]" in summary:
            text = '{"broken": '
        elif request.json_schema is None:  # free text: a justification asked for on demand, closed as JSON would
            text = f'{_why(request.context)}"}}'
        else:
            answer = task_rules()[request.context["task"]](request.context, request.json_schema or {})
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


def _token_alternatives(text: str, request: Request) -> list[TokenAlternatives]:
    """Token log-probabilities for the output, as an engine gives them: at each verdict's deciding
    tokens (the evidence list's first character and the true/false word), P(kept) grows with the
    item's best word overlap with a summary sentence (0.5 at the rule's threshold)."""
    task = request.context["task"]
    p_kept: dict[str, float] = {}
    view = judgment_kind(task) or ""
    rules = view_rules(view)
    if rules is not None and rules.p_kept is not None:
        for item in request.context[view]:
            p_kept[item["id"]] = rules.p_kept(item, request.context["sentences"])
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


def _reading(ctx: dict[str, Any]) -> dict[str, float]:
    """A reading's next tokens, computed from the request: the answers' probabilities by the views' rules,
    spelled as an engine's tokens (digits one at a time, words after their space)."""
    if ctx["task"] == holistic_pairwise.TASK:  # the answers are the tokens: A, B, tie
        preference = pair_preference(ctx["document"], ctx["first"], ctx["second"])
        return {answer: math.log(probability) for answer, probability in preference.items()} | {' "': math.log(0.01)}
    if ctx["task"] == labelling.MAIN_TASK:
        yes = p_main(ctx)
        return {"Yes": math.log(yes), "No": math.log(1 - yes), "The": math.log(0.01)}
    reading, task, sentences = ctx["reading"], ctx["task"], ctx["sentences"]
    key, after = reading["key"], reading["after"]
    view = judgment_kind(task.split(":", 1)[-1]) or ""  # a prior reading ("prior:align_facts") reads as its view's
    spec, rules = VIEW_SPECS.get(view), view_rules(view)
    p: dict[str, float]
    if spec is not None and spec.reading is not None and key == spec.reading.field:
        p = _yes(rules.p_true(ctx["item"], sentences) if rules is not None and rules.p_true is not None else 0.5)
    elif key == "supported":
        p = _yes(1 / (1 + math.exp(-12 * (overlap(sentences[ctx["check"] - 1], ctx["document"]) - 0.8))))
    elif key == "sentence_ids":
        text = ctx["item"].get("text") or ctx["item"].get("expected_answer", "")
        best = max(range(len(sentences)), key=lambda i: overlap(text, sentences[i]))
        p = {str(best + 1): 1.0}
    elif key == "category":
        found = sentence_category(sentences[ctx["check"] - 1], ctx["document"])
        p = {found if found != NO_ERROR else "other error": 1.0}
    else:  # a direct-score axis
        grade = direct_score_grades(ctx, {"properties": {key: {}}})[key]
        p = {str(grade): 0.8, str(grade - 1 if grade > 1 else grade + 1): 0.2}
    if reading["answers"] == ["yes", "no"]:  # a plain question: answered the way chat models begin, capitalised
        return {"Yes": math.log(p["true"]), "No": math.log(p["false"]), "The": math.log(0.01)}
    top: dict[str, float] = {}
    if after and not any(answer.startswith(after) for answer in p):  # a continuation no answer needs
        p = {after: 0.5, f"{after}0": 0.5}
    for answer, probability in p.items():
        if not answer.startswith(after):
            continue
        rest = answer[len(after):]
        token = (rest[:1] or ",") if answer.isdigit() else f" {rest}" if rest in ("true", "false") else \
            re.match(r"[a-z]*", rest).group()  # type: ignore[union-attr]
        top[token] = math.log(math.exp(top.get(token, -math.inf)) + probability)
    return {**top, ' "': math.log(0.01)}  # a token that is no answer, as engines list them


def _why(ctx: dict[str, Any]) -> str:
    """A justification computed from the request: the item's best word overlap with a summary sentence."""
    item = ctx.get("item") or {}
    text = item.get("text") or item.get("expected_answer") or ""
    best = max((overlap(text, s) for s in ctx.get("sentences", [])), default=0.0)
    return f"the best summary sentence holds {best:.0%} of its words"


def _yes(p: float) -> dict[str, float]:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return {"true": p, "false": 1 - p}


def _sampling_noise(answer: dict[str, Any], request: Request) -> dict[str, Any]:
    verdict = verdict_field(request.context["task"])
    if verdict is None:
        return answer
    owner = request.id.rsplit("/", 1)[0]  # "<doc>/<system>"
    noisy = {}
    for item_id, v in answer.items():
        if hashlib.sha256(f"{request.sampling.seed}:{owner}:{item_id}".encode()).digest()[0] < 64:
            kept = not v.get(verdict, bool(v.get("ids")))
            v = cited_verdict("ids" in v, [1] if kept else [], verdict)  # evidence agrees with the verdict
        noisy[item_id] = v
    return noisy
