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

With `--against V`, version V reads the same summaries of the same scaffolds too (the extraction is shared), and the
table gains their paired difference in FC's per-document Spearman, with decision 0005's end-to-end condition
(`no_worse`).
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `benchmarks` importable

from benchmarks.method_agreement import fresh_documents  # noqa: E402
from benchmarks.version_19_dev import paired, spearman  # noqa: E402
from scaffold_local.metaeval import OWN_SUMMARIES, PER_DOCUMENT, POOLED, MetaEvalResult, load, realsumm_end_to_end  # noqa: E402
from scaffold_local.runs import (  # noqa: E402
    DEFAULT_MODEL,
    ModelConfig,
    Pipeline,  # noqa: E402
)

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.50
# Decision 0005, end to end: the new version's paired difference in FC's mean per-document Spearman needs a 95% lower
# bound of at least NO_WORSE; an interval wider than WIDEST either side decides nothing (the draw is extended).
NO_WORSE, WIDEST = -0.05, 0.08
MOST_FAILED = 0.02
LEVELS = (POOLED, PER_DOCUMENT, OWN_SUMMARIES)
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


def by_scorer(result: MetaEvalResult) -> dict[tuple[str, str], dict[str, Any]]:
    """The result's correlation rows by (scorer, aggregation)."""
    return {(r["scorer"], r["aggregation"]): r for r in result.tables["correlation"]}


def per_document_spearman(rows: list[dict]) -> dict[str, float | None]:
    """Each document's Spearman between the judge's FC and people's LitePyramid recall over its summaries."""
    docs: dict[str, list[dict]] = {}
    for row in rows:
        docs.setdefault(row["doc_id"], []).append(row)
    return {d: spearman([r["judge_fc"] for r in mine], [r["human_litepyramid"] for r in mine]) for d, mine in docs.items()}


def no_worse(difference: tuple[float, float, float], failed_share: float) -> str:
    """Decision 0005's end-to-end condition on a paired difference (value, low, high) and the share of summaries
    without the new version's FC: holds, fails or undecided."""
    value, low, high = difference
    if (high - low) / 2 > WIDEST:
        return "undecided"
    return "holds" if low >= NO_WORSE and failed_share <= MOST_FAILED else "fails"


def score(a: argparse.Namespace, version: int | None, docs: list[dict]) -> tuple[MetaEvalResult, int]:
    pipeline = Pipeline(ModelConfig.load(a.model), a.store, method=version)
    try:
        return realsumm_end_to_end(pipeline, docs, a.seed), pipeline.method.number
    finally:
        pipeline.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--per-document", type=int, default=6,
                        help="summaries drawn per document; 0: every system's (system level over all of them)")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--method-version", type=int, default=None)
    parser.add_argument("--against", type=int, default=None,
                        help="a second method version on the same summaries: their paired difference")
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
    started = time.perf_counter()
    result, version = score(a, a.method_version, docs)
    seconds = round(time.perf_counter() - started, 1)
    by = by_scorer(result)
    rows: list[dict[str, Any]] = [{"scorer": NAMES[scorer], **{level: by[(scorer, level)] for level in LEVELS}}
                                  for scorer in NAMES]
    fc, lexical = by[("judge_fc", PER_DOCUMENT)]["spearman"], by[("lexical_fc", PER_DOCUMENT)]["spearman"]
    met = fc is not None and lexical is not None and fc >= GOAL and fc > lexical and len(docs) >= 20
    summary = {"command": "python benchmarks/end_to_end.py " + shlex.join(sys.argv[1:]), "model": a.model,
               "method_version": version, "documents": [d["doc_id"] for d in docs],
               "summaries": result.items, "seconds": seconds,
               "goal": f"FC per-document mean Spearman >= {GOAL} and above word overlap's FC", "goal_met": met,
               "rows": rows, "notes": result.summary[-1]}
    lines = [f"# End to end on REALSumm: {a.model} (method version {version}), {len(docs)} {a.split} "
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
    if a.against is not None:
        lines += against(a, docs, result, version, summary)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    a.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def against(a: argparse.Namespace, docs: list[dict], result: MetaEvalResult, version: int, summary: dict) -> list[str]:
    """The other version on the same summaries: its FC rows and the paired difference (this version minus it)."""
    other, other_version = score(a, a.against, docs)
    fc = {level: by_scorer(other)[("judge_fc", level)] for level in LEVELS}
    mine, theirs = f"version {version}", f"version {other_version}"
    comparison = paired({mine: per_document_spearman(result.tables["per_summary"]),
                         theirs: per_document_spearman(other.tables["per_summary"])}, mine, theirs)
    rows = result.tables["per_summary"]
    failed_share = sum(r["judge_fc"] is None for r in rows) / max(1, len(rows))  # summaries whose FC failed
    condition = no_worse(comparison["difference"], failed_share) if comparison["documents"] else "undecided"
    summary["against"] = {"method_version": other_version, "fc": fc, "paired": comparison,
                          "without_fc": failed_share, "decision_0005_end_to_end": condition}
    f = lambda t: f"{t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]"  # noqa: E731
    return ["", f"## Against {theirs} on the same summaries", "",
            f"| {theirs} | {estimate(fc[POOLED])} | {estimate(fc[PER_DOCUMENT])} | {estimate(fc[OWN_SUMMARIES])} | "
            f"{estimate(fc[OWN_SUMMARIES], 'kendall')} |", "",
            f"FC's per-document Spearman on the {comparison['documents']} documents where both are defined: {mine} "
            f"{f(comparison['mean_a'])}, {theirs} {f(comparison['mean_b'])}, paired difference "
            f"{f(comparison['difference'])}. Decision 0005's end-to-end condition (lower bound >= {NO_WORSE}, "
            f"at most {MOST_FAILED:.0%} of the summaries without {mine}'s FC, an interval at most {WIDEST} either side): "
            f"{condition}."]


if __name__ == "__main__":
    main()
