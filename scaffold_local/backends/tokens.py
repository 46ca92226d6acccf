"""Counting a prompt's tokens as the judge's engine will, before its engine starts: each backend
says how (`Backend.token_counter`); this module holds the ways. Imports no engine at module level."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..records import Message
from .answers import AnswerVocabulary


class TokenCounter(Protocol):
    """Counts a prompt's tokens as the judge's engine will. `exact`: with the judge's own tokenizer
    (or the test double's rule); otherwise an estimate, and `how` says which."""

    exact: bool
    how: str

    def count(self, messages: Sequence[Message]) -> int: ...


def prompt_bytes(messages: Sequence[Message]) -> int:
    return sum(len(m.content.encode("utf-8", "surrogatepass")) for m in messages)


# Above what a chat template adds to a prompt: role markers and special tokens per message, a default
# system prompt or a date line (SmolLM2, Llama 3.1), the generation prompt.
_TEMPLATE_TOKENS = 128
_TOKENS_PER_MESSAGE = 16


def prompt_tokens_at_most(messages: Sequence[Message]) -> int:
    """An upper bound for any byte-level or byte-fallback tokenizer (every token covers at least one
    byte of UTF-8): a prompt under it needs no tokenizer to know that it fits."""
    return prompt_bytes(messages) + _TOKENS_PER_MESSAGE * len(messages) + _TEMPLATE_TOKENS


class EstimatedTokens:
    """Where no tokenizer is at hand (a hosted model): an estimate, meant to err high."""

    exact = False

    def __init__(self, reason: str):
        self.how = f"estimated at 3 bytes of UTF-8 a token, which errs high for most text ({reason})"

    def count(self, messages: Sequence[Message]) -> int:
        return math.ceil(prompt_bytes(messages) / 3) + _TOKENS_PER_MESSAGE * len(messages) + 16


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


class ChatTemplate(Protocol):
    """An engine's chat template and tokenizer: `render` applies the template, with its generation prompt, to a
    conversation; `encode` tokenizes text as the engine does (`first`: the start of the prompt)."""

    def render(self, messages: Sequence[Message]) -> str: ...

    def encode(self, text: str, first: bool) -> list[int]: ...


def prompt_text(chat: ChatTemplate, messages: Sequence[Message]) -> str:
    """The prompt every engine computes: the chat template applied with its generation prompt to every message but
    a last one of the assistant's, whose content (the start of the answer) follows as text. Never the template's own
    continuation of a final message (Hugging Face's `continue_final_message`): with an empty answer it leaves the
    closed turn in the prompt, and a template that trims contents drops an answer's trailing space."""
    answer = messages[-1].content if messages and messages[-1].role == "assistant" else None
    return chat.render(messages[:-1] if answer is not None else messages) + (answer or "")


def prompt_parts(chat: ChatTemplate, request: Any) -> list[list[int]]:
    """A request's prompt tokens: a reading's part by part (`Request.parts`), each part tokenized on its own, as
    llama.cpp computes them; a generation's whole. Every engine sends these tokens, so a reading's prompt is the
    same on all of them."""
    text = prompt_text(chat, request.messages)
    pieces = split_prompt(text, request.messages, request.parts) if request.sampling.reading else [text]
    return [chat.encode(piece, first=i == 0) for i, piece in enumerate(pieces)]


def prompt_ids(chat: ChatTemplate, request: Any) -> list[int]:
    return [token for part in prompt_parts(chat, request) for token in part]


def split_prompt(rendered: str, messages: Sequence[Message], parts: Sequence[tuple[int, int]]) -> list[str]:
    """A rendered prompt cut where each of `parts` starts ((message index, offset in its content), see
    `Request.parts`): each message's content is found in the rendered text in order. A template that does
    not render a content verbatim leaves the prompt whole."""
    starts, at = [], 0
    for message in messages:
        found = rendered.find(message.content, at)
        if found < 0:
            return [rendered]
        starts.append(found)
        at = found + len(message.content)
    cuts = sorted({starts[i] + offset for i, offset in parts if 0 < starts[i] + offset < len(rendered)})
    return [rendered[a:b] for a, b in zip([0, *cuts], [*cuts, len(rendered)])]


class HuggingFaceChat:
    """A Hugging Face tokenizer's chat template and tokenizer (transformers, vLLM, a hosted server's local copy):
    the template writes any special tokens the prompt needs, so none are added when tokenizing."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer

    def render(self, messages: Sequence[Message]) -> str:
        return str(self.tokenizer.apply_chat_template([m.model_dump() for m in messages], add_generation_prompt=True,
                                                      tokenize=False))

    def encode(self, text: str, first: bool) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def chat_template_ids(tokenizer: Any, messages: Sequence[Message]) -> list[int]:
    """A Hugging Face tokenizer's ids for a whole chat prompt (`prompt_text`), as a generation's."""
    chat = HuggingFaceChat(tokenizer)
    return chat.encode(prompt_text(chat, messages), first=True)


def hugging_face_tokens(model: str) -> TokenCounter:
    """transformers, vLLM and Ray: the tokenizer of the model's local folder, loaded on first need."""
    def load() -> Callable[[Sequence[Message]], int]:
        from transformers import AutoTokenizer

        from .weights import resolve_model_path

        tokenizer = AutoTokenizer.from_pretrained(str(resolve_model_path(model)), local_files_only=True)
        return lambda messages: len(chat_template_ids(tokenizer, messages))
    return TokenizerTokens(load)


class HuggingFaceTokenizer:
    """For a backend that loads its model's Hugging Face tokenizer as `self.tokenizer` (transformers,
    vLLM, Ray): counts prompts with it before sending, and with the same rule before starting."""

    tokenizer: Any
    _answer_vocabulary: AnswerVocabulary | None = None

    def answer_vocabulary(self) -> AnswerVocabulary:
        """Every token's text as a reading's alternatives carry it (built on the first exact reading)."""
        if self._answer_vocabulary is None:
            texts = self.tokenizer.batch_decode([[t] for t in range(len(self.tokenizer))])
            self._answer_vocabulary = AnswerVocabulary(texts)
        return self._answer_vocabulary

    @staticmethod
    def token_counter(config: Any) -> TokenCounter:
        return hugging_face_tokens(config.model)

    def prompt_ids(self, request: Any) -> list[int]:
        """The tokens the engine computes for a request (`prompt_parts`)."""
        return prompt_ids(HuggingFaceChat(self.tokenizer), request)

    def prompt_tokens(self, request: Any) -> int:
        return len(self.prompt_ids(request))
