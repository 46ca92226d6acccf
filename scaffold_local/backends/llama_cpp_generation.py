"""Generations on llama.cpp: requests of one prefix group (one document) decoded together, up to `parallel`
sequences in one batch per step, every shared prompt prefix computed once (copied from an earlier sequence of the
group, or from the previous group's first prompt, kept in the cache as sequence `keep`)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from .llama_cpp_decoding import KEPT, DecodingSequence, Grammars, TokenPicker, common_prefix, prefix_parents, waves
from .protocol import Request, Result


class Generations:
    """What a generation keeps between groups: the grammars, and the previous group's first prompt (sequence `keep`),
    whose shared start the next group copies (a task's instructions and examples, a document) instead of computing."""

    def __init__(self, backend: Any):
        self.backend = backend
        self.grammars = Grammars()
        self.keep = backend.options.parallel
        self.kept: list[int] = []
        self.kept_group: str | None = None  # the prefix group (document) whose prompt is kept

    def groups(self, runnable: list[tuple[int, list[int]]],
                requests: Sequence[Request]) -> Iterator[list[tuple[int, list[int]]]]:
        """Consecutive requests of one prefix group, at most `parallel` at a time, whose prompts and budgets
        fit the KV cache together (the prefix they share counted once, and the prompt kept for that group)."""
        group: list[tuple[int, list[int]]] = []
        for item in runnable:
            trial = [*group, item]
            owner = requests[trial[0][0]].prefix_group
            shared = common_prefix([p for _, p in trial])
            kept = len(self.kept) if owner == self.kept_group else 0
            need = kept + shared + sum(len(p) - shared + requests[i].sampling.max_tokens for i, p in trial)
            if group and (len(trial) > self.backend.options.parallel or need > self.backend.options.kv_tokens
                          or requests[item[0]].prefix_group != owner):
                yield group
                trial = [item]
            group = trial
        if group:
            yield group

    def decode_together(self, requests: Sequence[Request], prompts: Sequence[list[int]]) -> list[Result]:
        """Decode a group as one batch per step. Prompts first, in waves: a sequence copies the prompt
        prefix it shares with an earlier one (instructions, scaffold, summary) from that sequence's
        cache and computes only the rest, so every shared prefix is computed once. Then one token per
        unfinished sequence per step until all are done."""
        b = self.backend
        c, ctx = b._c, b.context.ctx
        started = time.perf_counter()
        memory = c.llama_get_memory(ctx)
        for k in range(self.backend.options.parallel):
            c.llama_memory_seq_rm(memory, k, -1, -1)
        sequences = [DecodingSequence(r, list(p), TokenPicker(c, b._internals, b.model, self.grammars, r))
                     for r, p in zip(requests, prompts)]
        parents = prefix_parents(prompts, self.kept)
        try:
            for wave in waves(parents):
                for k in wave:
                    parent, shared = parents[k]
                    if shared:
                        c.llama_memory_seq_cp(memory, self.keep if parent == KEPT else parent, k, 0, shared)
                self._feed([(k, t, pos, pos == len(sequences[k].prompt) - 1) for k in wave
                            for pos, t in enumerate(sequences[k].prompt) if pos >= parents[k][1]], sequences)
            while True:
                active = [(k, s) for k, s in enumerate(sequences) if s.finish is None]
                if not active:
                    break
                self._feed([(k, s.generated[-1], s.position - 1, True) for k, s in active], sequences)
        finally:
            for s in sequences:
                s.picker.close()
        c.llama_memory_seq_rm(memory, self.keep, -1, -1)
        c.llama_memory_seq_cp(memory, 0, self.keep, 0, len(prompts[0]))
        self.kept, self.kept_group = list(prompts[0]), requests[0].prefix_group
        elapsed = round(time.perf_counter() - started, 3)
        return [s.result(b.model, parents[k][1], elapsed) for k, s in enumerate(sequences)]

    def _feed(self, tokens: list[tuple[int, int, int, bool]], sequences: list[DecodingSequence]) -> None:
        """Decode (sequence, token, position, wants logits) tokens in batches of at most n_batch; after
        each batch, every sequence whose logits it produced samples its next token."""
        size = self.backend.options.batch_size
        for start in range(0, len(tokens), size):
            part = tokens[start:start + size]
            engine = self.backend
            b = engine.batch.batch
            b.n_tokens = len(part)
            for i, (k, token, position, logits) in enumerate(part):
                b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, position, 1, logits
                b.seq_id[i][0] = k
                if logits:
                    sequences[k].batch_index = i
            status = engine._c.llama_decode(engine.context.ctx, b)
            if status != 0:
                raise RuntimeError(f"llama_decode returned {status}")
            for k, _, _, logits in part:
                if logits:
                    sequences[k].sample(engine._c, engine.context.ctx, engine.model)
