"""Does reading the sentence check (method version 10) agree with people better than writing it (version 9, the
CPU judge's default)? Both versions of the CPU judge on FRANK test documents that no earlier measurement drew,
beside word overlap and the human ceiling, pooled and per source (CNN/DM, XSum).

    .venv/bin/python benchmarks/sentence_agreement.py --data ../shared/eval-data [--limit 40] [--versions 9,10]
        [--after RESULT.json ...] [--store /tmp/sentence-agreement-store] [--out benchmarks/results/sentence_agreement_cpu]

The rule, fixed before the first run: the CPU judge's default moves to version 10 when, on these documents, its
balanced accuracy on the human ceiling's references is at least version 9's plus MARGIN pooled and not below
version 9's by more than MARGIN on either source (the point estimates). The documents: FRANK's test half (the
fixed split of metaeval/human_labels.py) without those of `benchmarks/judges.py` and the meta-eval tables (30,
seed 0) and of the peers benchmark (5, seed 0), and those listed in the result files `--after` names (a later
comparison's draw leaves out this one's); of the rest, `--limit` drawn at random (seeded). Each version's
judgments go through one store, so an interrupted run resumes and a rerun only reads. Slow (version 9 about 11
minutes for 24 documents on 2 cores): not in CI. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks` importable

from benchmarks.earlier_draws import documents_in, fresh  # noqa: E402
from scaffold_local.metaeval import OTHERS, cell, faithfulness, load, source_of  # noqa: E402
from scaffold_local.runs import (  # noqa: E402
    DEFAULT_MODEL,
    ModelConfig,
    Pipeline,  # noqa: E402
)

MARGIN = 0.02
EARLIER = [dict(limit=30, seed=0, split="test"), dict(limit=5, seed=0, split="test")]


def fresh_documents(data: Path, limit: int, seed: int, after: Sequence[Path] = ()) -> list[dict[str, Any]]:
    used = {d["doc_id"] for draw in EARLIER for d in load(data, "frank", **draw)} | documents_in(after)
    return fresh(load(data, "frank", split="test"), used, limit, seed)


def balanced_accuracy(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int) -> dict[str, dict[str, Any]]:
    """Balanced accuracy on the ceiling's references of the judge, word overlap and the ceiling, with intervals."""
    result = faithfulness(pipeline, docs, seed)
    rows = [r for r in result.tables["agreement"] if r["measure"] == "balanced_accuracy" and r["reference"] == OTHERS]
    out = {}
    for row in rows[:3]:  # the pooled rows come first: the ceiling, the judge, word overlap
        name = "ceiling" if row["source"].startswith("human ceiling") else \
            "judge" if row["source"].startswith("judge") else "word overlap"
        out[name] = {"value": row["value"], "low95": row["low95"], "high95": row["high95"], "references": row["items"]}
    out["judge"]["failed"] = result.failed
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="eval-data folder (it holds frank/)")
    parser.add_argument("--limit", type=int, default=40, help="fresh test documents")
    parser.add_argument("--versions", default="9,10")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--after", type=Path, nargs="*", default=[],
                        help="earlier result files (.json) whose documents this draw leaves out")
    parser.add_argument("--store", type=Path, default=Path("/tmp/sentence-agreement-store"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sentence_agreement_cpu")
    a = parser.parse_args()
    docs = fresh_documents(a.data, a.limit, a.seed, a.after)
    sources = {"pooled": docs, **{s: [d for d in docs if source_of(d) == s] for s in sorted({source_of(d) for d in docs})}}
    config = ModelConfig.load(DEFAULT_MODEL)
    table: dict[str, dict[str, Any]] = {}
    seconds = {}
    for version in (int(v) for v in a.versions.split(",")):
        pipeline = Pipeline(config, a.store, method=version)
        started = time.perf_counter()
        for source, subset in sources.items():  # the pooled run judges; the per-source ones read the store
            measured = balanced_accuracy(pipeline, subset, a.seed)
            table.setdefault(source, {"sentences": sum(len(s["sentences"]) for d in subset for s in d["summaries"]),
                                      "word overlap": measured["word overlap"], "ceiling": measured["ceiling"]})
            table[source][f"version {version}"] = measured["judge"]
        seconds[f"version {version}"] = round(time.perf_counter() - started, 1)
        print(f"version {version}: {seconds[f'version {version}']} s", flush=True)
    versions = [f"version {v}" for v in a.versions.split(",")]
    rule = None
    if versions == ["version 9", "version 10"]:
        nine, ten = ({s: table[s][v]["value"] for s in table} for v in versions)
        rule = ten["pooled"] >= nine["pooled"] + MARGIN and all(ten[s] >= nine[s] - MARGIN for s in table if s != "pooled")
    result = {"command": "python benchmarks/sentence_agreement.py " + shlex.join(sys.argv[1:]), "judge": config.name,
              "documents": [d["doc_id"] for d in docs], "seconds": seconds, "table": table,
              "version 10 becomes the default": rule}
    a.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    text = markdown(result, versions)
    print(text)
    a.out.with_suffix(".md").write_text(text)


def markdown(result: dict[str, Any], versions: list[str]) -> str:
    lines = [f"`{result['command']}`", "", f"FRANK test half, {len(result['documents'])} documents no earlier "
             f"measurement drew; judge {result['judge']}; seconds {result['seconds']}. Balanced accuracy of \"this "
             "sentence has a factual error\" on the human ceiling's references, 95% intervals over documents.", "",
             "| source | sentences | " + " | ".join(versions) + " | word overlap | human ceiling |",
             "| --- " * (len(versions) + 4) + "|"]
    for source, row in result["table"].items():
        lines.append(f"| {source} | {row['sentences']} | " + " | ".join(cell(row[v]) for v in versions)
                     + f" | {cell(row['word overlap'])} | {cell(row['ceiling'])} |")
    if result["version 10 becomes the default"] is not None:
        lines += ["", f"The rule (margin {MARGIN}): version 10 becomes the default: "
                      f"**{'yes' if result['version 10 becomes the default'] else 'no'}**."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
