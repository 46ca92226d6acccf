"""Does reading verdicts (method version 7) agree with people as well as writing them (version 5)? Both
versions of the CPU judge on the same REALSumm test documents that no earlier measurement used, with
intervals over documents for each version and for the paired differences.

    .venv/bin/python benchmarks/method_agreement.py --data ../shared/eval-data [--versions 5,7] [--per-document 5]
        [--store /tmp/agreement-store] [--out benchmarks/results/method_agreement_cpu]

The rule, fixed before the first run: the default CPU judge moves to version 7 when, on these documents,
its balanced accuracy (each version at its own calibrated threshold, on the human ceiling's references)
and its AUROC of P(kept) (against the majority of all annotators) are each at least version 5's minus
0.02 (the point estimates), and its built-in judge check is at least 0.88.

The documents: REALSumm's test half (the fixed split of metaeval/human_labels.py) without every document an
earlier measurement drew: `benchmarks/judges.py` (12, seed 0), the peers benchmark (5, seed 0), the
throughput benchmark (2 and 1 of all, seed 0) and the first CPU-judge trial (3 of all, seed 1). Each
version's judgments go through one store, so an interrupted run resumes and a rerun only reads. Slow
(about an hour on 2 cores): not in CI. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from scaffold_local.metaeval import AlignmentItems, alignment_items, grouped_bootstrap, load
from scaffold_local.runs import DEFAULT_MODEL, ModelConfig, Pipeline

ROOT = Path(__file__).resolve().parents[1]
MARGIN = 0.02
JUDGE_CHECK = 0.88
# The draws of earlier measurements (metaeval.data.load keyword arguments): their documents are left out.
EARLIER = [dict(limit=12, seed=0, split="test"), dict(limit=5, seed=0, split="test"), dict(limit=2, seed=0),
           dict(limit=1, seed=0), dict(limit=3, seed=1)]


def fresh_documents(data: Path, per_document: int | None) -> list[dict[str, Any]]:
    used = {d["doc_id"] for draw in EARLIER for d in load(data, "realsumm", **draw)}
    return [d for d in load(data, "realsumm", split="test", per_document=per_document) if d["doc_id"] not in used]


def balanced_accuracy(truth: np.ndarray, predicted: np.ndarray) -> float | None:
    if truth.all() or not truth.any():
        return None
    return float((predicted[truth].mean() + (~predicted[~truth]).mean()) / 2)


def auroc(truth: np.ndarray, p: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(truth, p)) if 0 < truth.sum() < len(truth) else None


class Paired:
    """The items of several scorers, in one order: the human references and each scorer's decisions and P."""

    def __init__(self, items: dict[str, AlignmentItems]):
        first = next(iter(items.values()))
        assert all(i.humans.majority == first.humans.majority for i in items.values()), "the versions judged other items"
        h = first.humans
        self.reference, self.held_out = np.asarray(h.reference, bool), np.asarray(h.held_out, bool)
        self.reference_item = np.asarray(h.item)
        self.reference_groups = [h.groups[i] for i in h.item]
        self.majority, self.groups = np.asarray(h.majority, bool), h.groups
        self.decisions = {name: np.asarray(i.judged, bool) for name, i in items.items()}
        self.decisions["word overlap"] = np.asarray(first.lexical, bool)
        self.p = {name: i.p_kept for name, i in items.items()}

    def ba(self, name: str, idx: np.ndarray) -> float | None:  # idx: references
        return balanced_accuracy(self.reference[idx], self.decisions[name][self.reference_item[idx]])

    def with_p(self) -> np.ndarray:
        """Items where every version has P(kept)."""
        return np.asarray([all(p[i] is not None for p in self.p.values()) for i in range(len(self.majority))])

    def auc(self, name: str, idx: np.ndarray) -> float | None:  # idx: items
        p = np.asarray([self.p[name][i] for i in idx], float)
        return auroc(self.majority[idx], p)


