"""Side by side with the tools people use today: one judge server, every tool, the same summaries.

    python3 -m venv .venv-peers && .venv-peers/bin/pip install -r benchmarks/peers-requirements.txt
    .venv/bin/python benchmarks/peers.py --data ../shared/eval-data [--serve qwen2.5-coder-1.5b-vllm-cpu |
        --server http://127.0.0.1:8000/v1 --model NAME] [--documents 2] [--settings 1,8,25]
        [--tools scaffold_local,finesure,geval,deepeval,ragas,scaffold_local_engine] [--out benchmarks/results/peers_cpu]

Starts one OpenAI-compatible server (`scaffold-local serve` with a vLLM config: the CPU judge in float32
by default; on a GPU machine `--serve qwen2.5-coder-1.5b-vllm` (bfloat16), or --server pointed at any
server with a larger judge, e.g. `vllm serve Qwen/Qwen2.5-7B-Instruct`), puts a counting proxy in front of it
(peer_tools/ledger.py), and runs every tool through it on the same REALSumm documents (test half,
seeded), at 1, 8 and 25 summaries per document, one document at a time: judge calls, prompt and
output tokens, wall seconds per summary, the tool's own failures by kind (unparsable outputs,
exceptions) and failed calls, summed over the documents measured. Then
what each measures: its per-summary score against REALSumm's human LitePyramid recall, summary level
(pooled, and the mean of per-document correlations) and system level, and, for the tools that claim
faithfulness, their faithfulness score against FRANK's human factuality (--frank documents), with 95%
intervals from resampling documents. DeepEval and Ragas run in their own environment (--peers-python), offline.
Slow (hours on 2 cores with the 1.5B judge): not in CI. Each finished (tool, setting, document) row is
kept in <out>.rows.jsonl at once, so an interrupted run resumes with the rest and a larger --documents
measures only the documents added (the seeded draw of N documents begins with the draw of fewer);
writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `benchmarks` importable

from benchmarks.peer_tools import tools  # noqa: E402
from benchmarks.peer_tools.ledger import CountingProxy, Tally  # noqa: E402
from scaffold_local.backends.vllm_arguments import served_model_name  # noqa: E402
from scaffold_local.metaeval import OWN_SUMMARIES, PER_DOCUMENT, POOLED, correlation_table, load  # noqa: E402
from scaffold_local.provenance import cpu_info  # noqa: E402
from scaffold_local.runs import ModelConfig  # noqa: E402

TOOLS = ("scaffold_local", "finesure", "geval", "deepeval", "ragas", "scaffold_local_engine")
# "scaffold_local@7": the package under that method version (the served config's own otherwise), side by side


def base_tool(tool: str) -> str:
    """A tool's name without its method version ("scaffold_local@7" -> "scaffold_local")."""
    return tool.split("@", 1)[0]


def known(tool: str) -> bool:
    name, _, version = tool.partition("@")
    return name in TOOLS and (not version or (name.startswith("scaffold_local") and version.isdigit()))
LIBRARIES = {"deepeval", "ragas"}  # run by peer_tools/peer_libraries.py in the peers' environment
WHAT = {  # the score each tool's row correlates with LitePyramid recall
    "scaffold_local": "FC (share of the scaffold's main and supporting facts kept)",
    "finesure": "completeness (share of the given key facts aligned)",
    "geval": "relevance, 1-5",
    "deepeval": "SummarizationMetric: min(alignment, coverage)",
    "ragas": "faithfulness (a faithfulness metric: reported, not expected to track recall)",
    "scaffold_local_engine": "FC, the judge in process (engine start included in its seconds)",
}


# Where each tool that claims faithfulness keeps that score (checked against FRANK's human factuality).
FAITHFULNESS = {
    "scaffold_local": ("extra", "f", "F (share of summary sentences without error)"),
    "finesure": ("extra", "faithfulness", "faithfulness (share of sentences without error)"),
    "deepeval": ("extra", "Alignment", "SummarizationMetric's alignment (claims supported by the source)"),
    "ragas": ("scores", None, "faithfulness"),
}


