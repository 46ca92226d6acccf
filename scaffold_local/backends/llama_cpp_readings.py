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
from .reading_passes import Chunk, plan_passes
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
    """Readings computed part by part. Sequence 0 holds the shared parts of the latest reading (`SharedParts`); a
    reading alone keeps the parts it shares, computes its own shared parts onto them and its last part, the item,
    alone in sequence 1, which is then dropped. A group computed together (`Request.together`) is decoded in the
    passes `plan_passes` fixes for it, over copies of sequence 0. So the cache holds, at the same cells, the same
    values whenever a part is computed, whatever came before it."""

    ITEM_SEQUENCE = 1

    def __init__(self, backend: Engine):
        self.backend = backend
        self.shared = SharedParts(backend)

    def read(self, requests: Sequence[Request]) -> list[Result]:
        """Each request's result, in order: a group computed together (`Request.together`) in one go, the rest alone."""
        groups: dict[str, list[int]] = {}
        for index, request in enumerate(requests):
            if request.together:
                groups.setdefault(request.together, []).append(index)
        alone = [i for i, request in enumerate(requests) if not request.together]
        out: list[Result | None] = [None] * len(requests)
        for members, read in [(alone, self._read_alone), *((m, self._read_together) for m in groups.values())]:
            for i, result in zip(members, read([requests[i] for i in members])):
                out[i] = result
        return out  # type: ignore[return-value]

    def _read_alone(self, requests: Sequence[Request]) -> list[Result]:
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

    def _read_together(self, requests: Sequence[Request]) -> list[Result]:
        """A group's readings in the passes `plan_passes` fixes for the group; a failure fails the group."""
        started = time.perf_counter()
        b = self.backend
        try:
            prompts = [[tuple(p) for p in prompt_parts(b.chat, r)] for r in requests]
            out = [context_overflow(r, sum(map(len, p)), b.config.max_model_len) for r, p in zip(requests, prompts)]
            fitting = [i for i, result in enumerate(out) if result is None]
            logits: dict[int, Any] = {}
            computed: dict[int, int] = {}
            for partition in plan_passes([prompts[i] for i in fitting]):
                computed[partition.members[0]] = self.shared.hold(partition.trunk)
                for chunk in partition.chunks:
                    logits.update(self._chunk(chunk))
                for i, n in partition.computed.items():
                    computed[i] = computed.get(i, 0) + n
        except Exception as exc:  # the group fails together; the cache starts over
            b._forget()
            return error_results(requests, f"{type(exc).__name__}: {exc}")
        latency = round((time.perf_counter() - started) / max(len(fitting), 1), 4)  # the group's time, shared
        for k, i in enumerate(fitting):
            request, total = requests[i], sum(map(len, prompts[i]))
            out[i] = Result(id=request.id, text="", finish_reason="stop", next_token=self._top(
                logits[k], request.sampling.top_logprobs, request.answers), answers_complete=request.answers is not None,
                latency_s=latency, usage=Usage(prompt_tokens=total, completion_tokens=0,
                                               cached_prompt_tokens=total - computed.get(k, 0)))
        return out  # type: ignore[return-value]

    def _chunk(self, chunk: Chunk) -> dict[int, Any]:
        """One chunk's passes over copies of sequence 0; the logits of each reading it computes."""
        import numpy as np

        b, c = self.backend, self.backend._c
        memory = c.llama_get_memory(b.context.ctx)
        for sequence in range(1, chunk.sequences + 1):
            c.llama_memory_seq_cp(memory, 0, sequence, -1, -1)
        read: dict[int, Any] = {}
        try:
            for one in chunk.passes:
                batch = b.batch.batch
                batch.n_tokens = len(one.tokens)
                for i, (token, position, sequences) in enumerate(zip(one.tokens, one.positions, one.sequences)):
                    batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, position, len(sequences)
                    for j, sequence in enumerate(sequences):
                        batch.seq_id[i][j] = sequence
                    batch.logits[i] = i in one.readers
                status = c.llama_decode(b.context.ctx, batch)
                if status != 0:
                    raise RuntimeError(f"llama_decode returned {status}")
                for i, readers in one.readers.items():
                    values = np.ctypeslib.as_array(c.llama_get_logits_ith(b.context.ctx, i), shape=(b.model.n_vocab(),))
                    read.update({reader: values.copy() for reader in readers})
        finally:
            for sequence in range(1, chunk.sequences + 1):
                c.llama_memory_seq_rm(memory, sequence, -1, -1)
        return read

    def _compute(self, parts: list[tuple[int, ...]]) -> tuple[int, Any]:
        """The logits after the last part, and how many tokens were computed for them."""
        c = self.backend._c
        shared, item = parts[:-1], parts[-1]
        computed = self.shared.hold(shared)
        start = sum(len(p) for p in self.shared.parts)
        memory = c.llama_get_memory(self.backend.context.ctx)
        if self.shared.parts:
            c.llama_memory_seq_cp(memory, 0, self.ITEM_SEQUENCE, -1, -1)
        try:
            logits = self.shared.decode(item, self.ITEM_SEQUENCE, start)
        finally:
            c.llama_memory_seq_rm(memory, self.ITEM_SEQUENCE, -1, -1)
        return computed + len(item), logits

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


class SharedParts:
    """Sequence 0: the parts the latest readings share, each computed on its own from an empty cache or restored from
    the saved state of such a computation; long ones (instructions, a document) saved while memory allows."""

    # A part at least this long that later shared parts follow is saved: the instructions, a document, which many
    # summaries share; a summary's own parts are shared by its adjacent readings, which sequence 0 serves.
    SAVED_PART_TOKENS = 128

    def __init__(self, backend: Engine):
        self.backend = backend
        self.parts: list[tuple[int, ...]] = []
        self.saved: dict[tuple[tuple[int, ...], ...], Any] = {}  # shared parts -> the KV state of sequence 0, oldest first
        self.saved_bytes = 0

    def hold(self, shared: list[tuple[int, ...]]) -> int:
        """Sequence 0 holding exactly `shared`, each part computed on its own (or restored); the tokens computed."""
        c, ctx = self.backend._c, self.backend.context.ctx
        memory = c.llama_get_memory(ctx)
        keep = next((n for n, (a, b) in enumerate(zip(self.parts, shared)) if a != b), min(len(self.parts), len(shared)))
        restorable = max((n for n in range(keep + 1, len(shared) + 1) if tuple(shared[:n]) in self.saved), default=None)
        if restorable is not None:
            c.llama_memory_clear(memory, True)
            state = self.saved.pop(tuple(shared[:restorable]))
            self.saved[tuple(shared[:restorable])] = state  # the most recently used
            if c.llama_state_seq_set_data(ctx, state, len(state), 0) != len(state):
                raise RuntimeError("llama_state_seq_set_data could not restore a saved prompt part")
            self.parts = list(shared[:restorable])
        elif keep < len(self.parts):
            c.llama_memory_seq_rm(memory, 0, sum(len(p) for p in self.parts[:keep]), -1)
            self.parts = self.parts[:keep]
        computed = 0
        for n in range(len(self.parts), len(shared)):
            self.decode(shared[n], 0, sum(len(p) for p in self.parts))
            self.parts.append(shared[n])
            computed += len(shared[n])
            if n < len(shared) - 1 and len(shared[n]) >= self.SAVED_PART_TOKENS:  # instructions, a document
                self._save(tuple(self.parts))
        return computed

    def decode(self, tokens: tuple[int, ...], sequence: int, start: int) -> Any:
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