def estimate(value: tuple[float | None, float | None, float | None]) -> dict[str, float | None]:
    return {"value": value[0], "low": value[1], "high": value[2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--versions", default="5,7")
    parser.add_argument("--per-document", type=int, default=5)
    parser.add_argument("--store", type=Path, default=Path("/tmp/agreement-store"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "method_agreement_cpu")
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args()
    versions = [int(v) for v in a.versions.split(",")]
    docs = fresh_documents(a.data, a.per_document)
    config = ModelConfig.load(a.model)
    items, seconds, thresholds = {}, {}, {}
    for version in versions:
        pipeline = Pipeline(config.model_copy(update={"verdict_confidence": True}), a.store, method=version)
        started = time.perf_counter()
        try:
            items[f"v{version}"] = alignment_items(pipeline, docs)
        finally:
            pipeline.close()
        seconds[f"v{version}"] = round(time.perf_counter() - started, 1)
        thresholds[f"v{version}"] = pipeline.judge.thresholds.get("facts")
        print(f"v{version}: {len(items[f'v{version}'].judged)} items in {seconds[f'v{version}']} s", flush=True)
    paired = Paired(items)
    references = paired.reference_groups
    with_p = np.flatnonzero(paired.with_p())
    rows: dict[str, Any] = {}
    for name in [*items, "word overlap"]:
        rows[name] = {"balanced_accuracy": estimate(grouped_bootstrap(lambda idx, n=name: paired.ba(n, idx), references,
                                                                      a.seed))}
        if name in items:
            rows[name]["auroc"] = estimate(grouped_bootstrap(
                lambda idx, n=name: paired.auc(n, with_p[idx]), [paired.groups[i] for i in with_p], a.seed))
    human = balanced_accuracy(paired.reference, paired.held_out)
    new, old = f"v{versions[-1]}", f"v{versions[0]}"

    def difference(statistic: Any, groups: list[str]) -> dict[str, float | None]:
        def diff(idx: np.ndarray) -> float | None:
            x, y = statistic(new, idx), statistic(old, idx)
            return None if x is None or y is None else x - y
        return estimate(grouped_bootstrap(diff, groups, a.seed))

    differences = {
        f"{new} - {old}: balanced accuracy": difference(paired.ba, references),
        f"{new} - {old}: AUROC": difference(lambda n, idx: paired.auc(n, with_p[idx]), [paired.groups[i] for i in with_p]),
        f"{new} - word overlap: balanced accuracy": estimate(grouped_bootstrap(
            lambda idx: None if (x := paired.ba(new, idx)) is None or (y := paired.ba("word overlap", idx)) is None
            else x - y, references, a.seed)),
    }
    meets = (differences[f"{new} - {old}: balanced accuracy"]["value"] >= -MARGIN
             and differences[f"{new} - {old}: AUROC"]["value"] >= -MARGIN)
    result = {"judge": config.name, "documents": len(docs), "per_document": a.per_document,
              "items": len(paired.majority), "items_with_p_in_every_version": len(with_p),
              "document_ids": [d["doc_id"] for d in docs], "thresholds": thresholds, "seconds": seconds,
              "rows": rows, "human_ceiling_balanced_accuracy": human, "differences": differences,
              "rule": f"{new} replaces {old} when both differences are >= -{MARGIN} (and its judge check >= {JUDGE_CHECK})",
              "agreement_part_of_the_rule_met": meets}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    a.out.with_suffix(".md").write_text(markdown(result) + "\n")
    print(markdown(result))


def _e(e: dict[str, float | None] | None) -> str:
    if not e or e["value"] is None:
        return "undefined"
    interval = f" [{e['low']:.3f}, {e['high']:.3f}]" if e["low"] is not None else ""
    return f"{e['value']:.3f}{interval}"


def markdown(r: dict[str, Any]) -> str:
    lines = [f"# Reading vs writing verdicts: {r['judge']} on {r['documents']} fresh REALSumm test documents",
             "", f"{r['items']} (summary, key fact) items ({r['per_document']} summaries per document), "
             f"{r['items_with_p_in_every_version']} with P(kept) in every version; 95% intervals over documents.", "",
             "| scorer | threshold | balanced accuracy (the ceiling's references) | AUROC of P(kept) | seconds |",
             "| --- | --- | --- | --- | --- |"]
    for name, row in r["rows"].items():
        lines.append(f"| {name} | {r['thresholds'].get(name) or '-'} | {_e(row['balanced_accuracy'])} | "
                     f"{_e(row.get('auroc'))} | {r['seconds'].get(name, '-')} |")
    lines.append("| human ceiling (annotator vs the others' majority) | - | "
                 f"{r['human_ceiling_balanced_accuracy']:.3f} | - | - |")
    lines += ["", "| paired difference | value [95%] |", "| --- | --- |"]
    lines += [f"| {name} | {_e(e)} |" for name, e in r["differences"].items()]
    lines += ["", f"Rule (fixed before the first run): {r['rule']}. Agreement part met: "
              f"{'yes' if r['agreement_part_of_the_rule_met'] else 'no'}."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
