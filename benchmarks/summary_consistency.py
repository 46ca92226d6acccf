"""Is a summary consistent with its document? SummEdits (non-news domains, small edits labelled by people) with the
sentence check read (method version 10): a summary's P(consistent) is its least supported sentence's P(yes), with a
threshold chosen on SummEdits' dev half, against version 10's own rule (F = 1 at the sentence threshold from FRANK's
dev half) and word overlap (its least overlapping sentence, thresholded the same two ways).

    .venv/bin/python benchmarks/summary_consistency.py --data ../shared/eval-data [--dev 12] [--test 24]
        [--per-document 6] [--versions 10] [--model CONFIG] [--after RESULT.json ...] [--no-dev-thresholds]
        [--store /tmp/summary-consistency-store] [--out benchmarks/results/summary_consistency_cpu]

Fixed before the first run: the thresholds come from the dev documents only (the one maximising balanced accuracy of
"consistent" over all their summaries, pooled over domains); the test documents report balanced accuracy of
"inconsistent" per domain, with 95% intervals over documents, and its mean over the domains (the issue's goal: at
least 0.65), and the AUROC of each summary score. Nothing is chosen on the test documents. With `--after`, the test
documents are drawn from those that the named result files do not list (the test half's documents no earlier
measurement drew). Slow (version 10 reads one answer token per sentence: about 10 minutes for 36 documents of 6
summaries on 2 cores): not in CI. Each version's judgments go through one store, so a rerun only reads. Writes
<out>.json and <out>.md (aggregate rows only: the per-summary rows hold SummEdits' labels).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks` importable

from benchmarks.earlier_draws import documents_in, fresh  # noqa: E402
from scaffold_local.metaeval import (  # noqa: E402
    OVERLAP_SUPPORTED,
    best_threshold,
    binary_agreement,
    cell,
    consistency,
    load,
    ranking,
)
from scaffold_local.runs import (  # noqa: E402
    DEFAULT_MODEL,
    ModelConfig,
    Pipeline,  # noqa: E402
)

GOAL = 0.65


def judge_scores(rows: list[dict[str, Any]], version: int, dev_thresholds: bool = True) -> dict[str, dict[str, Any]]:
    """Per scorer: its rule (a column that flags "inconsistent") or its summary score (higher: more consistent)."""
    found: dict[str, dict[str, Any]] = {f"version {version}, F = 1": {"flag": [r["judge"] for r in rows]}}
    if dev_thresholds and all(r["judge_p_consistent"] is not None for r in rows):
        found[f"version {version}, P(consistent), dev threshold"] = {"score": [r["judge_p_consistent"] for r in rows]}
    return found


def overlap_scores(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"word overlap, every sentence >= {OVERLAP_SUPPORTED}": {"flag": [r["word_overlap"] for r in rows]},
            "word overlap, least sentence, dev threshold": {"score": [r["least_overlap"] for r in rows]}}


def measured(test: dict[str, Any], test_rows: list[dict[str, Any]], dev: dict[str, Any] | None,
             dev_rows: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """One scorer on the test rows: a score thresholded at the dev rows' best (and its AUROC), or a rule as it is;
    balanced accuracy of "inconsistent" per domain with intervals over documents, and their mean."""
    truth = [r["inconsistent"] for r in test_rows]
    flag = test.get("flag")
    entry: dict[str, Any] = {}
    if "score" in test:  # "consistent" the positive class, as the thresholds of the package's calibration have it
        assert dev is not None
        entry["dev threshold"] = best_threshold(np.array([1 - r["inconsistent"] for r in dev_rows]), np.array(dev["score"]))
        flag = [int(s < entry["dev threshold"]) for s in test["score"]]
        auroc = ranking([1 - t for t in truth], test["score"], [r["doc_id"] for r in test_rows], seed)
        entry["auroc"] = {"value": auroc.value, "low95": auroc.low, "high95": auroc.high}
    assert flag is not None
    entry["domains"] = {}
    for domain in sorted({r["domain"] for r in test_rows}):
        at = [i for i, r in enumerate(test_rows) if r["domain"] == domain]
        documents = [test_rows[i]["doc_id"] for i in at]
        estimate = binary_agreement([truth[i] for i in at], [flag[i] for i in at], documents, seed)["balanced_accuracy"]
        entry["domains"][domain] = {"value": estimate.value, "low95": estimate.low, "high95": estimate.high,
                                    "summaries": len(at), "documents": len(set(documents))}
    values = [d["value"] for d in entry["domains"].values() if d["value"] is not None]
    entry["mean over domains"] = sum(values) / len(values) if values else None
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="eval-data folder (it holds summedits/)")
    parser.add_argument("--dev", type=int, default=12, help="dev documents (thresholds)")
    parser.add_argument("--test", type=int, default=24, help="test documents (reported)")
    parser.add_argument("--per-document", type=int, default=6, help="summaries drawn per document")
    parser.add_argument("--versions", default="10")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="judge config (default: the CPU judge)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--after", type=Path, nargs="*", default=[],
                        help="earlier result files (.json) whose documents the test draw leaves out")
    parser.add_argument("--no-dev-thresholds", action="store_true",
                        help="only each version's own rule (F = 1) and word overlap: the judge's dev documents unread")
    parser.add_argument("--store", type=Path, default=Path("/tmp/summary-consistency-store"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "summary_consistency_cpu")
    a = parser.parse_args()
    docs = {"dev": load(a.data, "summedits", limit=a.dev, seed=a.seed, split="dev", per_document=a.per_document)}
    if a.after:  # the test documents no earlier measurement drew (each with --per-document of its summaries)
        every = load(a.data, "summedits", seed=a.seed, split="test", per_document=a.per_document)
        docs["test"] = fresh(every, documents_in(a.after), a.test, a.seed)
    else:
        docs["test"] = load(a.data, "summedits", limit=a.test, seed=a.seed, split="test", per_document=a.per_document)
    config = ModelConfig.load(a.model)
    table: dict[str, dict[str, Any]] = {}
    seconds = {}
    rows: dict[str, list[dict[str, Any]]] = {}
    for version in (int(v) for v in a.versions.split(",")):
        pipeline = Pipeline(config, a.store, method=version)
        started = time.perf_counter()
        rows["test"] = consistency(pipeline, docs["test"], a.seed).tables["per_summary"]
        test = judge_scores(rows["test"], version, not a.no_dev_thresholds)
        dev: dict[str, Any] = {}
        if any("score" in scorer for scorer in test.values()) or "dev" not in rows:  # word overlap's needs one dev run
            dev_rows = consistency(pipeline, docs["dev"], a.seed).tables["per_summary"]
            rows.setdefault("dev", dev_rows)
            dev = judge_scores(dev_rows, version)
        seconds[f"version {version}"] = round(time.perf_counter() - started, 1)
        pipeline.close()
        for name, scorer in test.items():
            table[name] = measured(scorer, rows["test"], dev.get(name), dev_rows, a.seed)
        print(f"version {version}: {seconds[f'version {version}']} s", flush=True)
    dev_overlap = overlap_scores(rows["dev"])
    for name, scorer in overlap_scores(rows["test"]).items():  # the same summaries under every version
        table[name] = measured(scorer, rows["test"], dev_overlap[name], rows["dev"], a.seed)
    result = {"command": "python benchmarks/summary_consistency.py " + shlex.join(sys.argv[1:]), "judge": config.name,
              "documents": {split: [d["doc_id"] for d in chosen] for split, chosen in docs.items()},
              "summaries": {split: sum(len(d["summaries"]) for d in chosen) for split, chosen in docs.items()},
              "seconds": seconds, "goal": GOAL, "table": table}
    a.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    print(text)
    a.out.with_suffix(".md").write_text(text)


def markdown(result: dict[str, Any]) -> str:
    domains = sorted({d for entry in result["table"].values() for d in entry["domains"]})
    lines = [f"`{result['command']}`", "",
             f"SummEdits: thresholds from {len(result['documents']['dev'])} dev documents "
             f"({result['summaries']['dev']} summaries), reported on {len(result['documents']['test'])} test documents "
             f"({result['summaries']['test']} summaries); judge {result['judge']}; seconds {result['seconds']}. "
             "Balanced accuracy of \"the summary is inconsistent\" per domain, 95% intervals over documents; "
             f"the issue's goal: a mean over domains of at least {result['goal']}.", "",
             "| scorer | dev threshold | AUROC (test) | " + " | ".join(domains) + " | mean over domains |",
             "| --- " * (len(domains) + 4) + "|"]
    for name, entry in result["table"].items():
        threshold = f"{entry['dev threshold']:.3f}" if entry.get("dev threshold") is not None else "-"
        mean = f"{entry['mean over domains']:.3f}" if entry["mean over domains"] is not None else "-"
        lines.append(f"| {name} | {threshold} | {cell(entry.get('auroc'))} | "
                     + " | ".join(cell(entry["domains"].get(d)) for d in domains) + f" | {mean} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
