"""Each tool scores the same summaries through the same judge server (via the counting proxy).

A tool takes documents in the shared evaluation shape ({"doc_id", "document", "keyfacts",
"summaries": [{"system", "summary", ...}]}) and the base URL and model name it should use, and
returns one score per summary (None where it gave none) with its own failures by kind: outputs it
could not parse, exceptions it raised, timeouts. Calls and tokens are counted by the proxy, not here.

- scaffold_local: the package itself through its hosted backend (FC: the share of main and supporting
  scaffold facts the summary keeps; FPS beside it), extracting one scaffold per document.
- scaffold_local_engine: the same with the judge in process (the served config's own engine).
- finesure: FineSurE's two calls per summary as its paper and repository describe them (fact checking
  of each summary sentence, key-fact alignment against the document's key facts), completeness =
  share of key facts aligned, faithfulness = share of sentences without error.
- geval: a G-Eval prompt per summary (relevance, 1-5, evaluation steps, form filling), as G-Eval's
  published SummEval prompts; one greedy call instead of G-Eval's 20 samples.
- deepeval, ragas: the libraries themselves (peer_libraries.py, run in their own environment).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from scaffold_local.method import split_sentences


@dataclass
class ToolScores:
    scores: dict[tuple[str, str], float | None] = field(default_factory=dict)  # (doc_id, system) -> score
    extra: dict[tuple[str, str], dict[str, float | None]] = field(default_factory=dict)  # other scores it gives
    failures: Counter[str] = field(default_factory=Counter)  # the tool's own: unparsable outputs, crashes
    note: str = ""
    counted: dict[str, int] | None = None  # calls and tokens from the tool's own records, where no proxy sees them
    stages: dict[str, dict[str, float]] | None = None  # with `counted`: per stage, its tokens and engine seconds


Tool = Callable[[list[dict[str, Any]], str, str], ToolScores]  # (documents, base URL, model) -> scores


# ---------------------------------------------------------------- scaffold_local, through its hosted backend


def scaffold_local(documents: list[dict[str, Any]], base_url: str, model: str, judge_config: str,
                   method: int | None = None) -> ToolScores:
    """The package through its hosted backend, with the judgment settings (method version, decision
    threshold, limits, budgets) of `judge_config`, the config the server serves. Every tool waits up to an
    hour for a call (a slow CPU server answers a long extraction in minutes), so no tool's row is a timeout's."""
    def hosted(work: Path) -> str:
        path = work / "hosted.toml"
        path.write_text(f'extends = "{judge_config}"\nname = "{judge_config}-hosted"\nbackend = "openai"\n'
                        f'model = "{model}"\nstructured_outputs = "server"\n\n[engine]\nbase_url = "{base_url}"\n'
                        'concurrency = 16\nresponse_format = "json_schema"\ntimeout_s = 3600\n', encoding="utf-8")
        return str(path)

    return _score_with_package(documents, hosted, method=method)


def scaffold_local_engine(documents: list[dict[str, Any]], judge_config: str, method: int | None = None) -> ToolScores:
    """The package with its judge in process (the config's own engine, vLLM here): no server, so its
    calls and tokens come from the run's records (`usage`), which the proxy test checks against the wire."""
    return _score_with_package(documents, lambda work: judge_config, count_from_records=True, method=method)


def _score_with_package(documents: list[dict[str, Any]], config_in: Callable[[Path], str],
                        count_from_records: bool = False, method: int | None = None) -> ToolScores:
    from scaffold_local import ModelConfig, Pipeline, load_input
    from scaffold_local.data import EngineRates

    out = ToolScores()
    with tempfile.TemporaryDirectory(prefix="peers-") as folder:
        work = Path(folder)
        rows = [{"doc_id": d["doc_id"], "document": d["document"], "system": s["system"], "summary": s["summary"]}
                for d in documents for s in d["summaries"]]
        path = work / "input.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        pipeline = Pipeline(ModelConfig.load(config_in(work)), work / "store", method=method)
        outcome = pipeline.score(load_input(path))
        if count_from_records:
            rates = EngineRates(work / "store").by_task(pipeline.config.name, pipeline.method.number)
            out.counted, out.stages = _counted(outcome.usage, rates)
        for s in outcome.summaries:
            out.scores[(s.doc_id, s.system)] = s.values.get("fc")
            out.extra[(s.doc_id, s.system)] = {"fps": s.values.get("fps"), "f": s.values.get("f")}
        out.failures.update({f"record {kind}": n for kind, n in outcome.failures.items()})
        if outcome.failed_summaries:
            out.failures["summary not judged"] += len(outcome.failed_summaries)
    return out


def _counted(usage: Any, rates: dict[str, Any]) -> tuple[dict[str, int], dict[str, dict[str, float]]]:
    """A run's calls and tokens from its records, and per stage (extraction, judgments) its tokens and the engine
    seconds its store measured for the stage's tasks (`rates`, by task; extraction's tasks are the `extract_*` ones)."""
    keys = ("requests", "prompt_tokens", "cached_prompt_tokens", "completion_tokens")
    seconds = {"extraction": 0.0, "judgments": 0.0}
    for task, rate in rates.items():
        seconds["extraction" if task.startswith("extract_") else "judgments"] += rate.seconds
    stages = {"extraction": usage.extraction, "judgments": usage.judgments}
    per_stage = {name: {**{k: getattr(stage, k) or 0 for k in keys}, "engine_s": round(seconds[name], 1)}
                 for name, stage in stages.items()}
    return {k: sum(int(stage[k]) for stage in per_stage.values()) for k in keys}, per_stage


# ---------------------------------------------------------------- hand-rolled peers: one chat call, JSON out


def chat(base_url: str, model: str, prompt: str, max_tokens: int = 1024, timeout_s: float = 3600.0) -> str:
    """One chat completion (temperature 0), as a hand-rolled script makes it."""
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "temperature": 0.0,
            "max_tokens": max_tokens}
    reply = httpx.post(f"{base_url}/chat/completions", json=body, timeout=timeout_s)
    reply.raise_for_status()
    return reply.json()["choices"][0]["message"]["content"] or ""


