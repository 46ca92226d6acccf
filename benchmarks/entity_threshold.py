"""The entity attributes' threshold on P(kept) (method version 12, which reads every attribute), chosen on SummEdits'
dev documents and reported on test documents no earlier measurement drew: does EPS rank a document's consistent
summaries above those people found inconsistent after an entity edit alone (`meta-eval summedits-entities`)?

    .venv/bin/python benchmarks/entity_threshold.py --data ../shared/eval-data [--dev 8] [--test 8]
        [--store /tmp/entity-threshold-store] [--out benchmarks/results/entity_threshold_cpu]

The rule, fixed before the first run: the CPU judge's [thresholds.12] entities is the threshold that ranks best on
the dev documents (of equally good ones, the middle one); on the test documents EPS at that threshold is reported
beside EPS at 0.5, the mean P(kept) and word overlap, and nothing else is chosen. The test documents: SummEdits'
test half without the 24 that the sentence-check measurement drew (docs, "SummEdits"); of the rest, `--test` drawn
at random (seeded). One store, so an interrupted run resumes and a rerun only reads. Slow (tens of minutes on 2
cores): not in CI. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks` importable

from benchmarks.earlier_draws import fresh  # noqa: E402
from scaffold_local.metaeval import best_of, cell, entity_edits, load  # noqa: E402
from scaffold_local.runs import (  # noqa: E402
    DEFAULT_MODEL,
    ModelConfig,
    Pipeline,  # noqa: E402
)

VERSION = 12
EARLIER = dict(limit=24, seed=0, split="test", per_document=6)  # the SummEdits sentence-check measurement's draw
SCORERS = ("judge_eps", "weighted_eps", "word_overlap_eps")


def fresh_test_documents(data: Path, limit: int, seed: int) -> list[dict[str, Any]]:
    return fresh(load(data, "summedits", split="test"), {d["doc_id"] for d in load(data, "summedits", **EARLIER)},
                 limit, seed)


def measured(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    result = entity_edits(pipeline, docs, seed)
    paired = {r["scorer"]: {k: r[k] for k in ("threshold", "value", "low95", "high95", "pairs")}
              for r in result.tables["paired"]}
    return {"documents": [d["doc_id"] for d in docs], "summaries": result.items, "failed": result.failed,
            "seconds": round(time.perf_counter() - started, 1), "paired": paired,
            "best_threshold": best_of(result.tables["paired"]), "notes": result.summary[-1],
            "touched": next(line for line in result.summary if line.startswith("edits that touch"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="eval-data folder (it holds summedits/)")
    parser.add_argument("--dev", type=int, default=8, help="dev documents")
    parser.add_argument("--test", type=int, default=8, help="fresh test documents")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", type=Path, default=Path("/tmp/entity-threshold-store"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "entity_threshold_cpu")
    a = parser.parse_args()
    config = ModelConfig.load(DEFAULT_MODEL)
    dev = measured(Pipeline(config, a.store, method=VERSION), load(a.data, "summedits", a.dev, a.seed, "dev"), a.seed)
    print(f"dev: {dev['seconds']} s, best threshold {dev['best_threshold']}", flush=True)
    chosen = dev["best_threshold"]
    thresholds = {**config.thresholds.get(VERSION, {}), "entities": chosen}
    calibrated = config.model_copy(update={"thresholds": {**config.thresholds, VERSION: thresholds}})
    test = measured(Pipeline(calibrated, a.store, method=VERSION), fresh_test_documents(a.data, a.test, a.seed), a.seed)
    result = {"command": "python benchmarks/entity_threshold.py " + shlex.join(sys.argv[1:]), "judge": config.name,
              "method_version": VERSION, "threshold": chosen, "dev": dev, "test": test}
    a.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    print(text)
    a.out.with_suffix(".md").write_text(text)


def markdown(result: dict[str, Any]) -> str:
    t = result["threshold"]
    rows = [(f"EPS, P(kept) >= {t:.2f} (the dev documents' best)", f"judge_eps at P >= {t:.2f}"),
            ("EPS, P(kept) >= 0.50", "judge_eps at P >= 0.50"), ("EPS, mean P(kept)", "weighted_eps"),
            ("EPS, word overlap", "word_overlap_eps")]
    lines = [f"`{result['command']}`", "",
             f"SummEdits, judge {result['judge']}, method version {result['method_version']}: the share of (consistent, "
             "entity-edited) summary pairs of one document where EPS is higher for the consistent summary (a tie "
             "counts half), mean over documents, 95% intervals over documents.", "",
             "| EPS read as | dev | test |", "| --- | --- | --- |"]
    for name, key in rows:
        lines.append(f"| {name} | {cell(result['dev']['paired'].get(key))} | {cell(result['test']['paired'].get(key))} |")
    for half in ("dev", "test"):
        h = result[half]
        lines.append("")
        lines.append(f"{half}: {len(h['documents'])} documents drawn, {h['summaries']} summaries scored, "
                     f"{h['failed']} failed, {h['seconds']} s; {h['notes']}")
        lines.append(f"{half}, {h['touched']}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
