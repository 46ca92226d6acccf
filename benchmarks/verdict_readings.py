"""Where the CPU judge's knowledge of key-fact presence is, read several ways on the same REALSumm items.

    .venv/bin/python benchmarks/verdict_readings.py --data ../shared/eval-data [--split dev] [--limit 12]
                                                    [--per-document 5] [--out benchmarks/results/verdict_readings_cpu]

For every (summary, human key fact) pair of a seeded sample, the embedded 1.5B judge (llama.cpp) is read
without generating anything: the prompt is computed once and the probability of the verdict is taken
from the next-token distribution.
- `v5`: method version 5's own request, P("true") at the verdict token (`{"F3": {"inferred":`), as
  `score` reads it while decoding (the decoded run differs by up to about 0.03: llama.cpp's numbers
  depend on what is decoded beside a request);
- `yes/no`: a plain question without examples or JSON, P("yes") as the next token (the issue's first
  measurement of what the judge knows);
- word overlap: the share of the fact's content words found in the summary (no judge);
- combinations: the mean of the two judge readings' log-odds, and each with word overlap in a logistic
  regression fitted on half the documents.
Each reading: AUROC over all items, balanced accuracy at 0.5, at the best threshold of these items (an
optimistic bound) and at a threshold chosen on a random half of the documents and applied to the other
half (mean of 200 splits: what a calibrated threshold gives on documents it was not chosen on).
Slow (about 35 minutes for 600 items on 2 cores): not in CI. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from scaffold_local.backends import Message
from scaffold_local.backends.llama_cpp import available_cores
from scaffold_local.backends.llama_cpp_model import ChatTokenizer, gguf_path
from scaffold_local.data import Candidate
from scaffold_local.judging import Judge
from scaffold_local.metaeval import document_of, facts_scaffold, load
from scaffold_local.method import overlap
from scaffold_local.runs import DEFAULT_MODEL, ModelConfig

QUESTION = "Does the summary convey this key fact?"
YES_NO_SYSTEM = ("You check whether a summary conveys a key fact of a document. Answer yes only if the summary clearly "
                 "conveys the meaning of the fact, even in other words; answer no if it is merely on the same topic, "
                 "states only part of the fact, or states something different. Answer with one word: yes or no.")
SPLITS = 200


class NextToken:
    """P(first word | prompt) for a pair of words, one prompt after another, each reusing the KV cache of
    the longest prefix it shares with the previous prompt."""

    def __init__(self, config: ModelConfig):
        from llama_cpp import Llama

        self.llm = Llama(model_path=str(gguf_path(config.model)), n_ctx=4096, n_threads=available_cores(), verbose=False)
        self.chat = ChatTokenizer.vocab_only(config.model)
        pieces = [self.llm.detokenize([i]).decode("utf-8", "ignore").strip() for i in range(self.llm.n_vocab())]
        # every token that starts the word: "t", "tr", "true" all count for "true" (JSON's words in lower case only;
        # "Yes" and "yes" alike)
        self.starts = {word: np.array([i for i, p in enumerate(pieces) if p and word.startswith(p)])
                       for word in ("true", "false")}
        self.starts |= {word: np.array([i for i, p in enumerate(pieces) if p and word.startswith(p.lower())])
                        for word in ("yes", "no")}

    def probability(self, system: str, user: str, answer_prefix: str, word: str, other: str) -> float:
        tokens = self.chat.tokens([Message(role="system", content=system), Message(role="user", content=user)])
        tokens += self.llm.tokenize(answer_prefix.encode(), add_bos=False, special=False)
        shared = 0
        for cached, new in zip(self.llm.input_ids[: self.llm.n_tokens], tokens):
            if cached != new:
                break
            shared += 1
        self.llm.n_tokens = min(shared, len(tokens) - 1)  # eval() drops the cache past this point
        self.llm.eval(tokens[self.llm.n_tokens:])
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm.n_vocab(),))
        weights = np.exp(logits - logits.max())
        kept, dropped = weights[self.starts[word]].sum(), weights[self.starts[other]].sum()
        return float(kept / (kept + dropped))


def items(args: argparse.Namespace, judge: Judge) -> list[dict]:
    """Every (summary, key fact) pair of the sample, with method v5's own request for it."""
    out = []
    for doc in load(args.data, "realsumm", limit=args.limit, seed=args.seed, split=args.split,
                    per_document=args.per_document):
        document = document_of(doc)
        scaffold = facts_scaffold(document, doc["keyfacts"])
        for n, summary in enumerate(doc["summaries"], 1):
            candidate = Candidate(record=n, doc_id=document.doc_id, system=summary["system"], summary=summary["summary"])
            for i, planned in enumerate(judge.plan(scaffold, document, candidate, task="align_facts"), 1):
                system, user = (m.content for m in planned.request.messages)
                out.append({"doc_id": document.doc_id, "system": summary["system"], "fact": f"F{i}",
                            "human": summary["human"]["scu_presence"][i - 1],
                            "overlap": overlap(doc["keyfacts"][i - 1], summary["summary"]), "_prompt": (system, user)})
    return out


