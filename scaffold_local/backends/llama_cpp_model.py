"""A GGUF model for llama.cpp: the file a config names (an embedded model, verified and assembled once, or a local
path), the model loaded (its weights, or its vocabulary alone), and its own chat template and tokenizer."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ModelFolderError
from .base import BackendError
from .embedded import EMBEDDED_PREFIX, locate_gguf
from .tokens import prompt_text

BACKEND = "llama-cpp"


def gguf_path(model: str) -> Path:
    """A config's `model` as a GGUF file: an embedded model (verified, assembled once) or a path."""
    if model.startswith(EMBEDDED_PREFIX):
        return locate_gguf(model.removeprefix(EMBEDDED_PREFIX))
    path = Path(os.path.expandvars(model)).expanduser()
    if not path.is_file() or path.suffix != ".gguf":
        raise ModelFolderError(f"{path} is not a GGUF file: the llama-cpp backend loads one local .gguf file "
                                "(or an embedded model, 'embedded:<name>')")
    return path


def load_model(path: Path, vocab_only: bool = False) -> Any:
    from llama_cpp import _internals, llama_cpp

    params = llama_cpp.llama_model_default_params()
    params.vocab_only = vocab_only
    try:
        return _internals.LlamaModel(path_model=str(path), params=params, verbose=False)
    except ValueError as exc:
        raise BackendError(f"llama.cpp could not load {path}: {exc}", backend=BACKEND) from None


class ChatTokenizer:
    """A GGUF model's own chat template and tokenizer (a `tokens.ChatTemplate`): the prompt tokens exactly as the
    engine sees them."""

    def __init__(self, model: Any):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = model.metadata().get("tokenizer.chat_template")
        if not template:
            raise BackendError("the GGUF file carries no chat template", backend=BACKEND)
        self.model = model
        self.formatter = Jinja2ChatFormatter(template=template, eos_token=model.token_get_text(model.token_eos()),
                                             bos_token=model.token_get_text(model.token_bos()),
                                             stop_token_ids=[model.token_eos()])
        self.bos_written = True

    @classmethod
    def vocab_only(cls, model: str) -> ChatTokenizer:
        """Without the weights (a fraction of a second): for counting prompt tokens before anything is sent."""
        return cls(load_model(gguf_path(model), vocab_only=True))

    def render(self, messages: Sequence[Any]) -> str:
        formatted = self.formatter(messages=[m.model_dump() for m in messages])
        self.bos_written = bool(formatted.added_special)  # the template wrote the BOS token itself
        return str(formatted.prompt)

    def encode(self, text: str, first: bool) -> list[int]:
        return list(self.model.tokenize(text.encode("utf-8"), add_bos=first and not self.bos_written, special=True))

    def tokens(self, messages: Sequence[Any]) -> list[int]:
        """A whole prompt's tokens (`prompt_text`)."""
        return self.encode(prompt_text(self, messages), first=True)