class JudgeServer:
    """`scaffold-local serve` on a free loopback port, in its own process group."""

    def __init__(self, config: str, log: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        command = [sys.executable, "-m", "scaffold_local.cli", "serve", "-m", config, "--port", str(self.port)]
        self.process = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        self.log = log

    def wait_ready(self, timeout_s: float = 900) -> str:
        """The served model's name, once the server answers."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the judge server exited; see {self.log}")
            try:
                reply = httpx.get(f"{self.base_url}/models", timeout=2)
                if reply.status_code == 200:
                    return reply.json()["data"][0]["id"]
            except httpx.TransportError:
                pass
            time.sleep(2)
        self.stop()
        raise TimeoutError(f"the judge server was not ready after {timeout_s} s; see {self.log}")

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.process.pid, signal.SIGKILL)


def run_library(tool: str, documents: list[dict[str, Any]], base_url: str, model: str, python: str) -> tools.ToolScores:
    """DeepEval or Ragas in the peers' environment; a crash of the whole process is one failure."""
    out = tools.ToolScores()
    with tempfile.TemporaryDirectory(prefix=f"peers-{tool}-") as work:
        job, result = Path(work) / "job.json", Path(work) / "out.json"
        job.write_text(json.dumps({"base_url": base_url, "model": model, "documents": documents}), encoding="utf-8")
        script = Path(__file__).parent / "peer_tools" / "peer_libraries.py"
        done = subprocess.run([python, str(script), tool, str(job), str(result)], capture_output=True, text=True,
                              cwd=work)  # a library's own files (telemetry ids, caches) stay in the temporary folder
        if done.returncode != 0 or not result.is_file():
            out.failures[f"process exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"] += 1
            return out
        data = json.loads(result.read_text(encoding="utf-8"))
    out.scores = {(d, s): v for d, s, v in data["scores"]}
    out.extra = {(d, s): v for d, s, v in data["extra"]}
    out.failures.update(data["failures"])
    out.note = ", ".join(f"{k} {v}" for k, v in data["versions"].items())
    return out


def documents_for(data: Path, n_documents: int, per_document: int) -> list[dict[str, Any]]:
    """REALSumm's test half, seeded: the same documents for every setting, `per_document` summaries each."""
    return load(data, "realsumm", limit=n_documents, split="test", per_document=per_document)


IN_PROCESS = {"scaffold_local_engine"}  # no server: measured after it has stopped (memory for one judge at a time)


def in_process(tool: str) -> bool:
    return base_tool(tool) in IN_PROCESS


def method_of(tool: str) -> int | None:
    _, _, version = tool.partition("@")
    return int(version) if version else None


def measure(tool: str, documents: list[dict[str, Any]], proxy: CountingProxy | None, model: str, setting: int,
            peers_python: str | None, judge_config: str, dataset: str = "realsumm") -> dict[str, Any]:
    label = f"{tool}-{dataset}-{setting}-{'+'.join(d['doc_id'] for d in documents)}"
    url = proxy.url(label) if proxy else ""
    started = time.perf_counter()
    if tool in LIBRARIES:
        if not peers_python:
            return {"tool": tool, "setting": setting, "dataset": dataset, "doc_ids": [d["doc_id"] for d in documents],
                    "skipped": "no --peers-python (see peers-requirements.txt)"}
        scores = run_library(tool, documents, url, model, peers_python)
    elif base_tool(tool) == "scaffold_local":
        scores = tools.scaffold_local(documents, url, model, judge_config, method_of(tool))
    elif base_tool(tool) == "scaffold_local_engine":
        scores = tools.scaffold_local_engine(documents, judge_config, method_of(tool))
    else:
        scores = getattr(tools, tool)(documents, url, model)
    seconds = time.perf_counter() - started
    tally = (proxy.tally(label) if proxy else Tally()).as_dict()
    if scores.counted is not None:  # no HTTP to count: the run's own records
        tally.update(calls=scores.counted["requests"], prompt_tokens=scores.counted["prompt_tokens"],
                     cached_prompt_tokens=scores.counted["cached_prompt_tokens"],
                     completion_tokens=scores.counted["completion_tokens"])
    n = sum(len(d["summaries"]) for d in documents)
    where, key, _ = FAITHFULNESS.get(base_tool(tool), ("", None, ""))
    faithful = ({k: (v or {}).get(key or "") for k, v in scores.extra.items()} if where == "extra" else
                scores.scores if where == "scores" else {})
    return {"tool": tool, "setting": setting, "dataset": dataset, "doc_ids": [d["doc_id"] for d in documents],
            "summaries": n, "wall_s": round(seconds, 1),
            "s_per_summary": round(seconds / n, 2), "calls_per_summary": round(tally["calls"] / n, 2), **tally,
            "tool_failures": dict(scores.failures), "scored": sum(v is not None for v in scores.scores.values()),
            "note": scores.note, "scores": [[d, s, v] for (d, s), v in scores.scores.items()],
            "faithfulness": [[d, s, v] for (d, s), v in faithful.items()],
            **({"stages": scores.stages} if scores.stages else {})}


def combined(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One tool's rows at one setting, one per document, as one: counts summed, per summary over all of them."""
    first = rows[0]
    if any("skipped" in r for r in rows):
        return first
    out: dict[str, Any] = {k: first[k] for k in ("tool", "setting", "dataset", "model", "note")}
    out.update({k: sum(r[k] for r in rows) for k in ("summaries", "wall_s", "calls", "prompt_tokens",
                                                    "completion_tokens", "scored")})
    if all("cached_prompt_tokens" in r for r in rows):  # rows kept before it was counted have none
        out["cached_prompt_tokens"] = sum(r["cached_prompt_tokens"] for r in rows)
    if all("stages" in r for r in rows):
        out["stages"] = {stage: {k: sum(r["stages"][stage][k] for r in rows) for k in first["stages"][stage]}
                         for stage in first["stages"]}
    n = out["summaries"] or 1
    out.update(doc_ids=[d for r in rows for d in r["doc_ids"]], s_per_summary=round(out["wall_s"] / n, 2),
               calls_per_summary=round(out["calls"] / n, 2),
               tool_failures=dict(sum((Counter(r["tool_failures"]) for r in rows), Counter())),
               failures=dict(sum((Counter(r["failures"]) for r in rows), Counter())),
               scores=[x for r in rows for x in r["scores"]], faithfulness=[x for r in rows for x in r["faithfulness"]])
    return out


def largest_per_document(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One tool's scores for agreement: on each document, those of the largest setting measured on it."""
    best: dict[str, dict[str, Any]] = {}
    for r in sorted((r for r in rows if "scores" in r), key=lambda r: r["setting"]):
        best.update({d: r for d in r["doc_ids"]})
    return {"scores": [x for d, r in best.items() for x in r["scores"] if x[0] == d], "documents": len(best),
            "settings": sorted({r["setting"] for r in best.values()})}


def agreement(scores: list[list[Any]], documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Scores against LitePyramid recall: summary level (pooled, per-document mean), system level."""
    human = {(d["doc_id"], s["system"]): s["human"]["litepyramid_recall"] for d in documents for s in d["summaries"]}
    rows = [{"doc_id": d, "system": s, "tool": v, "human": human.get((d, s))} for d, s, v in scores]
    return correlation_table(rows, "tool", "human")


def frank_agreement(row: dict[str, Any], documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool's faithfulness score against FRANK's human factuality of each summary (summary level)."""
    human = {(d["doc_id"], s["system"]): s["human"]["frank_summary_scores"]["Factuality"]
             for d in documents for s in d["summaries"]}
    rows = [{"doc_id": d, "system": s, "tool": v, "human": human.get((d, s))} for d, s, v in row["faithfulness"]]
    return correlation_table(rows, "tool", "human", systems=False)


def ratios_at(rows: list[dict[str, Any]], setting: int = 8, ours_tool: str = "scaffold_local") -> dict[str, float]:
    """Each peer's wall time per summary over `ours_tool`'s at `setting`, on the documents both measured."""
    at = [r for r in rows if r["dataset"] == "realsumm" and r["setting"] == setting and "wall_s" in r]
    ours = {d: r for r in at if r["tool"] == ours_tool for d in r["doc_ids"]}
    out = {}
    for tool in dict.fromkeys(r["tool"] for r in at if r["tool"] != ours_tool):
        theirs = {d: r for r in at if r["tool"] == tool for d in r["doc_ids"]}
        shared = [d for d in theirs if d in ours]
        if shared:  # one row per document: its wall time and summaries are that document's
            mine = sum(ours[d]["wall_s"] for d in shared) / sum(ours[d]["summaries"] for d in shared)
            out[tool] = round(sum(theirs[d]["wall_s"] for d in shared) / sum(theirs[d]["summaries"] for d in shared)
                              / mine, 2)
    return out


def _spearman(table: list[dict[str, Any]], level: str, aggregation: str | None = None) -> str:
    for r in table:
        if r["level"] == level and (aggregation is None or r.get("aggregation", "").startswith(aggregation)):
            if r["spearman"] is None:
                return "undefined"
            documents = r.get("documents", 0)
            over = f"(n={r.get('n', '?')}, {documents} document{'s' * (documents != 1)})"
            if r["spearman_low95"] is None:  # intervals resample documents: one document gives none
                return f"{r['spearman']:.3f} {over}"
            return f"{r['spearman']:.3f} [{r['spearman_low95']:.3f}, {r['spearman_high95']:.3f}] {over}"
    return "-"


def _engine_rates(rows: list[dict[str, Any]]) -> list[str]:
    """The in-process rows' engine time per stage: extraction's generated tokens per second, the judgments' computed
    prompt tokens per second (readings generate nothing)."""
    staged = [r for r in rows if "stages" in r]
    if not staged:
        return []
    lines = ["", "The judge in process, per stage (engine seconds from the run's store):", "",
             "| tool | summaries per document | extraction: engine s, generated tokens, tokens/s | judgments: engine s, "
             "computed prompt tokens, tokens/s, generated tokens |", "| --- | --- | --- | --- |"]
    for r in sorted(staged, key=lambda r: (r["tool"], r["setting"])):
        ex, ju = r["stages"]["extraction"], r["stages"]["judgments"]
        computed = ju["prompt_tokens"] - ju["cached_prompt_tokens"]
        generated_rate = ex["completion_tokens"] / ex["engine_s"] if ex["engine_s"] else 0
        computed_rate = computed / ju["engine_s"] if ju["engine_s"] else 0
        lines.append(f"| {r['tool']} | {r['setting']} | {ex['engine_s']}, {ex['completion_tokens']:,}, "
                     f"{generated_rate:.1f} | {ju['engine_s']}, {computed:,}, {computed_rate:.1f}, "
                     f"{ju['completion_tokens']:,} |")
    return lines


def markdown(result: dict[str, Any]) -> str:
    settings = result["settings"]
    machine = result["machine"]
    per_setting = " / ".join(map(str, settings))
    lines = [f"# Peers on one judge server ({result['model']}; {machine.get('cores')} cores, {machine.get('model')})", "",
             f"`{result['command']}`", "",
             f"| tool | calls per summary | prompt (computed) / output tokens per summary | s per summary at {per_setting} "
             f"summaries per document | documents measured at {per_setting} | failures (tool's own; failed calls) | "
             "Spearman with LitePyramid recall: summary level pooled / per-document mean / system level (each system's "
             "mean over its own summaries) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for tool in result["tools"]:
        rows = {r["setting"]: r for r in result["rows"] if r["tool"] == tool and r["dataset"] == "realsumm"}
        largest = rows[max(rows)] if rows else {}  # calls and tokens: the largest setting measured
        if "skipped" in largest:
            lines.append(f"| {tool} | {largest['skipped']} | | | | | |")
            continue
        n = largest.get("summaries") or 1
        failures = sum(sum(r.get("tool_failures", {}).values()) for r in rows.values())
        failed_calls = sum(sum(r.get("failures", {}).values()) for r in rows.values())
        table = result["agreement"].get(tool, [])
        prompt = largest.get("prompt_tokens", 0)
        computed = f" ({(prompt - largest['cached_prompt_tokens']) / n:.0f})" if "cached_prompt_tokens" in largest else ""
        lines.append(
            f"| {tool} | {largest.get('calls_per_summary', '-')} | "
            f"{prompt / n:.0f}{computed} / {largest.get('completion_tokens', 0) / n:.0f} | "
            + " / ".join(str(rows[s]["s_per_summary"]) if s in rows else "-" for s in settings) + " | "
            + " / ".join(str(len(rows[s]["doc_ids"])) if s in rows else "0" for s in settings)
            + f" | {failures}; {failed_calls} | {_spearman(table, 'summary', POOLED)} / "
            f"{_spearman(table, 'summary', PER_DOCUMENT)} / {_spearman(table, 'system', OWN_SUMMARIES)} |")
    lines += ["", "What each row's score is: " + "; ".join(f"{t}: {WHAT[base_tool(t)]}" for t in result["tools"]) + ". "
              "Calls and tokens per summary: at the largest setting measured; agreement: on each document, the scores "
              "of the largest setting measured on it (" + "; ".join(
                  f"{t} {a['documents']} documents at {'/'.join(map(str, a['settings']))}"
                  for t, a in result["agreement_over"].items()) + "); intervals resample documents. Computed prompt "
              "tokens: those the engine's prefix cache (or llama.cpp's shared prompt parts) did not serve."]
    lines += _engine_rates(result["rows"])
    frank = [r for r in result["rows"] if r["dataset"] == "frank"]
    if frank:
        lines += ["", f"FRANK ({result['frank_documents']} documents, test half): each tool's faithfulness score "
                  "against the human factuality of each summary.", "",
                  "| tool | its faithfulness score | summaries scored | calls per summary | s per summary | failures "
                  "(tool's own; failed calls) | Spearman: pooled / per-document mean |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in frank:
            if "skipped" in r:
                lines.append(f"| {r['tool']} | {r['skipped']} | | | | | |")
                continue
            table = result["frank_agreement"].get(r["tool"], [])
            scored = sum(v is not None for _, _, v in r["faithfulness"])
            lines.append(f"| {r['tool']} | {FAITHFULNESS[base_tool(r['tool'])][2]} | {scored} of {r['summaries']} | "
                         f"{r['calls_per_summary']} | {r['s_per_summary']} | "
                         f"{sum(r['tool_failures'].values())}; {sum(r['failures'].values())} | "
                         f"{_spearman(table, 'summary', POOLED)} / {_spearman(table, 'summary', PER_DOCUMENT)} |")
    for ours, ratios in (result.get("ratios_by_version") or {"scaffold_local": result.get("ratios")}).items():
        if ratios:
            lines += ["", f"Wall time per summary at 8 summaries per document, each peer's over {ours}'s, on the "
                      "documents both measured: " + ", ".join(f"{t} {r}x" for t, r in ratios.items()) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="the evaluation-data folder (realsumm/realsumm.jsonl)")
    parser.add_argument("--serve", default="qwen2.5-coder-1.5b-vllm-cpu", help="a vLLM config to serve")
    parser.add_argument("--server", help="an OpenAI-compatible server's base URL instead of starting one")
    parser.add_argument("--model", help="with --server: the served model's name")
    parser.add_argument("--judge-config", help="the config whose judgment settings scaffold_local uses (method "
                        "version, threshold, limits, budgets) [default: the --serve config]")
    parser.add_argument("--documents", type=int, default=2)
    parser.add_argument("--settings", default="1,8,25", help="summaries per document, comma-separated")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--frank", type=int, default=10, help="FRANK documents for the faithfulness check (0: none)")
    parser.add_argument("--peers-python", default=".venv-peers/bin/python" if Path(".venv-peers/bin/python").exists()
                        else None, help="the Python of the peers' environment (DeepEval, Ragas)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/peers_cpu"))
    parser.add_argument("--table", help="the tools the tables show, measured in this run or before [default: --tools]; "
                        "each cell sums the documents (of the first --documents) measured for it")
    args = parser.parse_args()
    if args.peers_python:  # the tools run in a temporary folder: not a path relative to this one
        args.peers_python = os.path.abspath(args.peers_python)
    chosen = [t for t in dict.fromkeys(args.tools.split(",")) if known(t)]  # in the order given: cheap ones first
    settings = sorted(int(s) for s in args.settings.split(","))

    # Each finished row is kept at once, so an interrupted run resumes with the rows still to measure.
    done_path = args.out.with_suffix(".rows.jsonl")
    done_path.parent.mkdir(parents=True, exist_ok=True)
    done = [json.loads(line) for line in done_path.read_text().splitlines()] if done_path.is_file() else []
    frank = load(args.data, "frank", limit=args.frank, split="test") if args.frank else []
    realsumm = load(args.data, "realsumm", limit=args.documents, split="test")  # every summary's human score
    doc_ids = [d["doc_id"] for d in realsumm]
    todo = [(tool, setting, "realsumm", d) for setting in settings for d in doc_ids for tool in chosen]
    todo += [(tool, 0, "frank", d["doc_id"]) for tool in chosen if tool in FAITHFULNESS for d in frank]
    model = args.model if args.server else served_model_name(ModelConfig.load(args.serve).model)
    rows = [r for r in done if r.get("model") == model and "skipped" not in r]  # a skipped row is tried again
    measured = {(r["tool"], r["setting"], r["dataset"], d) for r in rows for d in r["doc_ids"]}
    todo = [key for key in todo if key not in measured]
    server = None
    if args.server:
        base_url = args.server.rstrip("/")
    elif any(not in_process(tool) for tool, *_ in todo):
        server = JudgeServer(args.serve, args.out.with_suffix(".server.log"))
        base_url, published = server.base_url, server.wait_ready()
        if published != model:
            raise RuntimeError(f"the server publishes {published!r}, not {model!r}")
    else:
        base_url = ""

    drawn = {setting: documents_for(args.data, args.documents, setting) for setting in settings}  # read once

    def run(tool: str, setting: int, dataset: str, doc_id: str, proxy: CountingProxy | None) -> None:
        documents = [d for d in (frank if dataset == "frank" else drawn[setting]) if d["doc_id"] == doc_id]
        print(f"{tool}: {dataset} {doc_id}, {len(documents[0]['summaries'])} summaries ...", file=sys.stderr, flush=True)
        row = {**measure(tool, documents, proxy, model, setting, args.peers_python, args.judge_config or args.serve,
                         dataset), "model": model}
        rows.append(row)
        with done_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")

    try:
        with CountingProxy(base_url) as proxy:
            for tool, setting, dataset, doc_id in todo:
                if not in_process(tool):
                    run(tool, setting, dataset, doc_id, proxy)
    finally:
        if server is not None:
            server.stop()
    for tool, setting, dataset, doc_id in todo:  # the judge in this process, the server's memory given back
        if in_process(tool):
            run(tool, setting, dataset, doc_id, None)

    shown = [t for t in dict.fromkeys(args.table.split(",")) if known(t)] if args.table else chosen
    wanted = {("realsumm", d) for d in doc_ids} | {("frank", d["doc_id"]) for d in frank}
    kept = [r for r in rows if r["tool"] in shown and (r["setting"] in settings or r["dataset"] == "frank")
            and all((r["dataset"], d) in wanted for d in r["doc_ids"])]
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in kept:
        groups.setdefault((r["tool"], r["dataset"], r["setting"]), []).append(r)
    over = {t: largest_per_document([r for r in kept if r["tool"] == t and r["dataset"] == "realsumm"]) for t in shown}
    over = {t: a for t, a in over.items() if a["documents"]}
    result = {
        "command": shlex.join(["python", *sys.argv]), "model": model, "machine": cpu_info(),
        "settings": settings, "tools": shown, "documents": doc_ids,
        "rows": [combined(g) for g in groups.values()],
        "agreement": {t: agreement(a["scores"], realsumm) for t, a in over.items()},
        "agreement_over": {t: {k: a[k] for k in ("documents", "settings")} for t, a in over.items()},
        "frank_documents": args.frank,
        "ratios": ratios_at(kept),
        "ratios_by_version": {t: ratios_at(kept, ours_tool=t) for t in shown
                              if base_tool(t) in ("scaffold_local", "scaffold_local_engine") and "@" in t},
    }
    result["frank_agreement"] = {r["tool"]: frank_agreement(r, frank) for r in result["rows"]
                                 if r["dataset"] == "frank" and "faithfulness" in r}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
