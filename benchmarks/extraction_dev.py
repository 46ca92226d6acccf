"""Which extraction prompt a method version should ask facts with: two versions side by side on REALSumm dev documents,
the method end to end against people's LitePyramid recall and the extracted facts against people's key facts, with
the rule fixed before the first run.

    .venv/bin/python benchmarks/extraction_dev.py --data ../shared/eval-data --versions 9,N [--documents 10]
        [--per-document 6] [--store /tmp/extraction-dev-store] [--out benchmarks/results/extraction_dev_cpu]

For each version, on the same dev documents (seed 0): `meta-eval realsumm-end-to-end` (FC and Main FC per summary
against LitePyramid recall) and `meta-eval realsumm-extraction` (people's key facts the extracted facts cover, and
the extracted facts that match none, by the judge and by word overlap). The rule, fixed before any output of the
challenger existed: the second version replaces the first only if FC's mean per-document Spearman is at least
`MARGIN` higher and people's key facts covered (judge rule) is not lower. Both tasks go through one store, so a
rerun only reads. Slow (the whole extraction of every document once per version, 2 minutes each, and one fact
judgment per extracted fact and summary: about 30 minutes per version for 10 documents on 2 cores): not in CI.
Writes <out>.json and <out>.md (aggregate rows only). The results file compares version 9 with a version 11 that was
not kept and is not in the package any more: it is at commit 47249a4 (`git checkout 47249a4` reruns it).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `benchmarks` importable

from scaffold_local.metaeval import PER_DOCUMENT, POOLED, run_task  # noqa: E402
from scaffold_local.runs import (  # noqa: E402
    DEFAULT_MODEL,
    ModelConfig,
    Pipeline,  # noqa: E402
)

ROOT = Path(__file__).resolve().parents[1]
MARGIN = 0.05
CORRELATED = {"judge_fc": "FC", "judge_main_fc": "Main FC", "lexical_fc": "FC, word overlap on the extracted facts"}
COVERAGE = {("judge", "human facts covered"): "people's key facts covered (judge rule)",
            ("lexical", "human facts covered"): "people's key facts covered (word overlap)",
            ("judge", "extracted facts matching no human fact"): "extracted facts matching no key fact (judge rule)",
            ("judge", "extracted main facts matching a human fact"): "main points matching a key fact (judge rule)"}


def measure(pipeline: Pipeline, data: Path, documents: int, per_document: int) -> dict[str, Any]:
    end_to_end, extraction = (run_task(pipeline, task, data, limit=documents, split="dev", per_document=per_document)
                              for task in ("realsumm-end-to-end", "realsumm-extraction"))
    by = {(r["scorer"], r["aggregation"]): r for r in end_to_end.tables["correlation"]}
    per_document_rows = extraction.tables["per_document"]
    return {
        "method_version": pipeline.method.number,
        **{f"{name}, Spearman {level}": by[(scorer, level)]["spearman"] for scorer, name in CORRELATED.items()
           for level in (PER_DOCUMENT, POOLED)},
        # a document whose FC is the same for every summary has no per-document Spearman and leaves the mean
        "documents with a per-document Spearman of FC": by[("judge_fc", PER_DOCUMENT)]["documents"],
        **{name: next(r["value"] for r in extraction.tables["coverage"] if (r["rule"], r["measure"]) == key)
           for key, name in COVERAGE.items()},
        "extracted facts per document": sum(r["extracted_facts"] for r in per_document_rows) / len(per_document_rows),
        "main points per document": sum(r["extracted_main"] for r in per_document_rows) / len(per_document_rows),
        "notes": [end_to_end.summary[-1], extraction.summary[-1]],
    }


def cell(value: float | int | None) -> str:
    return "undefined" if value is None else str(value) if isinstance(value, int) else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--versions", required=True, help="the incumbent, then the challenger: 9,N")
    parser.add_argument("--documents", type=int, default=10)
    parser.add_argument("--per-document", type=int, default=6)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--store", type=Path, default=Path("/tmp/extraction-dev-store"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "extraction_dev_cpu")
    a = parser.parse_args()
    rows = []
    for version in (int(v) for v in a.versions.split(",")):
        pipeline = Pipeline(ModelConfig.load(a.model), a.store, method=version)
        try:
            rows.append(measure(pipeline, a.data, a.documents, a.per_document))
        finally:
            pipeline.close()
    incumbent, challenger = rows
    fc = f"FC, Spearman {PER_DOCUMENT}"
    covered = COVERAGE[("judge", "human facts covered")]
    kept = (challenger[fc] is not None and incumbent[fc] is not None and challenger[fc] >= incumbent[fc] + MARGIN
            and challenger[covered] >= incumbent[covered])
    rule = (f"version {challenger['method_version']} replaces version {incumbent['method_version']} only if FC's "
            f"{PER_DOCUMENT} Spearman is at least {MARGIN} higher and {covered} is not lower")
    summary = {"command": "python benchmarks/extraction_dev.py " + shlex.join(sys.argv[1:]), "model": a.model,
               "documents": a.documents, "per_document": a.per_document, "rule": rule, "kept": kept, "rows": rows}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    measures = [k for k in rows[0] if k not in ("method_version", "notes")]
    lines = [f"# Extraction prompts on REALSumm dev documents: {a.model}, {a.documents} documents x {a.per_document} "
             "summaries", "", f"`{summary['command']}`", "",
             "| measure | " + " | ".join(f"version {r['method_version']}" for r in rows) + " |",
             "| --- |" + " --- |" * len(rows)]
    lines += [f"| {m} | " + " | ".join(cell(r[m]) for r in rows) + " |" for m in measures]
    lines += ["", *(f"- version {r['method_version']}: {'; '.join(r['notes'])}" for r in rows), "",
              f"Rule, fixed before the first run: {rule}. Result: {'kept' if kept else 'not kept'}."]
    a.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
