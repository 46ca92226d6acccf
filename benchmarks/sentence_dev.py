"""Which evidence and which question the sentence check should read P(supported) with, and at what threshold:
chosen on FRANK's dev half only, with the rule fixed before the first run.

    .venv/bin/python benchmarks/sentence_dev.py --data ../shared/eval-data [--limit 40]
                                                [--out benchmarks/results/sentence_dev_cpu]

For every summary sentence of a seeded sample of FRANK's dev documents (CNN/DM and XSum), the embedded 1.5B
judge is read without generating anything (benchmarks/verdict_readings.py's reader: the prompt computed once,
P(true) over true and false at the answer position):
- `document`: method version 7's sentence check as it stands (instructions and balanced worked examples,
  the whole document, the summary's sentences, the sentence), P(true) at `{"supported":`;
- `passages`: the same prompt with the document replaced by the sentence's best passages (BM25, at most
  three, in document order: what chunked mode reads for a document too long for the context);
- `yes/no`: a plain question over the whole document, P(yes), no JSON and no examples;
- word overlap: the share of the sentence's content words found in the document (no judge); and each judge
  reading with word overlap in a logistic regression fitted on half the documents (reported, not a candidate:
  word overlap rewards any sentence written in the source's words, a swapped name or number included).
Truth: FRANK's majority label, supported = no error. For each reading: AUROC, pooled and per source; balanced
accuracy at a threshold chosen on a random half of the documents and applied to the other half (mean of 200
splits), pooled and per source.

The rule, fixed before the first run: the candidate with the highest held-out balanced accuracy pooled
replaces `document` if it beats it by at least MARGIN and is not worse by more than MARGIN on either source;
its threshold is the one with the best balanced accuracy on all dev sentences. Slow (about 50 minutes for 40
documents on 2 cores): not in CI. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks` importable

from benchmarks.verdict_readings import NextToken, _best_threshold, _log_odds, timed  # noqa: E402
from scaffold_local.data import Candidate, Document  # noqa: E402
from scaffold_local.judging import Judge, excerpt  # noqa: E402
from scaffold_local.metaeval import document_of, load, source_of  # noqa: E402
from scaffold_local.method import method_version, overlap  # noqa: E402
from scaffold_local.runs import DEFAULT_MODEL, ModelConfig  # noqa: E402

SPLITS = 200
MARGIN = 0.02
CANDIDATES = ("document", "passages", "yes/no")


def sentence_prompt(judge: Judge, document: Document, candidate: Candidate, i: int) -> tuple[str, str, str]:
    """The judge's reading of sentence i's verdict: (system, user, the answer up to the value)."""
    for planned in judge.plan(None, document, candidate, task="check_faithfulness"):
        reading = planned.reading
        if reading is not None and reading.item == f"S{i}" and reading.key == "supported":
            system, user, answer = (m.content for m in planned.request.messages)
            return system, user, answer
    raise AssertionError(f"no reading of S{i}")


def items(data: Path, limit: int, seed: int) -> list[dict[str, Any]]:
    """Every sentence of the sample, with its summary and document, in document order (so prompts share prefixes)."""
    out = []
    for doc in load(data, "frank", limit=limit, seed=seed, split="dev"):
        document = document_of(doc)
        for n, summary in enumerate(doc["summaries"], 1):
            for i, (sentence, error) in enumerate(zip(summary["sentences"], summary["human"]["sentence_error_majority"]), 1):
                out.append({"doc_id": document.doc_id, "source": source_of(doc), "system": summary["system"], "i": i,
                            "supported": int(not error), "overlap": overlap(sentence, document.text),
                            "_document": document, "_sentences": summary["sentences"], "_n": n})
    return out


def read(reader: NextToken, judge: Judge, yes_no: Judge, rows: list[dict[str, Any]]) -> dict[str, float]:
    """Each candidate reading over every sentence, one reading at a time (so its prompts share their prefixes):
    `judge` asks as version 7 asks, `yes_no` as version 10 does."""
    def candidate(row: dict[str, Any]) -> Candidate:
        return Candidate(record=row["_n"], doc_id=row["doc_id"], system=row["system"], summary="\n".join(row["_sentences"]))

    def on(document: Document, row: dict[str, Any]) -> float:
        return reader.probability(*sentence_prompt(judge, document, candidate(row), row["i"]), "true", "false")

    readings: dict[str, Callable[[dict[str, Any]], float]] = {
        "document": lambda row: on(row["_document"], row),
        "passages": lambda row: on(excerpt(row["_document"], [row["_sentences"][row["i"] - 1]], lambda _: True), row),
        # version 10's prompt (check_faithfulness.v10.jinja renders exactly what this reading measured)
        "yes/no": lambda row: reader.probability(*sentence_prompt(yes_no, row["_document"], candidate(row), row["i"]),
                                                 "yes", "no"),
    }
    return timed(readings, rows, "sentences")


def _ba(truth: np.ndarray, predicted: np.ndarray) -> float:
    return float(balanced_accuracy_score(truth, predicted)) if len(set(truth)) > 1 else float("nan")


def evaluate(rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    truth = np.array([r["supported"] for r in rows])
    documents = np.array([r["doc_id"] for r in rows])
    sources = np.array([r["source"] for r in rows])
    names = np.unique(documents)
    rng = np.random.default_rng(seed)
    halves = [np.isin(documents, rng.permutation(names)[: len(names) // 2]) for _ in range(SPLITS)]
    scores = {name: np.array([r[name] for r in rows]) for name in (*CANDIDATES, "overlap")}
    def held_out(predict: Callable[[np.ndarray], np.ndarray]) -> dict[str, float]:
        """Balanced accuracy on the other half of the documents, pooled and per source, mean over the splits;
        `predict(h)`: the decisions on ~h of a rule fitted on h."""
        held: dict[str, list[float]] = {}
        for h in halves:
            predicted, kept = predict(h), truth[~h]
            held.setdefault("pooled", []).append(_ba(kept, predicted))
            for source in np.unique(sources):
                on = sources[~h] == source
                held.setdefault(source, []).append(_ba(kept[on], predicted[on]))
        return {k: float(np.nanmean(v)) for k, v in held.items()}

    def logistic(x: np.ndarray, h: np.ndarray) -> np.ndarray:
        model = LogisticRegression().fit(x[h], truth[h])
        return model.predict_proba(x[~h])[:, 1] >= _best_threshold(truth[h], model.predict_proba(x[h])[:, 1])

    table = [row_of(name, truth, score, sources, held_out(
        lambda h, score=score: score[~h] >= _best_threshold(truth[h], score[h]))) for name, score in scores.items()]
    for name in CANDIDATES:  # with word overlap: reported beside, not a candidate (see the docstring)
        x = np.column_stack([_log_odds(scores[name]), scores["overlap"]])
        combined = LogisticRegression().fit(x, truth).predict_proba(x)[:, 1]
        table.append(row_of(f"{name} + word overlap (logistic)", truth, combined, sources,
                            held_out(lambda h, x=x: logistic(x, h))))
    return table


def row_of(name: str, truth: np.ndarray, score: np.ndarray, sources: np.ndarray, held: dict[str, float]) -> dict:
    row: dict[str, Any] = {"reading": name, "auroc": float(roc_auc_score(truth, score)),
                           "threshold": _best_threshold(truth, score)}
    for source in np.unique(sources):
        on = sources == source
        row[f"auroc {source}"] = float(roc_auc_score(truth[on], score[on])) if len(set(truth[on])) > 1 else None
    row |= {f"held-out BA {k}": v for k, v in held.items()}
    return row


def choose(table: list[dict[str, Any]]) -> str:
    """The rule of the docstring."""
    rows = {r["reading"]: r for r in table}
    base = rows["document"]
    sources = [k.removeprefix("held-out BA ") for k in base if k.startswith("held-out BA ") and not k.endswith("pooled")]
    best = max(CANDIDATES, key=lambda n: rows[n]["held-out BA pooled"])
    ok = best != "document" and rows[best]["held-out BA pooled"] >= base["held-out BA pooled"] + MARGIN and all(
        rows[best][f"held-out BA {s}"] >= base[f"held-out BA {s}"] - MARGIN for s in sources)
    return best if ok else "document"


def markdown(result: dict[str, Any]) -> str:
    table = result["table"]
    columns = [k for k in table[0] if k != "reading"]
    lines = [f"`{result['command']}`", "", f"FRANK dev half: {result['sample']}; judge {result['judge']}; "
             f"seconds per reading {result['seconds']}.", "",
             "| reading | " + " | ".join(columns) + " |", "| --- " * (len(columns) + 1) + "|"]
    for row in table:
        cells = ("-" if row[c] is None else f"{row[c]:.3f}" for c in columns)
        lines.append(f"| {row['reading']} | " + " | ".join(cells) + " |")
    lines += ["", f"Chosen by the rule (margin {MARGIN}): **{result['chosen']}**, threshold {result['threshold']:.3f}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="eval-data folder (it holds frank/)")
    parser.add_argument("--limit", type=int, default=40, help="dev documents")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sentence_dev_cpu")
    args = parser.parse_args()
    config = ModelConfig.load(DEFAULT_MODEL).model_copy(update={"method_version": 7})
    rows = items(args.data, args.limit, args.seed)
    seconds = read(NextToken(config), Judge(config), Judge(config, method_version(10)), rows)
    for row in rows:
        for key in [k for k in row if k.startswith("_")]:
            del row[key]
    table = evaluate(rows, args.seed)
    chosen = choose(table)
    sample = {"documents": len({r["doc_id"] for r in rows}), "sentences": len(rows),
              "supported": float(np.mean([r["supported"] for r in rows])),
              "by source": {s: sum(r["source"] == s for r in rows) for s in sorted({r["source"] for r in rows})}}
    result = {"command": "python benchmarks/sentence_dev.py " + shlex.join(sys.argv[1:]), "judge": config.name,
              "sample": sample, "seconds": seconds, "table": table, "chosen": chosen,
              "threshold": next(r["threshold"] for r in table if r["reading"] == chosen)}  # no per-item rows: labels
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    print(text)
    args.out.with_suffix(".md").write_text(text)


if __name__ == "__main__":
    main()