def read(reader: NextToken, rows: list[dict]) -> dict[str, float]:
    """Each judge reading over every item, one reading at a time (so its prompts share their prefixes)."""
    readings: dict[str, Callable[[dict], float]] = {
        "v5": lambda r: reader.probability(*r["_prompt"], '{"' + r["fact"] + '": {"inferred":', "true", "false"),
        "yes/no": lambda r: reader.probability(
            YES_NO_SYSTEM, r["_prompt"][1].replace(QUESTION, QUESTION + " Answer yes or no."), "", "yes", "no"),
    }
    return timed(readings, rows, "items")


def timed(readings: dict[str, Callable[[dict], float]], rows: list[dict], unit: str) -> dict[str, float]:
    """Each reading over every row (stored under its name), one reading at a time; the seconds each took."""
    seconds = {}
    for name, reading in readings.items():
        started = time.perf_counter()
        for row in rows:
            row[name] = reading(row)
        seconds[name] = round(time.perf_counter() - started, 1)
        print(f"{name}: {len(rows)} {unit} in {seconds[name]} s", flush=True)
    return seconds


def _log_odds(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def _best_threshold(truth: np.ndarray, score: np.ndarray) -> float:
    candidates = np.unique(score)
    return float(candidates[int(np.argmax([balanced_accuracy_score(truth, score >= c) for c in candidates]))])


def evaluate(rows: list[dict], seed: int) -> list[dict]:
    truth = np.array([r["human"] for r in rows])
    documents = np.array([r["doc_id"] for r in rows])
    features = {name: np.array([r[name] for r in rows]) for name in ("v5", "yes/no", "overlap")}
    mean_log_odds = (_log_odds(features["v5"]) + _log_odds(features["yes/no"])) / 2
    features["v5 + yes/no (mean log-odds)"] = 1 / (1 + np.exp(-mean_log_odds))
    names = np.unique(documents)
    rng = np.random.default_rng(seed)
    halves = [np.isin(documents, rng.permutation(names)[: len(names) // 2]) for _ in range(SPLITS)]
    table = []
    for name, score in features.items():
        held_out = [balanced_accuracy_score(truth[~h], score[~h] >= _best_threshold(truth[h], score[h])) for h in halves]
        table.append({"reading": name, "auroc": roc_auc_score(truth, score),
                      "balanced_accuracy_at_half": balanced_accuracy_score(truth, score >= 0.5),
                      "best_balanced_accuracy": balanced_accuracy_score(truth, score >= _best_threshold(truth, score)),
                      "held_out_balanced_accuracy": float(np.mean(held_out))})
    for name in ("v5", "yes/no"):  # with word overlap: a logistic regression fitted on each calibration half
        x = np.column_stack([_log_odds(features[name]), features["overlap"]])
        aurocs, held_out = [], []
        for h in halves:
            model = LogisticRegression().fit(x[h], truth[h])
            fitted, other = model.predict_proba(x[h])[:, 1], model.predict_proba(x[~h])[:, 1]
            aurocs.append(roc_auc_score(truth[~h], other))
            held_out.append(balanced_accuracy_score(truth[~h], other >= _best_threshold(truth[h], fitted)))
        table.append({"reading": f"{name} + word overlap (logistic)", "auroc": float(np.mean(aurocs)),
                      "balanced_accuracy_at_half": None, "best_balanced_accuracy": None,
                      "held_out_balanced_accuracy": float(np.mean(held_out))})
    return table


def markdown(result: dict) -> str:
    sample = result["sample"]
    lines = [f"`{result['command']}`", "",
             f"REALSumm {sample['split']} half: {sample['documents']} documents, "
             f"{sample['items']} (summary, key fact) items, "
             f"{sample['present']:.3f} present; judge {result['judge']}.", "",
             "| reading | AUROC | balanced accuracy at 0.5 | best balanced accuracy (these items) | "
             "balanced accuracy, threshold from the other half of the documents |", "| --- | --- | --- | --- | --- |"]
    f = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    for row in result["table"]:
        lines.append(f"| {row['reading']} | {f(row['auroc'])} | {f(row['balanced_accuracy_at_half'])} | "
                     f"{f(row['best_balanced_accuracy'])} | {f(row['held_out_balanced_accuracy'])} |")
    lines += ["", "The AUROC of a logistic combination is measured on the half of the documents it was not fitted on "
              f"(mean over {SPLITS} splits); the others on all items."]
    return "\n".join(lines) + "\n"


def main() -> None:
    import shlex
    import sys

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="eval-data folder (it holds realsumm/)")
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    parser.add_argument("--limit", type=int, default=12, help="documents")
    parser.add_argument("--per-document", type=int, default=5, help="summaries of each document")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/verdict_readings_cpu"))
    args = parser.parse_args()
    if args.limit < 4:
        parser.error("--limit: at least 4 documents (thresholds are chosen on half of them and checked on the rest)")
    config = ModelConfig.load(DEFAULT_MODEL)
    rows = items(args, Judge(config))
    seconds = read(NextToken(config), rows)
    for row in rows:
        del row["_prompt"]
    result = {"command": "python benchmarks/verdict_readings.py " + shlex.join(sys.argv[1:]), "judge": config.name,
              "sample": {"split": args.split, "seed": args.seed, "documents": len({r["doc_id"] for r in rows}),
                         "items": len(rows), "present": float(np.mean([r["human"] for r in rows]))},
              "seconds": seconds, "table": evaluate(rows, args.seed), "items": rows}
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    table = markdown(result)
    print(table)
    args.out.with_suffix(".md").write_text(table)


if __name__ == "__main__":
    main()