def _prompt(name: str) -> str:
    """A peer's prompt as published (peer_tools/prompts/), filled with str.replace on its {fields}."""
    return (Path(__file__).parent / "prompts" / name).read_text(encoding="utf-8")


def fill(template: str, **fields: Any) -> str:
    """The template with each {field} replaced (the prompts hold JSON examples, so no str.format)."""
    for key, value in fields.items():
        template = template.replace("{" + key + "}", str(value))
    return template


def json_in(text: str) -> Any:
    """The JSON a model wrote, with or without a code fence or words around it (FineSurE's parser
    looks for the outermost brackets the same way)."""
    text = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1)
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    end = max(text.rfind("]"), text.rfind("}"))
    if start < 0 or end < start:
        raise ValueError("no JSON in the output")
    return json.loads(text[start:end + 1])


FINESURE_FACT_CHECK = _prompt("finesure_fact_check.txt")

FINESURE_KEYFACT_ALIGNMENT = _prompt("finesure_keyfact_alignment.txt")


def finesure(documents: list[dict[str, Any]], base_url: str, model: str) -> ToolScores:
    """FineSurE (Song et al., 2024): completeness over the document's given key facts (REALSumm's human
    SCUs, as the paper uses them), faithfulness over summary sentences. An output that does not parse,
    or lists another number of items than asked, gives no score for that call."""
    out = ToolScores(note="key facts given (REALSumm's human SCUs), as FineSurE's paper evaluates")
    for doc in documents:
        keyfacts = doc.get("keyfacts") or []
        for s in doc["summaries"]:
            key = (doc["doc_id"], s["system"])
            sentences = split_sentences(s["summary"])
            numbered = "\n".join(f"{i}. {t}" for i, t in enumerate(sentences, 1))
            faithful: float | None = None
            try:
                verdicts = json_in(chat(base_url, model, fill(
                    FINESURE_FACT_CHECK, document=doc["document"], n=len(sentences), sentences=numbered)))
                categories = [str(v.get("category", "")).lower() for v in verdicts if isinstance(v, dict)]
                if len(categories) != len(sentences):
                    out.failures["fact check: wrong number of sentences"] += 1
                else:
                    faithful = sum(c == "no error" for c in categories) / len(categories)
            except (ValueError, AttributeError, TypeError, httpx.HTTPError) as exc:
                out.failures[f"fact check: {type(exc).__name__}"] += 1
            complete: float | None = None
            if keyfacts:
                try:
                    aligned = json_in(chat(base_url, model, fill(
                        FINESURE_KEYFACT_ALIGNMENT, sentences=numbered, n_keyfacts=len(keyfacts),
                        keyfacts="\n".join(keyfacts))))
                    answers = [str(v.get("response", "")).strip().lower() for v in aligned if isinstance(v, dict)]
                    if len(answers) != len(keyfacts):
                        out.failures["key-fact alignment: wrong number of key facts"] += 1
                    else:
                        complete = sum(a.startswith("yes") for a in answers) / len(answers)
                except (ValueError, AttributeError, TypeError, httpx.HTTPError) as exc:
                    out.failures[f"key-fact alignment: {type(exc).__name__}"] += 1
            out.scores[key] = complete
            out.extra[key] = {"faithfulness": faithful}
    return out


GEVAL_RELEVANCE = _prompt("geval_relevance.txt")


def geval(documents: list[dict[str, Any]], base_url: str, model: str) -> ToolScores:
    """G-Eval's relevance prompt (Liu et al., 2023, its SummEval prompt); the score is the number after
    "Relevance:" in the answer, else its first digit 1-5. Up to 64 tokens: a small model writes a
    sentence before the number ("Based on the evaluation criteria ... Relevance: 4")."""
    out = ToolScores(note="one greedy answer per summary (G-Eval samples 20 and averages)")
    for doc in documents:
        for s in doc["summaries"]:
            try:
                answer = chat(base_url, model, fill(GEVAL_RELEVANCE, document=doc["document"], summary=s["summary"]),
                              max_tokens=64)
            except httpx.HTTPError as exc:
                out.failures[type(exc).__name__] += 1
                continue
            digit = re.search(r"Relevance\W*([1-5])", answer, re.I) or re.search(r"\b([1-5])\b", answer)
            if digit is None:
                out.failures["no score in the answer"] += 1
            out.scores[(doc["doc_id"], s["system"])] = float(digit.group(1)) if digit else None
    return out
