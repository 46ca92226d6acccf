"""Fitting the judge's context before anything is sent: counting prompt tokens as the judge's engine
will, and leaving out the documents whose requests cannot fit."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..config import ModelConfig
from ..data import Candidate, Document, InputIssue, LoadedInput
from ..records import Message

if TYPE_CHECKING:
    from .judge import Judge, PlannedRequest


class TokenCounter(Protocol):
    """Counts a prompt's tokens as the judge's engine will. `exact`: with the judge's own tokenizer
    (or the test double's rule); otherwise an estimate, and `how` says which."""

    exact: bool
    how: str

    def count(self, messages: Sequence[Message]) -> int: ...


def _prompt_bytes(messages: Sequence[Message]) -> int:
    return sum(len(m.content.encode("utf-8", "surrogatepass")) for m in messages)


# Above what a chat template adds to a prompt: role markers and special tokens per message, a default
# system prompt or a date line (SmolLM2, Llama 3.1), the generation prompt.
_TEMPLATE_TOKENS = 128
_TOKENS_PER_MESSAGE = 16


def prompt_tokens_at_most(messages: Sequence[Message]) -> int:
    """An upper bound for any byte-level or byte-fallback tokenizer (every token covers at least one
    byte of UTF-8): a prompt under it needs no tokenizer to know that it fits."""
    return _prompt_bytes(messages) + _TOKENS_PER_MESSAGE * len(messages) + _TEMPLATE_TOKENS


class ResponderTokens:
    """The test double's own count (backends/responder.py: 4 characters a token): exact for it."""

    exact = True
    how = "counted as the responder counts (4 characters a token)"

    def count(self, messages: Sequence[Message]) -> int:
        from ..backends.responder import prompt_tokens

        return prompt_tokens(messages)


class EstimatedTokens:
    """Where no tokenizer is at hand (a hosted model): an estimate, meant to err high."""

    exact = False

    def __init__(self, reason: str):
        self.how = f"estimated at 3 bytes of UTF-8 a token, which errs high for most text ({reason})"

    def count(self, messages: Sequence[Message]) -> int:
        return math.ceil(_prompt_bytes(messages) / 3) + _TOKENS_PER_MESSAGE * len(messages) + 16


class TokenizerTokens:
    """The judge model's own tokenizer and chat template, as the engine applies them. Loaded on the
    first count only: prompts under `prompt_tokens_at_most` never need it. If it cannot be loaded,
    the count is an estimate, labelled."""

    def __init__(self, load: Callable[[], Callable[[Sequence[Message]], int]]):
        self._load_counter = load
        self._counter: Callable[[Sequence[Message]], int] | None = None
        self._fallback: EstimatedTokens | None = None
        self.exact = True
        self.how = "counted with the judge's tokenizer and chat template"

    def count(self, messages: Sequence[Message]) -> int:
        if self._counter is None and self._fallback is None:
            try:
                self._counter = self._load_counter()
            except Exception as exc:  # no tokenizer: estimate, and say so
                self._fallback = EstimatedTokens(f"the judge's tokenizer could not be loaded: {type(exc).__name__}: "
                                                 f"{str(exc)[:200]}")
                self.exact, self.how = False, self._fallback.how
        if self._counter is None:
            assert self._fallback is not None
            return self._fallback.count(messages)
        return self._counter(messages)


def _hugging_face_counter(model: str) -> Callable[[], Callable[[Sequence[Message]], int]]:
    """transformers, vLLM and Ray: the tokenizer of the model's local folder."""
    def load() -> Callable[[Sequence[Message]], int]:
        from transformers import AutoTokenizer

        from ..backends.weights import resolve_model_path

        tokenizer = AutoTokenizer.from_pretrained(str(resolve_model_path(model)), local_files_only=True)

        def count(messages: Sequence[Message]) -> int:
            text = tokenizer.apply_chat_template([m.model_dump() for m in messages], add_generation_prompt=True,
                                                 tokenize=False)
            return len(tokenizer(text, add_special_tokens=False)["input_ids"])
        return count
    return load


def _gguf_counter(model: str) -> Callable[[], Callable[[Sequence[Message]], int]]:
    """llama.cpp: the GGUF file's own vocabulary and chat template, without its weights."""
    def load() -> Callable[[Sequence[Message]], int]:
        from ..backends.llama_cpp import ChatTokenizer

        chat = ChatTokenizer.vocab_only(model)
        return lambda messages: len(chat.tokens(messages))
    return load


def token_counter(config: ModelConfig) -> TokenCounter:
    """How to count this judge's prompt tokens without starting its engine."""
    if config.backend == "responder":
        return ResponderTokens()
    if config.backend in ("transformers", "vllm", "ray"):
        return TokenizerTokens(_hugging_face_counter(config.model))
    if config.backend == "llama-cpp":
        return TokenizerTokens(_gguf_counter(config.model))
    return EstimatedTokens(f"backend {config.backend} has no local tokenizer; the server decides")


_SENTENCE_ENDS = re.compile(r"[.!?;:。！？…\n]")


@dataclass
class ContextFit:
    """What `Judge.fit_context` found: the input without the documents that cannot fit (a copy, its
    issues followed by the new ones), the new issues, and the skipped documents with the reason."""

    loaded: LoadedInput
    issues: list[InputIssue]
    skipped: dict[str, str]  # doc_id -> why


def fit_context(judge: Judge, loaded: LoadedInput, counter: TokenCounter | None = None,
                extraction: bool = True) -> ContextFit:
    """Check, before any request is sent, that every request whose size the input alone decides fits
    the judge's context (prompt + max_tokens <= max_model_len):

    - a document whose extraction prompt cannot fit is skipped, never sent and never truncated: its
      records leave the input and one error issue names it, with the token count and the limit;
    - a summary whose faithfulness check or direct score cannot fit (a long summary of a long
      document) is warned about: it is still scored, and that judgment is recorded as
      context_overflow by the engine without being sent, its metrics undefined with that reason.

    Prompts are counted with the judge's tokenizer where it has one (`token_counter`), only when a
    byte bound does not already show that they fit; an estimate is labelled as one, and skips
    nothing (the server decides). `extraction`: False where the scaffolds come from elsewhere (a
    file, another judge or run), so only the judgments are checked."""
    check = _ContextCheck(judge, counter or token_counter(judge.config), loaded)
    records_of: dict[str, list[Candidate]] = {}
    for c in loaded.candidates:
        records_of.setdefault(c.doc_id, []).append(c)
    issues: list[InputIssue] = []
    skipped: dict[str, str] = {}
    for doc_id, candidates in records_of.items():
        document = loaded.documents[doc_id]
        issue = check.document(document, candidates) if extraction else None
        if issue is not None:
            issues.append(issue)
            if issue.severity == "error":
                skipped[doc_id] = issue.message
                continue
        issues.extend(i for c in candidates for i in check.summary(document, c))
    kept = dataclasses.replace(loaded, candidates=[c for c in loaded.candidates if c.doc_id not in skipped],
                               documents={d: doc for d, doc in loaded.documents.items() if d not in skipped},
                               issues=[*loaded.issues, *issues])
    return ContextFit(loaded=kept, issues=issues, skipped=skipped)


class _ContextCheck:
    """fit_context's two checks: a document's extraction prompts, a summary's judgment prompts."""

    def __init__(self, judge: Judge, counter: TokenCounter, loaded: LoadedInput):
        self.judge, self.counter, self.fields = judge, counter, loaded.fields
        self.limit = judge.config.max_model_len

    def measure(self, planned: PlannedRequest) -> tuple[int, bool] | None:
        """(prompt tokens, exact) when prompt + budget may not fit; None when it surely fits."""
        budget = planned.request.sampling.max_tokens
        if prompt_tokens_at_most(planned.request.messages) + budget <= self.limit:
            return None
        tokens = self.counter.count(planned.request.messages)
        return (tokens, self.counter.exact) if tokens + budget > self.limit else None

    def explain(self, planned: PlannedRequest, tokens: int, exact: bool) -> str:
        budget = planned.request.sampling.max_tokens
        return (f"{planned.task} prompt of {tokens:,} tokens + max_tokens {budget:,} = {tokens + budget:,} "
                f"{'exceeds' if exact else 'may exceed'} the judge's max_model_len {self.limit:,} ({self.counter.how})")

    def document(self, document: Document, candidates: list[Candidate]) -> InputIssue | None:
        """An error (skip the document) or a warning (an estimate only) for its first extraction
        prompt that cannot fit; None when all fit."""
        for planned in self.judge.extraction_requests(document):
            found = self.measure(planned)
            if found is None:
                continue
            tokens, exact = found
            numbers = ", ".join(str(c.record) for c in candidates[:10]) + (", ..." if len(candidates) > 10 else "")
            where = {"record": candidates[0].record, "field": self.fields.document, "doc_id": document.doc_id}
            if exact:
                why = f"document does not fit the judge's context: {self.explain(planned, tokens, exact)}"
                return InputIssue(**where, severity="error", message=(
                    f"{why}; not sent, never truncated: its {len(candidates)} record(s) ({numbers}) are "
                    f"skipped (shorten or split the document, or use a judge with a longer context)"))
            return InputIssue(**where, severity="warning", message=(
                f"document may not fit the judge's context: {self.explain(planned, tokens, exact)}; sent "
                f"anyway: a refusal is recorded as context_overflow for its {len(candidates)} record(s)"))
        return None

    def summary(self, document: Document, c: Candidate) -> list[InputIssue]:
        """Warnings for a summary's fact-check or direct-score prompt that cannot fit (still scored)."""
        judge, limit = self.judge, self.limit
        # A bound first, without splitting the summary: every sentence ends at one of these characters.
        n_most = len(_SENTENCE_ENDS.findall(c.summary)) + 1
        if (len(document.text.encode("utf-8")) + 2 * len(c.summary.encode("utf-8")) + 12 * n_most
                + _judgment_overhead(judge) + max(judge.config.budget.for_items(n_most), judge.config.budget.direct_score)
                <= limit):
            return []
        issues = []
        for planned in judge.plan(None, document, c):  # no scaffold: the requests that do not depend on one
            found = self.measure(planned)
            if found is not None:
                then = ("this judgment is recorded as context_overflow without being sent" if found[1] else
                        "a refusal of this judgment is recorded as context_overflow")
                issues.append(InputIssue(
                    record=c.record, field=self.fields.summary, severity="warning", doc_id=c.doc_id, system=c.system,
                    message=f"judgment {'does' if found[1] else 'may'} not fit the judge's context: "
                            f"{self.explain(planned, *found)}; still scored: {then}, and its metrics are undefined"))
        return issues


def _judgment_overhead(judge: Judge) -> int:
    """Bytes of the faithfulness and direct-score prompts without document and summary (the larger),
    with the chat template's share."""
    if judge.judgment_overhead is None:
        empty = {"document": "", "summary": "", "sentences": [""], "check": 1}  # check: the sentence of a v5 request
        judge.judgment_overhead = max(_prompt_bytes(judge.prompts[t].render(**empty))
                                      for t in ("check_faithfulness", "direct_score")) + prompt_tokens_at_most(())
    return judge.judgment_overhead
