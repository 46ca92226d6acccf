"""Counting a prompt's tokens as the judge's engine will, before its engine starts: each backend
says how (`Backend.token_counter`); this module holds the ways. Imports no engine at module level."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..records import Message


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


def chat_template_ids(tokenizer: Any, messages: Sequence[Message]) -> list[int]:
    """A Hugging Face tokenizer's ids for a chat prompt, as the engines see it: the chat template
    applied (with the generation prompt, or continuing a last message of the assistant's), then the
    text tokenized without adding special tokens again."""
    continues = bool(messages) and messages[-1].role == "assistant"
    text = tokenizer.apply_chat_template([m.model_dump() for m in messages], add_generation_prompt=not continues,
                                         continue_final_message=continues, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


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

    @staticmethod
    def token_counter(config: Any) -> TokenCounter:
        return hugging_face_tokens(config.model)

    def prompt_tokens(self, request: Any) -> int:
        return len(chat_template_ids(self.tokenizer, request.messages))

