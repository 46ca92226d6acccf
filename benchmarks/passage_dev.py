"""Whether version 10's sentence check (a plain yes / no question, P(yes)) should read each sentence's best passages
of the document instead of the whole document: chosen on dev documents only, with the rule fixed before the first run.

    .venv/bin/python benchmarks/passage_dev.py --data ../shared/eval-data [--summedits 12] [--frank 40]
                                               [--out benchmarks/results/passage_dev_cpu]

SummEdits' documents run to 1,500 words of earnings calls, meetings and sales calls, where a small judge reading the
whole document may lose the one line a sentence rests on; MiniCheck reads the best chunks instead. Two readings of
every summary sentence, both with version 10's prompt (check_faithfulness.v10.jinja) and nothing generated:
- `document`: the whole document (version 10 as it stands);
- `passages`: the sentence's best passages (BM25, at most three, in document order: long_documents.excerpt).
Samples: SummEdits' dev draw of benchmarks/summary_consistency.py (12 documents x 6 summaries; a summary's
P(consistent) is its least supported sentence's P(yes)) and FRANK's dev draw of benchmarks/sentence_dev.py
(40 documents, every sentence against FRANK's majority label). Balanced accuracy at a threshold chosen on a random
half of the documents and applied to the other half (mean of 200 splits): on SummEdits the mean over its domains of
"inconsistent" per summary, on FRANK pooled and per source of "has an error" per sentence.

The rule, fixed before the first run: `passages` is kept (a method version to build) only if on SummEdits dev its
mean held-out balanced accuracy over the domains beats `document`'s by at least MARGIN_GAIN, and on FRANK dev
its held-out balanced accuracy, pooled and on each source, is not lower than `document`'s by more than MARGIN_LOSS.
Slow (about 20 minutes on 2 cores): not in CI. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks` importable

from benchmarks import sentence_dev  # noqa: E402
from benchmarks.verdict_readings import NextToken, _best_threshold, timed  # noqa: E402
from scaffold_local.data import Candidate, Document  # noqa: E402
from scaffold_local.judging import Judge, excerpt  # noqa: E402
from scaffold_local.metaeval import document_of, domain_of, load  # noqa: E402
from scaffold_local.method import method_version  # noqa: E402
from scaffold_local.runs import DEFAULT_MODEL, ModelConfig  # noqa: E402

READINGS = ("document", "passages")
MARGIN_GAIN, MARGIN_LOSS = 0.03, 0.02
SPLITS = 200


def summedits_sentences(data: Path, limit: int, seed: int, judge: Judge) -> list[dict[str, Any]]:
    """Every sentence of the SummEdits dev draw (summary_consistency.py's), as sentence_dev.items gives FRANK's."""
    out = []
    for doc in load(data, "summedits", limit=limit, seed=seed, split="dev", per_document=6):
        document = document_of(doc)
        for n, summary in enumerate(doc["summaries"], 1):
            sentences = judge.sentences(summary["summary"], judge.summary_language(document))
            for i in range(1, len(sentences) + 1):
                out.append({"doc_id": document.doc_id, "source": domain_of(doc), "system": f"{summary['system']} #{n}",
                            "i": i, "consistent": summary["human"]["label_consistent"],
                            "_document": document, "_sentences": sentences, "_summary": summary["summary"], "_n": n})
    return out


def read(reader: NextToken, judge: Judge, rows: list[dict[str, Any]]) -> dict[str, float]:
    def p_yes(document: Document, row: dict[str, Any]) -> float:
        candidate = Candidate(record=row["_n"], doc_id=row["doc_id"], system=row["system"],
                              summary=row.get("_summary") or "\n".join(row["_sentences"]))
        return reader.probability(*sentence_dev.sentence_prompt(judge, document, candidate, row["i"]), "yes", "no")

    return timed({"document": lambda row: p_yes(row["_document"], row),
                  "passages": lambda row: p_yes(excerpt(row["_document"], [row["_sentences"][row["i"] - 1]],
                                                        lambda _: True), row)}, rows, "sentences")


def held_out(truth: np.ndarray, score: np.ndarray, documents: np.ndarray, strata: np.ndarray,
             seed: int) -> dict[str, float]:
    """Balanced accuracy of `truth` (1: has an error) from `score` (low: an error) on the other half of the
    documents, at the threshold best on one half, per stratum and pooled, mean over the splits."""
    warnings.simplefilter("ignore")  # a half with one class of a stratum: its balanced accuracy is nan, left out
    rng = np.random.default_rng(seed)
    names = np.unique(documents)
    found: dict[str, list[float]] = {}
    for _ in range(SPLITS):
        h = np.isin(documents, rng.permutation(names)[: len(names) // 2])
        flagged = score[~h] < _best_threshold(1 - truth[h], score[h])
        found.setdefault("pooled", []).append(sentence_dev._ba(truth[~h], flagged))
        for stratum in np.unique(strata):
            on = strata[~h] == stratum
            found.setdefault(str(stratum), []).append(sentence_dev._ba(truth[~h][on], flagged[on]))
    return {k: float(np.nanmean(v)) for k, v in found.items()}


def measured(units: list[dict[str, Any]], seed: int) -> dict[str, dict[str, float]]:
    """Per reading: AUROC of "has an error" and the held-out balanced accuracies."""
    truth = np.array([u["error"] for u in units])
    documents, strata = (np.array([u[k] for u in units]) for k in ("doc_id", "source"))
    out = {}
    for name in READINGS:
        score = np.array([u[name] for u in units])
        out[name] = {"auroc": float(roc_auc_score(truth, -score)), **held_out(truth, score, documents, strata, seed)}
        per_stratum = [v for k, v in out[name].items() if k not in ("auroc", "pooled") and not np.isnan(v)]
        out[name]["mean over strata"] = float(np.mean(per_stratum))
    return out


def summaries_of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One unit per SummEdits summary: P(consistent) is its least supported sentence's P(yes)."""
    by_summary: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        unit = by_summary.setdefault((r["doc_id"], r["system"]), {"doc_id": r["doc_id"], "source": r["source"],
                                                                 "error": 1 - r["consistent"]})
        for name in READINGS:
            unit[name] = min(unit.get(name, 1.0), r[name])
    return list(by_summary.values())


def kept(summedits: dict[str, dict[str, float]], frank: dict[str, dict[str, float]]) -> bool:
    """The rule of the docstring."""
    gain = summedits["passages"]["mean over strata"] >= summedits["document"]["mean over strata"] + MARGIN_GAIN
    held = [k for k in frank["document"] if k not in ("auroc", "mean over strata")]
    return gain and all(frank["passages"][k] >= frank["document"][k] - MARGIN_LOSS for k in held)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="eval-data folder (it holds summedits/ and frank/)")
    parser.add_argument("--summedits", type=int, default=12, help="SummEdits dev documents")
    parser.add_argument("--frank", type=int, default=40, help="FRANK dev documents")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "passage_dev_cpu")
    a = parser.parse_args()
    config = ModelConfig.load(DEFAULT_MODEL)
    judge, reader = Judge(config, method_version(10)), NextToken(config)
    edits = summedits_sentences(a.data, a.summedits, a.seed, judge)
    frank = sentence_dev.items(a.data, a.frank, a.seed)
    seconds = {"SummEdits": read(reader, judge, edits), "FRANK": read(reader, judge, frank)}
    for row in frank:
        row["error"] = 1 - row["supported"]
    tables = {"SummEdits": measured(summaries_of(edits), a.seed), "FRANK": measured(frank, a.seed)}
    result = {"command": "python benchmarks/passage_dev.py " + shlex.join(sys.argv[1:]), "judge": config.name,
              "sample": {"SummEdits summaries": len(summaries_of(edits)), "SummEdits sentences": len(edits),
                         "FRANK sentences": len(frank)},
              "seconds": seconds, "tables": tables, "passages kept": kept(tables["SummEdits"], tables["FRANK"])}
    a.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    print(text)
    a.out.with_suffix(".md").write_text(text)


def markdown(result: dict[str, Any]) -> str:
    lines = [f"`{result['command']}`", "", f"Dev documents only; judge {result['judge']}, version 10's yes / no "
             f"sentence check; sample {result['sample']}; seconds {result['seconds']}. AUROC of \"has an error\" and "
             "balanced accuracy held out (threshold from one half of the documents, measured on the other, mean of "
             f"{SPLITS} splits).", ""]
    for data, table in result["tables"].items():
        columns = list(table["document"])
        lines += [f"**{data}**", "", "| reading | " + " | ".join(columns) + " |", "| --- " * (len(columns) + 1) + "|"]
        lines += [f"| {name} | " + " | ".join(f"{row[c]:.3f}" for c in columns) + " |" for name, row in table.items()]
        lines.append("")
    lines.append(f"The rule (SummEdits mean over domains +{MARGIN_GAIN}, FRANK not below by more than {MARGIN_LOSS}): "
                 f"passages kept: **{'yes' if result['passages kept'] else 'no'}**.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
