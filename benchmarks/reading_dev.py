"""Which prompt a version that reads its verdicts should ask key facts with, and at what threshold: chosen on
dev data only, with the rule fixed before the first run.

    .venv/bin/python benchmarks/reading_dev.py --data ../shared/eval-data [--versions 7,8]
        [--store /tmp/reading-dev-store] [--out benchmarks/results/reading_dev_cpu]

Two dev sets, both never used to report a result:
- REALSumm's dev half (20 documents x 5 summaries, seed 0: 975 (summary, human key fact) items), where
  summaries are largely extractive: presence against the majority of all annotators;
- `benchmarks/data/contrast_dev.jsonl` (8 documents written for this choice, 96 items, the built-in judge
  check's construction on other documents: each fact kept verbatim, paraphrased, dropped or contradicted),
  where a fact stated wrongly in the source's own words must count as missed.
For each version: the AUROC of P(kept) on each set, and each set's balanced accuracy at every threshold
from 0.05 to 0.95. The threshold of a version is the one with the highest mean of the two balanced
accuracies (one threshold must serve both kinds of summary). The rule, fixed before the first run: version
8 (version 5's fact prompt, read) replaces version 7's prompt when its AUROC is higher on the contrast set
and not lower by more than 0.02 on REALSumm. Each version's judgments go through one store: a rerun only
reads. Slow (about 25 minutes per version on 2 cores): not in CI. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from scaffold_local.judge_check import PRESENT, run_check
from scaffold_local.metaeval import alignment_items, load
from scaffold_local.runs import DEFAULT_MODEL, ModelConfig, Pipeline

ROOT = Path(__file__).resolve().parents[1]
CONTRAST = ROOT / "benchmarks" / "data" / "contrast_dev.jsonl"
GRID = np.round(np.arange(0.05, 0.951, 0.01), 2)
MARGIN = 0.02


def readings(pipeline: Pipeline, data: Path) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], list[str]]:
    """(truth, P(kept)) on each dev set, and the contrast items' kinds."""
    docs = load(data, "realsumm", limit=20, seed=0, split="dev", per_document=5)
    items = alignment_items(pipeline, docs)
    realsumm = (np.asarray(items.humans.majority, bool), np.asarray(items.p_kept, float))
    checked = run_check(pipeline, CONTRAST).checked
    contrast = (np.asarray([i.kind in PRESENT for i in checked]), np.asarray([i.p_kept for i in checked], float))
    return {"REALSumm dev": realsumm, "contrast dev": contrast}, [i.kind for i in checked]


def measure(sets: dict[str, tuple[np.ndarray, np.ndarray]], kinds: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"auroc": {name: float(roc_auc_score(t, p)) for name, (t, p) in sets.items()}}
    curve = [{"threshold": float(x), **{name: float(balanced_accuracy_score(t, p >= x)) for name, (t, p) in sets.items()}}
             for x in GRID]
    for row in curve:
        row["mean"] = float(np.mean([row[name] for name in sets]))
    best = max(curve, key=lambda r: r["mean"])
    truth, p = sets["contrast dev"]
    out |= {"threshold": best["threshold"], "at_threshold": best, "curve": curve,
            "contrast_kept_rate": {kind: float(np.mean([q >= best["threshold"] for q, k in zip(p, kinds) if k == kind]))
                                   for kind in ("verbatim", "paraphrased", "dropped", "contradicted")}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--versions", default="7,8")
    parser.add_argument("--store", type=Path, default=Path("/tmp/reading-dev-store"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "reading_dev_cpu")
    a = parser.parse_args()
    config = ModelConfig.load(a.model).model_copy(update={"verdict_confidence": True})
    rows = {}
    for version in (int(v) for v in a.versions.split(",")):
        pipeline = Pipeline(config, a.store, method=version)
        try:
            rows[f"v{version}"] = measure(*readings(pipeline, a.data))
        finally:
            pipeline.close()
    result: dict[str, Any] = {"command": "python benchmarks/reading_dev.py " + shlex.join(sys.argv[1:]),
                              "judge": config.name, "rows": rows}
    if {"v7", "v8"} <= set(rows):
        new, old = rows["v8"]["auroc"], rows["v7"]["auroc"]
        result["v8_replaces_v7"] = new["contrast dev"] > old["contrast dev"] and \
            new["REALSumm dev"] >= old["REALSumm dev"] - MARGIN
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    a.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))


def markdown(r: dict[str, Any]) -> str:
    lines = [f"# Reading verdicts on dev data: {r['judge']}", "", f"`{r['command']}`", "",
             "| version | AUROC REALSumm dev | AUROC contrast dev | threshold (best mean BA) | BA REALSumm dev | "
             "BA contrast dev | contrast: verbatim / paraphrased / dropped / contradicted judged present |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, row in r["rows"].items():
        at, rate = row["at_threshold"], row["contrast_kept_rate"]
        lines.append(f"| {name} | {row['auroc']['REALSumm dev']:.3f} | {row['auroc']['contrast dev']:.3f} | "
                     f"{row['threshold']:.2f} | {at['REALSumm dev']:.3f} | {at['contrast dev']:.3f} | "
                     f"{rate['verbatim']:.2f} / {rate['paraphrased']:.2f} / {rate['dropped']:.2f} / "
                     f"{rate['contradicted']:.2f} |")
    if "v8_replaces_v7" in r:
        lines += ["", "Rule (fixed before the first run): v8 replaces v7's fact prompt when its AUROC is higher on the "
                  f"contrast set and at most {MARGIN} lower on REALSumm. Met: {'yes' if r['v8_replaces_v7'] else 'no'}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
