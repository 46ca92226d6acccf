"""Decoding on llama.cpp: each request's JSON schema as a GBNF grammar, the token picker that enforces
it, one request being decoded (its prompt, its picks, its alternatives), and which earlier prompt each
prompt of a group copies its shared prefix from."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .protocol import Request, Result, TokenAlternatives, Usage, covering_text


def bounded_integers(node: Any) -> Any:
    """The schema with every bounded integer (a cited sentence id, 1..n) as the enum of its values: the
    same set of documents, in a form llama-cpp-python's grammar converter enforces (it ignores
    minimum and maximum, so a 3-sentence summary could otherwise be cited at sentence 7)."""
    if isinstance(node, list):
        return [bounded_integers(v) for v in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "integer" and "minimum" in node and "maximum" in node \
            and node["maximum"] - node["minimum"] < 10_000:
        rest = {k: v for k, v in node.items() if k not in ("type", "minimum", "maximum")}
        return {**rest, "enum": list(range(node["minimum"], node["maximum"] + 1))}
    return {k: bounded_integers(v) for k, v in node.items()}


# JSON forbids raw control characters in strings; llama-cpp-python's converter allows them (a model wrote
# a raw newline into a justification: invalid JSON). llama.cpp's own C++ converter has this rule.
_ANY_CHAR = r'char ::= [^"\\] |'
_JSON_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] |'


def json_grammar(schema: dict[str, Any]) -> str:
    """The GBNF grammar of a JSON schema, as llama.cpp enforces it: llama-cpp-python's converter, given
    bounded integers as enums and strings without raw control characters."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    grammar = json_schema_to_gbnf(json.dumps(bounded_integers(schema)))
    return grammar.replace(_ANY_CHAR, _JSON_CHAR)


class Grammars:
    """Each schema's compiled grammar, compiled once (at most 256 kept)."""

    def __init__(self) -> None:
        self._compiled: dict[str, Any] = {}

    def __call__(self, schema: dict[str, Any]) -> Any:
        from llama_cpp import LlamaGrammar

        text = json.dumps(schema, sort_keys=True)
        if text not in self._compiled:
            if len(self._compiled) > 256:
                self._compiled.clear()
            self._compiled[text] = LlamaGrammar.from_string(json_grammar(schema), verbose=False)
        return self._compiled[text]


class TokenPicker:
    """Chooses one sequence's next token under its grammar. The model's own choice is checked against
    the grammar first, and the grammar's mask over the whole vocabulary (150,000 tokens for Qwen, the
    costly part) is applied only when that choice is not allowed, as llama.cpp's own sampler does.
    Greedy at temperature 0, else nucleus sampling with the request's seed."""

    def __init__(self, c: Any, internals: Any, model: Any, grammars: Grammars, request: Request):
        import numpy as np

        self._c, self._np, self.vocab = c, np, model.vocab
        schema = request.json_schema
        grammar = grammars(schema) if schema else None
        self.grammar = c.llama_sampler_init_grammar(self.vocab, grammar._grammar.encode(), grammar._root.encode()) \
            if grammar is not None else None
        s = request.sampling
        self.temperature, self.top_p = s.temperature, s.top_p
        self.rng = np.random.default_rng(s.seed if s.seed is not None else 0)
        self._one = (c.llama_token_data * 1)()
        self._all = internals.LlamaTokenDataArray(n_vocab=model.n_vocab())

    def pick(self, logits: Any) -> int:
        np = self._np
        if self.temperature == 0:
            token = int(logits.argmax())
            if self.grammar is None or self._allowed(token, float(logits[token])):
                return self._accept(token)
        allowed = self._masked(logits) if self.grammar is not None else logits.astype(np.float64)
        if self.temperature == 0:
            return self._accept(int(allowed.argmax()))
        weights = np.exp((allowed - allowed.max()) / self.temperature)
        order = np.argsort(-weights)
        keep = order[: int(np.searchsorted(np.cumsum(weights[order]) / weights.sum(), self.top_p)) + 1]
        return self._accept(int(self.rng.choice(keep, p=weights[keep] / weights[keep].sum())))

    def _allowed(self, token: int, logit: float) -> bool:
        c = self._c
        self._one[0].id, self._one[0].logit, self._one[0].p = token, logit, 0.0
        single = c.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)
        c.llama_sampler_apply(self.grammar, c.byref(single))
        return self._one[0].logit != -math.inf

    def _masked(self, logits: Any) -> Any:
        self._all.copy_logits(logits)
        self._c.llama_sampler_apply(self.grammar, self._c.byref(self._all.candidates))
        masked = self._np.full(len(logits), -math.inf)
        data = self._all.candidates_data[: self._all.candidates.size]
        masked[data.id] = data.logit
        return masked

    def _accept(self, token: int) -> int:
        if self.grammar is not None:
            self._c.llama_sampler_accept(self.grammar, token)
        return token

    def close(self) -> None:
        if self.grammar is not None:
            self._c.llama_sampler_free(self.grammar)
            self.grammar = None


