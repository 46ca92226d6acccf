"""Hugging Face transformers engine with outlines enforcing each request's JSON schema.

With transformers_decoding.py (each row held to its grammar and budget, loops stopped), the only module that imports
torch, transformers and outlines to decode. Requests that share a schema and a
token budget (all summaries of one scaffold with equal sentence counts) run as one padded batch
through `model.generate`, with an outlines logits processor built from the configured grammar
engine (xgrammar, outlines_core or llguidance).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from ..provenance import package_versions
from .answers import with_answers
from .base import (
    BackendError,
    BaseBackend,
    EngineOptions,
    context_overflow,
    error_results,
    next_token_alternatives,
)
from .protocol import EngineConfig, Request, Result, TokenAlternatives, Usage
from .tokens import HuggingFaceTokenizer
from .transformers_decoding import (
    Repetition,
    RowwiseConstraint,
    stopped_loop,
)
from .weights import resolve_model_path

GRAMMAR_ENGINES = ("xgrammar", "outlines_core", "llguidance")


class TransformersOptions(EngineOptions):
    throughput_only: ClassVar[frozenset[str]] = frozenset({"batch_size", "threads"})
    dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    device: str = "auto"  # "cpu", "cuda", "cuda:1", or "auto"
    batch_size: int = 8
    threads: int | None = None  # CPU threads for torch; None keeps torch's default


class TransformersBackend(HuggingFaceTokenizer, BaseBackend):
    name = "transformers"
    engine_options = TransformersOptions
    grammar_engines = GRAMMAR_ENGINES
    install = "pip install 'scaffold-local[cpu]' (CPU) or 'scaffold-local[gpu]'"
    reports_steps = True  # one call decodes a whole batch: minutes on CPU

    def __init__(self, config: EngineConfig):
        super().__init__(config)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from a local folder, never a hub
        try:
            import outlines
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
            from transformers.utils import logging as hf_logging
        except ImportError as exc:
            raise self.missing(exc) from None
        self._torch = torch
        hf_logging.disable_progress_bar()  # our own progress bars report the work
        if self.options.threads:
            torch.set_num_threads(self.options.threads)
        auto = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device = auto if self.options.device == "auto" else self.options.device
        self.path = resolve_model_path(config.model)
        self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        self.tokenizer.padding_side = "left"  # decoder-only batches pad on the left
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(
            self.path, dtype=getattr(torch, self.options.dtype), local_files_only=True
        ).to(device).eval()
        self._stop_ids = _eos_ids(self.model, self.tokenizer)
        self._grammar = self._grammar_backend(outlines.from_transformers(self.model, self.tokenizer))

    def _grammar_backend(self, outlines_model: Any) -> Any:
        from outlines.backends import LLGuidanceBackend, OutlinesCoreBackend, XGrammarBackend

        engine = {"xgrammar": XGrammarBackend, "outlines_core": OutlinesCoreBackend, "llguidance": LLGuidanceBackend}
        try:
            return engine[self.config.structured_outputs](outlines_model)
        except ImportError as exc:
            raise BackendError(f"structured_outputs={self.config.structured_outputs!r} needs the package {exc.name}",
                               backend=self.name, hint=f"pip install {exc.name}") from None

    def _logits_processor(self, schema: dict[str, Any]) -> Any:
        """A fresh (stateful) outlines processor for one batch. Compact whitespace is enforced in
        each engine's own way: unbounded JSON whitespace lets a small model pad until max_tokens."""
        compact = self.config.whitespace == "compact"
        engine = self.config.structured_outputs
        if engine == "xgrammar":
            from outlines.backends.xgrammar import XGrammarLogitsProcessor

            # outlines does not pass xgrammar's whitespace switch through, so compile here, with the
            # compiler outlines built (it caches compiled grammars by schema).
            compiled = self._grammar.grammar_compiler.compile_json_schema(json.dumps(schema), any_whitespace=not compact)
            return XGrammarLogitsProcessor(compiled, "torch")
        if engine == "outlines_core":
            return self._grammar.get_json_schema_logits_processor(json.dumps(schema), r"[ ]?" if compact else None)
        if compact:
            schema = {**schema, "x-guidance": {"whitespace_flexible": False}}
        return self._grammar.get_json_schema_logits_processor(json.dumps(schema))

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "transformers",
            "model_path": str(self.path),
            "device": self.device,
            "dtype": self.options.dtype,
            "structured_outputs": f"outlines/{self.config.structured_outputs}",
            "whitespace": self.config.whitespace,
            "versions": package_versions(("torch", "transformers", "outlines", "outlines_core", "xgrammar", "llguidance")),
        }

    def close(self) -> None:
        self.model = None

    # ------------------------------------------------------------ generation

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        """Rows of one `generate` call may carry different schemas and budgets: each row gets its
        own outlines processor and its own token budget, so all summaries of a scaffold (whatever
        their sentence counts) and all judgment tasks decode together."""
        results: list[Result | None] = [None] * len(requests)
        groups: dict[tuple[float, float, int | None], list[int]] = {}
        readings = [i for i, r in enumerate(requests) if r.sampling.reading]
        for index, request in enumerate(requests):
            s = request.sampling
            if not s.reading:
                groups.setdefault((s.temperature, s.top_p, s.seed), []).append(index)
        size = self.options.batch_size
        for start in range(0, len(readings), size):
            chunk = readings[start:start + size]
            try:
                batch = _read_batch(self, [requests[i] for i in chunk])
            except Exception as exc:
                batch = error_results([requests[i] for i in chunk], f"{type(exc).__name__}: {exc}")
            for i, result in zip(chunk, batch):
                results[i] = self.finished(i, result)
        for indices in groups.values():
            for start in range(0, len(indices), size):
                chunk = indices[start : start + size]
                try:
                    batch = self._generate_batch([requests[i] for i in chunk])
                except Exception as exc:  # one failed batch is per-item errors, not a failed run
                    batch = error_results([requests[i] for i in chunk], f"{type(exc).__name__}: {exc}")
                for i, result in zip(chunk, batch):
                    results[i] = self.finished(i, result)
        return results  # type: ignore[return-value]

    def _generate_batch(self, batch: Sequence[Request]) -> list[Result]:
        prompt_ids = [self.prompt_ids(r) for r in batch]
        prompt_lengths = [len(ids) for ids in prompt_ids]
        overflow = [context_overflow(r, n, self.config.max_model_len) for r, n in zip(batch, prompt_lengths)]
        runnable = [i for i, error in enumerate(overflow) if error is None]
        results: list[Result] = [error or Result(id=r.id, text=None, finish_reason="error", error="not run")
                                 for r, error in zip(batch, overflow)]
        if not runnable:
            return results
        rows = [batch[i] for i in runnable]
        encoded = self.tokenizer.pad({"input_ids": [prompt_ids[i] for i in runnable]}, return_tensors="pt").to(self.device)
        prompt_width = encoded["input_ids"].shape[1]
        budgets = [r.sampling.max_tokens for r in rows]
        constraint = RowwiseConstraint(
            [self._logits_processor(r.json_schema) if r.json_schema else None for r in rows], prompt_width, budgets,
            self._stop_ids, self.on_step,
        )
        started = time.perf_counter()
        output = _generate(self, encoded, rows, constraint)
        elapsed = time.perf_counter() - started
        generated = output.sequences[:, prompt_width:].tolist()
        for k, (i, row, budget) in enumerate(zip(runnable, generated, budgets)):
            results[i] = _row_result(self, batch[i], row[:budget], prompt_lengths[i], constraint.repeating.get(k),
                                          output.logits, k, elapsed)
        return results


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    ids = model.generation_config.eos_token_id
    ids = set(ids if isinstance(ids, list) else [ids] if ids is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


def _generated_alternatives(torch: Any, tokenizer: Any, logits: Any, row: int, tokens: list[int],
                            k: int) -> list[TokenAlternatives]:
    """Each generated token of one row with its top-k raw alternatives (log-probabilities)."""
    if not tokens:
        return []
    logprobs = torch.log_softmax(torch.stack([logits[step][row] for step in range(len(tokens))]).float(), dim=-1)
    values, ids = torch.topk(logprobs, k, dim=-1)
    chosen = logprobs[torch.arange(len(tokens)), torch.tensor(tokens)].tolist()
    pieces = tokenizer.batch_decode([[int(t)] for t in ids.reshape(-1)])
    texts = tokenizer.batch_decode([[t] for t in tokens])
    out = []
    for step, text in enumerate(texts):
        top = dict(zip(pieces[step * k : (step + 1) * k], values[step].tolist()))
        top.setdefault(text, chosen[step])
        out.append(TokenAlternatives(text=text, top=top))
    return out


def _generate(backend: TransformersBackend, encoded: Any, rows: Sequence[Request], constraint: RowwiseConstraint) -> Any:
    """One `generate` call for the batch, under the first request's sampling (a batch shares it), each row held
    to its grammar and token budget by `constraint`; raw logits kept where alternatives are asked for."""
    torch = backend._torch
    sampling = rows[0].sampling
    sample = sampling.temperature > 0
    if sampling.seed is not None:
        torch.manual_seed(sampling.seed)
    with torch.inference_mode():
        return backend.model.generate(
            **encoded,
            max_new_tokens=max(r.sampling.max_tokens for r in rows),
            do_sample=sample,
            temperature=sampling.temperature if sample else None,
            top_p=sampling.top_p if sample else None,
            top_k=None,
            logits_processor=[constraint],
            stopping_criteria=[constraint.budget_reached],
            pad_token_id=backend.tokenizer.pad_token_id,
            eos_token_id=sorted(backend._stop_ids),
            return_dict_in_generate=True,
            output_logits=bool(max(r.sampling.top_logprobs for r in rows)),  # raw logits, before the grammar's
        )


def _row_result(backend: TransformersBackend, request: Request, row: list[int], prompt_length: int,
                repeated: Repetition | None, logits: Any, k: int, elapsed: float) -> Result:
    """One row's result: its text up to the stop token (or to where a loop began), and its alternatives."""
    if repeated is not None:
        tokens = row[:repeated.stopped_at]
        return stopped_loop(request, backend.tokenizer.decode(tokens, skip_special_tokens=True), repeated,
                             Usage(prompt_tokens=prompt_length, completion_tokens=len(tokens)), elapsed)
    stop_at = next((n for n, token in enumerate(row) if token in backend._stop_ids), None)
    tokens = row if stop_at is None else row[:stop_at]
    wanted = request.sampling.top_logprobs
    return Result(
        id=request.id,
        text=backend.tokenizer.decode(tokens, skip_special_tokens=True),
        finish_reason="length" if stop_at is None else "stop",
        usage=Usage(prompt_tokens=prompt_length, completion_tokens=len(tokens) + (stop_at is not None)),
        latency_s=round(elapsed, 3),
        logprobs=_generated_alternatives(backend._torch, backend.tokenizer, logits, k, tokens, wanted) if wanted else None,
    )


def _read_batch(backend: TransformersBackend, batch: Sequence[Request]) -> list[Result]:
    """Readings: one forward pass over the padded prompts; each row's top alternatives at its last position."""
    torch = backend._torch
    prompt_ids = [backend.prompt_ids(r) for r in batch]
    results: list[Result | None] = [context_overflow(r, len(ids), backend.config.max_model_len)
                                    for r, ids in zip(batch, prompt_ids)]
    runnable = [i for i, error in enumerate(results) if error is None]
    if runnable:
        encoded = backend.tokenizer.pad({"input_ids": [prompt_ids[i] for i in runnable]},
                                     return_tensors="pt").to(backend.device)
        started = time.perf_counter()
        with torch.inference_mode():
            logits = backend.model(**encoded).logits[:, -1, :]  # padded on the left: the last position is the prompt's
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        elapsed = round(time.perf_counter() - started, 3)
        for row, i in enumerate(runnable):
            chosen = with_answers(torch.topk(logprobs[row], batch[i].sampling.top_logprobs).indices.tolist(),
                                  batch[i].answers, backend.answer_vocabulary, logprobs[row])
            top = next_token_alternatives(zip(backend.tokenizer.batch_decode([[t] for t in chosen]),
                                              logprobs[row, chosen].tolist()))
            results[i] = Result(id=batch[i].id, text="", finish_reason="stop", next_token=top, latency_s=elapsed,
                                answers_complete=batch[i].answers is not None,
                                usage=Usage(prompt_tokens=len(prompt_ids[i]), completion_tokens=0))
    return results  # type: ignore[return-value]
