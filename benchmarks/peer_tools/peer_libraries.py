"""DeepEval's SummarizationMetric and Ragas' faithfulness, run in their own environment
(benchmarks/peers-requirements.txt), offline, against one OpenAI-compatible server.

    <peers-python> benchmarks/peer_tools/peer_libraries.py deepeval|ragas JOB.json OUT.json

JOB.json: {"base_url", "model", "documents": [{"doc_id", "document", "summaries": [{"system", "summary"}]}]}.
OUT.json: {"scores": [[doc_id, system, score or null]], "extra": [[doc_id, system, {...}]],
"failures": {kind: count}, "versions": {...}}. Imports nothing of scaffold_local (the peers' pins
differ from the package's).

- DeepEval: its documented custom-model interface (a DeepEvalBaseLLM subclass) with the output
  confined to DeepEval's own pydantic schema by the server's structured outputs (DeepEval's "JSON
  confinement for custom LLMs"): the best chance a small judge has. A new metric per document (it
  keeps its assessment questions from one measure to the next). Score: min(alignment, coverage).
- Ragas: `ragas.metrics.collections.Faithfulness` with `llm_factory` over an AsyncOpenAI client (its
  documented route to an OpenAI-compatible endpoint), the document as the one retrieved context.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from typing import Any

# Offline: no telemetry, no .env files, no update check (set before the libraries are imported).
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
os.environ.setdefault("DEEPEVAL_UPDATE_WARNING_OPT_IN", "0")
os.environ.setdefault("DEEPEVAL_DISABLE_TIMEOUTS", "1")  # CPU calls on long documents take minutes
os.environ["RAGAS_DO_NOT_TRACK"] = "true"  # only the string "true" turns its analytics off

MAX_TOKENS = 1024


def _deepeval(job: dict[str, Any]) -> tuple[dict, dict, Counter]:
    from deepeval.metrics import SummarizationMetric
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase
    from openai import AsyncOpenAI, OpenAI

    class ServerJudge(DeepEvalBaseLLM):
        def __init__(self, model: str, base_url: str):
            self.base_url = base_url
            super().__init__(model)

        def load_model(self) -> Any:
            return OpenAI(base_url=self.base_url, api_key="EMPTY", max_retries=0, timeout=3600)

        def _kwargs(self, schema: Any) -> dict[str, Any]:
            kwargs: dict[str, Any] = {"model": self.name, "temperature": 0.0, "max_tokens": MAX_TOKENS}
            if schema is not None:
                kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": schema.__name__, "schema": schema.model_json_schema()}}
            return kwargs

        @staticmethod
        def _parse(text: str | None, schema: Any) -> Any:
            text = text or ""
            if schema is None:
                return text
            return schema.model_validate(json.loads(text[text.find("{"):text.rfind("}") + 1]))

        def generate(self, prompt: str, schema: Any = None) -> Any:
            reply = self.model.chat.completions.create(messages=[{"role": "user", "content": prompt}],
                                                       **self._kwargs(schema))
            return self._parse(reply.choices[0].message.content, schema)

        async def a_generate(self, prompt: str, schema: Any = None) -> Any:
            client = AsyncOpenAI(base_url=self.base_url, api_key="EMPTY", max_retries=0, timeout=3600)
            reply = await client.chat.completions.create(messages=[{"role": "user", "content": prompt}],
                                                         **self._kwargs(schema))
            return self._parse(reply.choices[0].message.content, schema)

        def get_model_name(self) -> str:
            return self.name

    judge = ServerJudge(job["model"], job["base_url"])
    scores, extra, failures = {}, {}, Counter()
    for doc in job["documents"]:
        metric = SummarizationMetric(model=judge, threshold=0.5, async_mode=False, include_reason=False)
        for s in doc["summaries"]:
            key = (doc["doc_id"], s["system"])
            try:
                metric.measure(LLMTestCase(input=doc["document"], actual_output=s["summary"]), _show_indicator=False)
                scores[key] = metric.score
                extra[key] = dict(metric.score_breakdown or {})
            except Exception as exc:  # noqa: BLE001 (a peer's failure is a row of the table, not a crash)
                failures[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
                scores[key] = None
    return scores, extra, failures


def _ragas(job: dict[str, Any]) -> tuple[dict, dict, Counter]:
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics.collections import Faithfulness

    client = AsyncOpenAI(base_url=job["base_url"], api_key="EMPTY", max_retries=0, timeout=3600)
    llm = llm_factory(job["model"], provider="openai", client=client, temperature=0.0, top_p=1.0,
                      max_tokens=MAX_TOKENS)
    metric = Faithfulness(llm=llm)
    scores, failures = {}, Counter()
    for doc in job["documents"]:
        for s in doc["summaries"]:
            key = (doc["doc_id"], s["system"])
            try:
                result = metric.score(user_input="Summarize the document.", response=s["summary"],
                                      retrieved_contexts=[doc["document"]])
                scores[key] = None if result.value != result.value else float(result.value)  # NaN: no score
                if scores[key] is None:
                    failures["no score (NaN)"] += 1
            except Exception as exc:  # noqa: BLE001
                failures[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
                scores[key] = None
    return scores, {}, failures


def main() -> None:
    tool, job_path, out_path = sys.argv[1:4]
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    scores, extra, failures = {"deepeval": _deepeval, "ragas": _ragas}[tool](job)
    from importlib.metadata import version

    out = {"scores": [[d, s, v] for (d, s), v in scores.items()],
           "extra": [[d, s, v] for (d, s), v in extra.items()],
           "failures": dict(failures),
           "versions": {p: version(p) for p in ("deepeval", "ragas", "openai")}}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