@dataclass
class DecodingSequence:
    """One request being decoded: its prompt, its token picker (grammar, greedy or sampling) and what it wrote."""

    request: Request
    prompt: list[int]
    picker: TokenPicker
    generated: list[int] = field(default_factory=list)
    alternatives: list[dict[int, float]] = field(default_factory=list)
    finish: str | None = None
    batch_index: int = -1  # where its latest logits are in the batch just decoded

    @property
    def position(self) -> int:
        return len(self.prompt) + len(self.generated)


    def sample(self, c: Any, ctx: Any, model: Any) -> None:
        """Pick the next token from the logits of this sequence's latest decoded position."""
        import numpy as np

        s = self
        logits = np.ctypeslib.as_array(c.llama_get_logits_ith(ctx, s.batch_index), shape=(model.n_vocab(),))
        token = s.picker.pick(logits)
        wanted = s.request.sampling.top_logprobs
        if wanted:  # the model's own distribution, before the grammar's mask
            peak = float(logits.max())
            logprobs = logits - (peak + math.log(float(np.exp(logits - peak).sum())))
            top = np.argpartition(logprobs, -wanted)[-wanted:]
            s.alternatives.append({**{int(t): float(logprobs[t]) for t in top}, token: float(logprobs[token])})
        if c.llama_vocab_is_eog(model.vocab, token):
            s.finish = "stop"
            return
        s.generated.append(token)
        if len(s.generated) >= s.request.sampling.max_tokens:
            s.finish = "length"

    def result(self, model: Any, cached: int, elapsed: float) -> Result:
        s = self
        text = model.detokenize(s.generated).decode("utf-8", errors="replace")
        return Result(
            id=s.request.id, text=text, finish_reason=s.finish or "length",
            usage=Usage(prompt_tokens=len(s.prompt), completion_tokens=len(s.generated), cached_prompt_tokens=cached),
            latency_s=elapsed, logprobs=self._alternatives(model, text) if s.alternatives else None,
        )

    def _alternatives(self, model: Any, text: str) -> list[TokenAlternatives]:
        """Each generated token's text (decoded cumulatively, so that characters split over tokens add
        up to the text) and its top alternatives."""
        out, so_far, previous = [], b"", ""
        for token, step in zip(self.generated, self.alternatives):
            so_far += model.detokenize([token])
            now = so_far.decode("utf-8", errors="ignore")
            top: dict[str, float] = {}
            for alternative, logprob in step.items():
                piece = model.detokenize([alternative]).decode("utf-8", errors="replace")
                top[piece] = max(top.get(piece, -math.inf), logprob)
            out.append(TokenAlternatives(text=now[len(previous):], top=top))
            previous = now
        return covering_text(out, text)


def common_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """Tokens all prompts share at the start, leaving each at least one of its own (its logits)."""
    if not prompts:
        return 0
    n = max(min(len(p) for p in prompts) - 1, 0)
    first = prompts[0]
    return next((i for i in range(n) if any(p[i] != first[i] for p in prompts[1:])), n)


KEPT = -1  # a parent that is the prompt kept from the previous group


def prefix_parents(prompts: Sequence[Sequence[int]], kept: Sequence[int] = ()) -> list[tuple[int, int]]:
    """For each prompt, where to copy its longest shared prefix from (an earlier prompt of the group, or
    KEPT: the prompt kept from the previous group; the kept one when as long) and that prefix's length
    (0: computed from scratch)."""
    parents = []
    for k in range(len(prompts)):
        best = (common_prefix([kept, prompts[k]]) if kept else 0, KEPT)
        for j in range(k):
            shared = common_prefix([prompts[j], prompts[k]])
            if shared > best[0]:
                best = (shared, j)
        parents.append((best[1], best[0]) if best[0] else (KEPT, 0))
    return parents


def waves(parents: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Sequences in the order their prompts can be computed: each after the one it copies from."""
    depth: list[int] = []
    for parent, shared in parents:
        depth.append(depth[parent] + 1 if shared and parent != KEPT else 0)
    return [[k for k, d in enumerate(depth) if d == level] for level in range(max(depth, default=-1) + 1)]
