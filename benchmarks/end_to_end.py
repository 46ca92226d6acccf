"""The method end to end against people: on REALSumm test documents, the judge extracts each document's scaffold,
aligns every summary with its facts, and FC, FPS and Main FC per summary are correlated with people's LitePyramid
recall, beside the same metrics with word overlap as the alignment, word overlap's FC on people's key facts and
ROUGE-L against the reference (`meta-eval realsumm-end-to-end` on a chosen set of documents).

    .venv/bin/python benchmarks/end_to_end.py --data ../shared/eval-data [--documents 20] [--per-document 6]
        [--model CONFIG] [--method-version N] [--store /tmp/end-to-end-store] [--out benchmarks/results/end_to_end_cpu]

The documents: REALSumm's test half without the draws of `benchmarks/judges.py`, the peers benchmark and the first
trials (`method_agreement.EARLIER`: the documents of every earlier FC-against-LitePyramid number), then `--documents`
of the rest drawn with the seed. Those rest were used once before, by `benchmarks/method_agreement.py`, to compare
two key-fact verdict formats on people's own key facts (no extraction, no FC against LitePyramid). The goal, fixed
before the first run: FC's mean per-document Spearman with LitePyramid recall at least 0.50 on 20 or more documents,
and above word overlap's FC on the same summaries. Slow (the whole extraction and one fact judgment per extracted
fact and summary: 80 minutes for 20 documents of 6 summaries on 2 cores, 45 of them extracting): not in CI. The
judgments go through one store, so an interrupted run resumes and a rerun only reads. Writes <out>.json and <out>.md
(aggregate rows only: the per-summary rows hold REALSumm's labels).
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `benchmarks` importable

from benchmarks.method_agreement import fresh_documents  # noqa: E402
from scaffold_local.metaeval import OWN_SUMMARIES, PER_DOCUMENT, POOLED, end_to_end, load  # noqa: E402
from scaffold_local.runs import (  # noqa: E402
    DEFAULT_MODEL,
    ModelConfig,
    Pipeline,  # noqa: E402
)

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.50
NAMES = {"judge_fc": "FC (the judge)", "judge_fps": "FPS (the judge)", "judge_main_fc": "Main FC (the judge)",
         "lexical_fc": "FC (word overlap)", "lexical_fps": "FPS (word overlap)", "lexical_main_fc": "Main FC (word overlap)",
         "lexical_fc_key_facts": "FC (word overlap) on people's key facts instead of the extracted ones",
         "rouge_l": "ROUGE-L against the reference"}


def estimate(row: dict, measure: str = "spearman") -> str:
    if row[measure] is None:
        return "undefined"
    low, high = row[f"{measure}_low95"], row[f"{measure}_high95"]
    interval = "" if low is None else f" [{low:.3f}, {high:.3f}]"
    return f"{row[measure]:.3f}{interval} (n={row['n']}, {row['documents']} documents)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--per-document", type=int, default=6,
                        help="summaries drawn per document; 0: every system's (system level over all of them)")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--method-version", type=int, default=None)
    parser.add_argument("--store", type=Path, default=Path("/tmp/end-to-end-store"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "end_to_end_cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", choices=("dev", "test"), default="test",
                        help="test: the fresh test documents above; dev: REALSumm's dev half, where choices are made")
    a = parser.parse_args()
    per_document = a.per_document or None
    pool = (fresh_documents(a.data, per_document) if a.split == "test"
            else load(a.data, "realsumm", split="dev", per_document=per_document))
    docs = random.Random(a.seed).sample(pool, min(a.documents, len(pool)))
    pipeline = Pipeline(ModelConfig.load(a.model), a.store, method=a.method_version)
    started = time.perf_counter()
    try:
        result = end_to_end(pipeline, docs, a.seed)
    finally:
        pipeline.close()
    seconds = round(time.perf_counter() - started, 1)
    by = {(r["scorer"], r["aggregation"]): r for r in result.tables["correlation"]}
    rows = [{"scorer": NAMES[scorer], **{level: by[(scorer, level)] for level in (POOLED, PER_DOCUMENT, OWN_SUMMARIES)}}
            for scorer in NAMES]
    fc, lexical = by[("judge_fc", PER_DOCUMENT)]["spearman"], by[("lexical_fc", PER_DOCUMENT)]["spearman"]
    met = fc is not None and lexical is not None and fc >= GOAL and fc > lexical and len(docs) >= 20
    summary = {"command": "python benchmarks/end_to_end.py " + shlex.join(sys.argv[1:]), "model": a.model,
               "method_version": pipeline.method.number, "documents": [d["doc_id"] for d in docs],
               "summaries": result.items, "seconds": seconds,
               "goal": f"FC per-document mean Spearman >= {GOAL} and above word overlap's FC", "goal_met": met,
               "rows": rows, "notes": result.summary[-1]}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    lines = [f"# End to end on REALSumm: {a.model} (method version {pipeline.method.number}), {len(docs)} {a.split} "
             f"documents x {a.per_document or 'all'} summaries", "", f"`{summary['command']}`", "",
             "Spearman (and at system level Kendall's tau) with people's LitePyramid recall; 95% intervals resample "
             "documents.", "",
             "| scorer | summary level, pooled | summary level, mean per document | system level (each system's own "
             "summaries) | system level, Kendall's tau |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['scorer']} | {estimate(r[POOLED])} | {estimate(r[PER_DOCUMENT])} | {estimate(r[OWN_SUMMARIES])} | "
              f"{estimate(r[OWN_SUMMARIES], 'kendall')} |" for r in rows]
    lines += ["", f"{result.items} summaries ({summary['notes']}); {seconds} s for this run on this machine (what "
              f"the store already held was read, not judged again). Goal ({summary['goal']}): "
              f"{'met' if met else 'not met'}."]
    a.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
