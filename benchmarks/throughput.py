"""Throughput, side by side: one generated workload through many configurations in one invocation.

    .venv/bin/python benchmarks/throughput.py [--out benchmarks/results/throughput_cpu] [--data ../shared/eval-data]
                                              [--quick] [--only vllm/xgrammar,transformers]

Workloads (benchmarks/workload.py; seeded, identical in every configuration): news-like documents
of three lengths, each with n summaries; the responder's scaffolds, so every engine is asked about
the same items. `--data` adds REALSumm documents with 16 of their system summaries each.

Engine groups, each in its own process with one engine (the prefix cache is emptied between rows):
- vllm/xgrammar: summaries per scaffold 1, 4, 16, 64 (medium documents); document length short /
  medium / long at 16; scaffold-adjacent vs shuffled order; structured outputs on vs off; method v2
  vs v3 (compact verdicts); batched vs one request at a time; the extraction requests (their cost
  amortised over a document's summaries in the growth rows);
- vllm/guidance, vllm/outlines: the other grammar engines on the 4-per-scaffold workload;
- transformers: the same workload on the transformers engine (outlines-enforced JSON);
- ray, 2 replicas: the same workload on two vLLM replicas under Ray Data's LLM processor;
- responder: the orchestration benchmark (benchmarks/orchestration.py), the package's own time;
- 1.5B llama.cpp, 1.5B vllm/xgrammar, 1.5B transformers: the CPU judge (Qwen2.5-Coder-1.5B) on each
  CPU engine, method v2 and v5, on the same requests (run them with --only).

Every row: summaries/s, prompt and output tokens per summary, output tokens per aligned item, output
tok/s, prefix-cache hit rate, validation failures, peak memory of the engine's processes.
Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import Workload, from_eval_data, generated, responder_scaffolds  # noqa: E402

VLLM, TRANSFORMERS, RAY = "smollm2-135m-vllm", "smollm2-135m-transformers", "smollm2-135m-ray"
# The CPU judge (Qwen2.5-Coder-1.5B) on each CPU engine: llama.cpp from the 4-bit GGUF file, vLLM-CPU and
# transformers from bf16 weights; the same requests in every row.
JUDGE_ENGINES = {"1.5B llama.cpp": "qwen2.5-coder-1.5b-llama-cpp", "1.5B vllm/xgrammar": "qwen2.5-coder-1.5b-vllm",
                 "1.5B transformers": "qwen2.5-coder-1.5b-transformers"}


@dataclass(frozen=True)
class Row:
    name: str
    workload: str  # a key of workloads()
    method: int = 2
    order: str = "adjacent"  # or "shuffled"
    structured: bool = True
    one_at_a_time: bool = False
    extraction: bool = False  # send the workload's extraction requests instead of its judgments


@dataclass(frozen=True)
class Group:
    config: str
    structured_outputs: str | None
    rows: list[Row] = field(default_factory=list)
    engine: dict[str, Any] = field(default_factory=dict)  # engine settings changed from the config's


def workloads(quick: bool, data: Path | None) -> dict[str, Workload]:
    """Two medium documents with 1, 4 and 16 summaries each, one with 64 (the growth rows); two short
    and two long documents with 4 each; two REALSumm documents with 16 summaries each."""
    found = {f"medium x{n}": generated("medium", 2, n) for n in (1, 4, *(() if quick else (16,)))}
    if not quick:
        found["medium x64"] = generated("medium", 1, 64)
    found |= {f"{length} x4": generated(length, 2, 4) for length in ("short", "long")}
    if data is not None:
        found["realsumm x16"] = from_eval_data(data, 1 if quick else 2, 16)
    return found


def groups(quick: bool, data: Path | None) -> dict[str, Group]:
    main = "medium x4" if quick else "medium x16"  # the prefix-cache goal is stated at 16 per scaffold
    growth = (1, 4) if quick else (1, 4, 16, 64)
    rows = [Row(f"per scaffold: {n}", f"medium x{n}") for n in growth]
    rows += [Row("extraction (medium documents)", "medium x1", extraction=True),
             Row("length: short", "short x4"), Row("length: long", "long x4"),
             Row("order: shuffled", main, order="shuffled"),
             Row("structured outputs: off", "medium x4", structured=False),
             Row("method v3 (compact verdicts)", "medium x4", method=3),
             Row("one request at a time", "medium x4", one_at_a_time=True)]
    if data is not None:
        rows += [Row("REALSumm", "realsumm x16"), Row("REALSumm, method v3", "realsumm x16", method=3)]
    other = [Row("per scaffold: 4", "medium x4")]
    judge_rows = [Row("per scaffold: 4, method v2", "medium x4", method=2),
                  Row("per scaffold: 4, method v5 (one item per request)", "medium x4", method=5)]
    return {**{name: Group(config, None, judge_rows) for name, config in JUDGE_ENGINES.items()},
            "vllm/xgrammar": Group(VLLM, "xgrammar", rows),
            # vLLM's CPU default block size: the prefix cache reuses whole blocks only
            "vllm/xgrammar block 128": Group(VLLM, "xgrammar", [Row(f"per scaffold: {main.split('x')[1]}", main)],
                                              engine={"block_size": 128}),
            "vllm/xgrammar no prefix caching": Group(VLLM, "xgrammar", [Row(f"per scaffold: {main.split('x')[1]}", main)],
                                                      engine={"enable_prefix_caching": False}),
            # a KV cache too small to hold every document's prefixes at once (as with thousands of documents on
            # a GPU): where the order decides what the prefix cache can still reuse
            "vllm/xgrammar KV 256 MiB": Group(VLLM, "xgrammar", [
                Row(f"per scaffold: {main.split('x')[1]}", main), Row("order: shuffled", main, order="shuffled")],
                engine={"kv_cache_memory_bytes": 256 << 20}),
            "vllm/guidance": Group(VLLM, "guidance", other),
            "vllm/outlines": Group(VLLM, "outlines", other), "transformers": Group(TRANSFORMERS, None, other),
            # two vLLM replicas under Ray Data on the same two cores: the scale-out path's overhead
            "ray 2 replicas": Group(RAY, "xgrammar", other)}


# ---------------------------------------------------------------- child: one engine, its rows


class PeakMemory:
    """Peak resident memory of this process and its children (vLLM's engine runs in a child)."""

    def __init__(self) -> None:
        import psutil

        self.process, self.peak, self._stop = psutil.Process(), 0, threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            try:
                rss = sum(p.memory_info().rss for p in [self.process, *self.process.children(recursive=True)])
            except Exception:  # a child exiting between listing and reading
                continue
            self.peak = max(self.peak, rss)

    def reset(self) -> None:
        self.peak = 0


def planned_requests(judge: Any, workload: Workload, scaffolds: dict, row: Row) -> list:
    from scaffold_local.judging import prefix_order

    documents = {d.doc_id: d for d in workload.documents}
    if row.extraction:
        planned = [p for d in workload.documents for p in judge.extraction.requests(d)]
    else:
        planned = [p for c in workload.candidates
                   for p in judge.plan(scaffolds[c.doc_id], documents[c.doc_id], c)]
    planned.sort(key=prefix_order)
    if row.order == "shuffled":
        random.Random(0).shuffle(planned)
    return planned


def prefix_cache_ceiling(tokenizer: Any, planned: list, block: int) -> float:
    """The most any prefix cache could hit in this order: the share of prompt tokens in whole blocks
    that an earlier request already had (vLLM's rule: blocks chained by hash, the last token always
    computed), with unlimited cache memory."""
    seen: set[int] = set()
    hit = total = 0
    for p in planned:
        text = tokenizer.apply_chat_template([m.model_dump() for m in p.request.messages], add_generation_prompt=True,
                                             tokenize=False)
        tokens = tokenizer(text, add_special_tokens=False)["input_ids"]
        chain, reused = 0, True
        for start in range(0, (len(tokens) - 1) // block * block, block):
            chain = hash((chain, tuple(tokens[start:start + block])))
            reused = reused and chain in seen
            hit += block if reused else 0
            seen.add(chain)
        total += len(tokens)
    return round(hit / total, 4) if total else 0.0


def measure(backend: Any, judge: Any, planned: list, row: Row, per_call: int, memory: PeakMemory) -> dict:
    import dataclasses

    from scaffold_local.judging import batches

    if not row.structured:  # the same prompts without a grammar: the grammar's cost in tok/s
        planned = [dataclasses.replace(p, request=p.request.model_copy(update={"json_schema": None})) for p in planned]
    reset = getattr(getattr(backend, "llm", None), "reset_prefix_cache", None)
    if reset:
        reset()  # every row starts with an empty prefix cache
    memory.reset()
    started = time.perf_counter()
    results = []
    for batch in ([[p] for p in planned] if row.one_at_a_time else batches(planned, per_call)):
        results += backend.generate([p.request for p in batch])
    seconds = time.perf_counter() - started
    records = [judge.record(p, r) for p, r in zip(planned, results)]
    return summarise(records, planned, seconds, memory.peak)


def summarise(records: list, planned: list, seconds: float, peak_bytes: int) -> dict:
    usage = [r.usage or {} for r in records]
    prompt = sum(u.get("prompt_tokens", 0) for u in usage)
    output = sum(u.get("completion_tokens", 0) for u in usage)
    cached = [u.get("cached_prompt_tokens") for u in usage]
    aligned = [(r, p) for r, p in zip(records, planned) if p.task.startswith("align_")]
    items = sum(len(p.request.context[p.task.removeprefix("align_")]) if p.task != "align_entities" else
                sum(len(e["attributes"]) for e in p.request.context["entities"]) for _, p in aligned)
    summaries = len({(p.doc_id, p.system) for p in planned if p.system is not None})
    return {
        "requests": len(records), "summaries": summaries, "documents": len({p.doc_id for p in planned}),
        "seconds": round(seconds, 2), "summaries_per_s": round(summaries / seconds, 3) if summaries else None,
        "requests_per_s": round(len(records) / seconds, 2), "prompt_tokens": prompt, "output_tokens": output,
        "prompt_tokens_per_summary": round(prompt / summaries, 1) if summaries else None,
        "output_tokens_per_summary": round(output / summaries, 1) if summaries else None,
        "output_tokens_per_s": round(output / seconds, 1),
        "aligned_items": items,
        "output_tokens_per_aligned_item": round(sum((r.usage or {}).get("completion_tokens", 0) for r, _ in aligned)
                                                / items, 2) if items else None,
        "prefix_cache_hit_rate": round(sum(cached) / prompt, 4) if prompt and None not in cached else None,
        "validation_failures": sum(r.validation_error is not None for r in records),
        "cut_at_max_tokens": sum(r.finish_reason == "length" for r in records),
        "engine_errors": sum(r.finish_reason == "error" for r in records),
        "peak_memory_gib": round(peak_bytes / 2**30, 2),
    }


def run_group(name: str, quick: bool, data: Path | None) -> None:
    from scaffold_local.backends import create_backend
    from scaffold_local.judging import Judge
    from scaffold_local.method import method_version
    from scaffold_local.runs import ModelConfig

    group = groups(quick, data)[name]
    config = ModelConfig.load(group.config)
    if group.structured_outputs:
        config = config.model_copy(update={"structured_outputs": group.structured_outputs})
    config = config.model_copy(update={"engine": {**config.engine, **group.engine}})
    loads = workloads(quick, data)
    scaffolds = {key: responder_scaffolds(loads[key], group.config) for key in {r.workload for r in group.rows}}
    memory = PeakMemory()
    started = time.perf_counter()
    backend = create_backend(config)
    print("STARTED " + json.dumps({"engine_start_s": round(time.perf_counter() - started, 1),
                                   "peak_memory_gib": round(memory.peak / 2**30, 2)}), flush=True)
    for row in group.rows:
        judge = Judge(config, method_version(row.method))
        planned = planned_requests(judge, loads[row.workload], scaffolds[row.workload], row)
        result = measure(backend, judge, planned, row, config.requests_per_call, memory)
        tokenizer = getattr(backend, "tokenizer", None)
        if result["prefix_cache_hit_rate"] is not None and tokenizer is not None:
            result["prefix_cache_ceiling"] = prefix_cache_ceiling(tokenizer, planned, backend.block_size)
        print("RESULT " + json.dumps({"row": row.name, "workload": loads[row.workload].name, **result}), flush=True)
    backend.close()


# ---------------------------------------------------------------- parent: every group, then the table


def run_child(name: str, args: argparse.Namespace) -> list[dict]:
    command = [sys.executable, __file__, "--group", name, *(["--quick"] if args.quick else []),
               *(["--data", str(args.data)] if args.data else [])]
    # Own process group, so that a hung engine's workers are killed with it.
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    rows: list[dict] = []
    started = time.monotonic()
    timer = threading.Timer(args.timeout, lambda: os.killpg(child.pid, signal.SIGKILL))
    timer.start()
    assert child.stdout is not None
    for line in child.stdout:  # rows arrive as they finish: a timeout keeps the finished ones
        if line.startswith(("RESULT ", "STARTED ")):
            kind, payload = line.split(" ", 1)
            rows.append({"group": name, **({"row": "engine start"} if kind == "STARTED" else {}), **json.loads(payload)})
            print(f"{name:15} {json.dumps(rows[-1])}", flush=True)
    child.wait()
    timer.cancel()
    if child.returncode != 0:
        stderr = child.stderr.read() if child.stderr else ""
        why = f"killed after {args.timeout} s" if time.monotonic() - started >= args.timeout else stderr[-600:]
        rows.append({"group": name, "row": "error", "error": why})
        print(f"{name:15} error: {why}", flush=True)
    return rows


def orchestration_row(quick: bool) -> dict:
    import orchestration

    docs, systems = (50, 8) if quick else (500, 8)
    measured = orchestration.measure(docs, systems)
    return {"group": "responder", "row": f"orchestration, {docs} docs x {systems}", **measured}


def ratios(rows: list[dict]) -> dict[str, Any]:
    """The side-by-side figures the README states goals for."""
    by = {(r["group"], r["row"]): r for r in rows if "error" not in r}
    xg = lambda row: by.get(("vllm/xgrammar", row), {})  # noqa: E731
    four = xg("per scaffold: 4")
    sixteen = xg("per scaffold: 16") or four  # --quick has no 16

    def ratio(a: dict, b: dict, key: str) -> float | None:
        return round(a[key] / b[key], 3) if a.get(key) and b.get(key) else None

    unstructured = ratio(four, xg("structured outputs: off"), "output_tokens_per_s")
    return {
        "prefix_cache_hit_rate_at_16": sixteen.get("prefix_cache_hit_rate"),
        "prefix_cache_hit_rate_at_16_block_128": by.get(("vllm/xgrammar block 128", "per scaffold: 16"), {}).get(
            "prefix_cache_hit_rate"),
        "shuffled_vs_adjacent_summaries_per_s": ratio(xg("order: shuffled"), sixteen, "summaries_per_s"),
        "shuffled_vs_adjacent_summaries_per_s_small_kv_cache": ratio(
            by.get(("vllm/xgrammar KV 256 MiB", "order: shuffled"), {}),
            by.get(("vllm/xgrammar KV 256 MiB", "per scaffold: 16"), {}), "summaries_per_s"),
        "prefix_caching_on_vs_off_summaries_per_s": ratio(
            sixteen, by.get(("vllm/xgrammar no prefix caching", "per scaffold: 16"), {}), "summaries_per_s"),
        "grammar_overhead_in_output_tok_per_s": round(1 - unstructured, 3) if unstructured else None,
        "v3_vs_v2_output_tokens_per_aligned_item": ratio(xg("method v3 (compact verdicts)"), four,
                                                         "output_tokens_per_aligned_item"),
        "batched_vs_one_at_a_time_requests_per_s": ratio(four, xg("one request at a time"), "requests_per_s"),
        "vllm_vs_transformers_summaries_per_s": ratio(four, by.get(("transformers", "per scaffold: 4"), {}),
                                                      "summaries_per_s"),
        "ray_2_replicas_vs_one_engine_summaries_per_s": ratio(by.get(("ray 2 replicas", "per scaffold: 4"), {}), four,
                                                              "summaries_per_s"),
        **{f"cpu_judge_llama_cpp_vs_{other}_summaries_per_s_method_v{m}": ratio(
            by.get(("1.5B llama.cpp", row), {}), by.get((f"1.5B {group}", row), {}), "summaries_per_s")
           for other, group in (("vllm", "vllm/xgrammar"), ("transformers", "transformers"))
           for m, row in ((2, "per scaffold: 4, method v2"), (5, "per scaffold: 4, method v5 (one item per request)"))},
    }


def amortise(rows: list[dict]) -> None:
    """Growth rows: add the extraction's prompt and output tokens, spread over each document's summaries."""
    extraction = next((r for r in rows if r.get("row") == "extraction (medium documents)"), None)
    if not extraction:
        return
    for r in rows:
        if r["group"] == "vllm/xgrammar" and r.get("row", "").startswith("per scaffold:") and r.get("summaries"):
            docs = r["documents"]
            per_doc = lambda key: extraction[key] / extraction["documents"]  # noqa: E731
            r["prompt_tokens_per_summary_with_extraction"] = round(
                (r["prompt_tokens"] + docs * per_doc("prompt_tokens")) / r["summaries"], 1)
            r["output_tokens_per_summary_with_extraction"] = round(
                (r["output_tokens"] + docs * per_doc("output_tokens")) / r["summaries"], 1)


COLUMNS = [("summaries/s", "summaries_per_s"), ("prompt tok/summary", "prompt_tokens_per_summary"),
           ("+ extraction share", "prompt_tokens_per_summary_with_extraction"),
           ("output tok/summary", "output_tokens_per_summary"),
           ("+ extraction share", "output_tokens_per_summary_with_extraction"),
           ("output tok/aligned item", "output_tokens_per_aligned_item"), ("output tok/s", "output_tokens_per_s"),
           ("prefix-cache hits", "prefix_cache_hit_rate"), ("ceiling", "prefix_cache_ceiling"),
           ("invalid", "validation_failures"),
           ("cut off", "cut_at_max_tokens"), ("peak GiB", "peak_memory_gib"), ("s", "seconds")]


def markdown(rows: list[dict], summary: dict, commands: list[str]) -> str:
    lines = [*(f"`{c}`  " for c in commands), "", "| engine | configuration | workload | requests | "
             + " | ".join(c for c, _ in COLUMNS) + " |", "|" + " --- |" * (4 + len(COLUMNS))]
    for r in rows:
        if r["group"] == "responder" or r.get("row") == "engine start":
            continue
        if "error" in r:
            lines.append(f"| {r['group']} | {r['row']} | error: {r['error'][:120]} |")
            continue
        cells = [r.get(key) for _, key in COLUMNS]
        lines.append(f"| {r['group']} | {r['row']} | {r['workload']} | {r['requests']} | "
                     + " | ".join("" if c is None else f"{c:.1%}" if k.startswith("prefix_cache") else str(c)
                                  for c, (_, k) in zip(cells, COLUMNS)) + " |")
    starts = [r for r in rows if r.get("row") == "engine start"]
    lines += ["", "Engine start: " + ", ".join(f"{r['group']} {r['engine_start_s']} s" for r in starts)]
    orchestration = next((r for r in rows if r["group"] == "responder"), None)
    if orchestration:
        lines += ["", f"Orchestration ({orchestration['row']}, responder backend): "
                      f"{orchestration['first_run_package_ms_per_request']} ms of the package's own time per "
                      f"request; rerun of the finished run as a command {orchestration['rerun_cli_s']} s."]
    lines += ["", "Side by side: " + ", ".join(f"{k} = {v}" for k, v in summary.items())]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="write <out>.json and <out>.md")
    parser.add_argument("--data", type=Path, help="eval-data folder holding realsumm/ (e.g. ../shared/eval-data)")
    parser.add_argument("--quick", action="store_true", help="small workloads: checks the harness in minutes")
    parser.add_argument("--only", help="comma-separated engine groups, or 'responder' (default: all)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per engine group")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other groups' rows of an earlier <out>.json (rerun some groups only)")
    parser.add_argument("--group", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.group:
        run_group(args.group, args.quick, args.data)
        return
    known = [*groups(args.quick, args.data), "responder"]
    names = [n.strip() for n in args.only.split(",")] if args.only else [n for n in known if n not in JUDGE_ENGINES]
    if unknown := [n for n in names if n not in known]:
        parser.error(f"unknown group(s) {', '.join(unknown)}; known: {', '.join(known)}")
    rows: list[dict] = []
    commands = ["python benchmarks/throughput.py " + shlex.join(sys.argv[1:])]
    if args.merge and args.out and args.out.with_suffix(".json").is_file():
        earlier = json.loads(args.out.with_suffix(".json").read_text())
        rows = [r for r in earlier["rows"] if r["group"] not in names]
        commands = [*earlier["commands"], *commands]
    for name in names:
        rows += [orchestration_row(args.quick)] if name == "responder" else run_child(name, args)
    rows.sort(key=lambda r: known.index(r["group"]) if r["group"] in known else len(known))  # stable: rows keep their order
    amortise(rows)
    summary = ratios(rows)
    table = markdown(rows, summary, commands)
    print(table)
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps({"commands": commands, "rows": rows, "summary": summary},
                                                            indent=1))
        args.out.with_suffix(".md").write_text(table)


if __name__ == "__main__":
    main()
