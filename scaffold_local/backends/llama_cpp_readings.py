"""Readings on llama.cpp (`max_tokens` 0): nothing generated, the next-token distribution read after
the prompt, computed part by part so that every prefill is the same computation whatever else is in
the batch, the store or the file."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any, Protocol

from .answers import AnswerSpace, AnswerVocabulary, with_answers
from .base import context_overflow, error_results, next_token_alternatives
from .protocol import EngineConfig, Request, Result, Usage
from .tokens import prompt_parts


class Engine(Protocol):
    """What readings use of the llama.cpp backend: its model, context, batch and chat template."""

    _c: Any
    model: Any
    context: Any
    batch: Any
    chat: Any
    config: EngineConfig
    options: Any

    def _forget(self) -> None: ...

    def answer_vocabulary(self) -> AnswerVocabulary: ...


class Readings:
    """Readings computed part by part. Sequence 0 holds the trunk: the shared parts of the latest reading,
    each computed on its own from an empty cache (or restored from the saved state of such a
    computation); a reading keeps the trunk's parts it shares, drops the rest, computes its own shared
    parts onto it and its last part, the item, alone in sequence 1, which is then dropped. So the cache
    holds, at the same cells, the same values whenever a part is computed, whatever came before it."""

    ITEM_SEQUENCE = 1
    # A part at least this long that later shared parts follow is saved: the instructions, a document, which many
    # summaries share; a summary's own parts are shared by its adjacent readings, which the trunk serves.
    SAVED_PART_TOKENS = 128

    def __init__(self, backend: Engine):
        self.backend = backend
        self.trunk: list[tuple[int, ...]] = []
        self.saved: dict[tuple[tuple[int, ...], ...], Any] = {}  # shared parts -> the KV state of sequence 0, oldest first
        self.saved_bytes = 0

    def read(self, requests: Sequence[Request]) -> list[Result]:
        out = []
        for request in requests:
            started = time.perf_counter()
            try:
                parts = prompt_parts(self.backend.chat, request)
                total = sum(len(p) for p in parts)
                overflow = context_overflow(request, total, self.backend.config.max_model_len)
                if overflow is not None:
                    out.append(overflow)
                    continue
                computed, logits = self._compute([tuple(p) for p in parts])
                out.append(Result(id=request.id, text="", finish_reason="stop", next_token=self._top(
                    logits, request.sampling.top_logprobs, request.answers), answers_complete=request.answers is not None,
                    latency_s=round(time.perf_counter() - started, 4),
                    usage=Usage(prompt_tokens=total, completion_tokens=0, cached_prompt_tokens=total - computed)))
            except Exception as exc:  # one failed reading is its own error; the cache starts over
                self.backend._forget()
                out.extend(error_results([request], f"{type(exc).__name__}: {exc}"))
        return out

    def _compute(self, parts: list[tuple[int, ...]]) -> tuple[int, Any]:
        """The logits after the last part, and how many tokens were computed for them."""
        c, ctx = self.backend._c, self.backend.context.ctx
        memory = c.llama_get_memory(ctx)
        shared, item = parts[:-1], parts[-1]
        keep = next((n for n, (a, b) in enumerate(zip(self.trunk, shared)) if a != b), min(len(self.trunk), len(shared)))
        restorable = max((n for n in range(keep + 1, len(shared) + 1) if tuple(shared[:n]) in self.saved), default=None)
        if restorable is not None:
            c.llama_memory_clear(memory, True)
            state = self.saved.pop(tuple(shared[:restorable]))
            self.saved[tuple(shared[:restorable])] = state  # the most recently used
            if c.llama_state_seq_set_data(ctx, state, len(state), 0) != len(state):
                raise RuntimeError("llama_state_seq_set_data could not restore a saved prompt part")
            self.trunk = list(shared[:restorable])
        elif keep < len(self.trunk):
            c.llama_memory_seq_rm(memory, 0, sum(len(p) for p in self.trunk[:keep]), -1)
            self.trunk = self.trunk[:keep]
        computed = 0
        for n in range(len(self.trunk), len(shared)):
            self._decode(shared[n], 0, sum(len(p) for p in self.trunk))
            self.trunk.append(shared[n])
            computed += len(shared[n])
            if n < len(shared) - 1 and len(shared[n]) >= self.SAVED_PART_TOKENS:  # instructions, a document
                self._save(tuple(self.trunk))
        start = sum(len(p) for p in self.trunk)
        if self.trunk:
            c.llama_memory_seq_cp(memory, 0, self.ITEM_SEQUENCE, -1, -1)
        try:
            logits = self._decode(item, self.ITEM_SEQUENCE, start)
        finally:
            c.llama_memory_seq_rm(memory, self.ITEM_SEQUENCE, -1, -1)
        return computed + len(item), logits

    def _decode(self, tokens: tuple[int, ...], sequence: int, start: int) -> Any:
        """One part at positions start.. of a sequence, in batches of n_batch counted from the part's
        start; a copy of the logits of its last token."""
        import numpy as np

        b = self.backend
        size = b.options.batch_size
        for begin in range(0, len(tokens), size):
            piece = tokens[begin:begin + size]
            batch = b.batch.batch
            batch.n_tokens = len(piece)
            for i, token in enumerate(piece):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, start + begin + i, 1
                batch.seq_id[i][0] = sequence
                batch.logits[i] = begin + i == len(tokens) - 1
            status = b._c.llama_decode(b.context.ctx, batch)
            if status != 0:
                raise RuntimeError(f"llama_decode returned {status}")
        return np.ctypeslib.as_array(b._c.llama_get_logits_ith(b.context.ctx, len(piece) - 1),
                                     shape=(b.model.n_vocab(),)).copy()

    def _save(self, key: tuple[tuple[int, ...], ...]) -> None:
        """The state of sequence 0, kept while the saved states fit their memory (the oldest go first)."""
        import ctypes

        b = self.backend
        size = b._c.llama_state_seq_get_size(b.context.ctx, 0)
        if size > b.options.saved_prefix_bytes or key in self.saved:
            return
        while self.saved and self.saved_bytes + size > b.options.saved_prefix_bytes:
            self.saved_bytes -= len(self.saved.pop(next(iter(self.saved))))
        state = (ctypes.c_uint8 * size)()
        b._c.llama_state_seq_get_data(b.context.ctx, state, size, 0)
        self.saved[key] = state
        self.saved_bytes += size

    def _top(self, logits: Any, k: int, space: AnswerSpace | None) -> dict[str, float]:
        """The k most likely next tokens (log-probabilities, the model's own distribution), by text, and where the
        request names its answers every token of them that is not negligible."""
        import numpy as np

        peak = float(logits.max())
        logprobs = logits - (peak + math.log(float(np.exp(logits - peak).sum())))
        detokenize = self.backend.model.detokenize
        chosen = with_answers([int(token) for token in np.argpartition(logprobs, -k)[-k:]], space,
                              self.backend.answer_vocabulary, logprobs)
        return next_token_alternatives((detokenize([token]).decode("utf-8", errors="replace"), logprobs[token])
                                       for token in chosen)
