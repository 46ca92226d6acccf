"""Method version 19's parts on dev halves, each against the same readings without it (decision 0004): FC weighted by
the prior-free q against weighted by P, Main FC with read labels against extracted labels (REALSumm dev, end to end,
against people's LitePyramid recall), and EPS on pairs of a consistent and an entity-edited summary (SummEdits dev),
q against P, beside version 17.

    .venv/bin/python benchmarks/version_19_dev.py --data ../shared/eval-data [--documents 12] [--summedits 8]
        [--store /tmp/version-19-dev-store] [--out benchmarks/results/version_19_dev_cpu]

One store for both versions: the extraction requests are the same, so each document is extracted once, and version
19's P with and without its prior come from the same readings (`by_kind(raw=True)`). Slow (an hour and more on 2
cores): not in CI. Writes <out>.json and <out>.md (aggregates only: per-summary rows hold the data sets' labels).
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks` importable

from scaffold_local.data import Candidate  # noqa: E402
from scaffold_local.metaeval import document_of, load  # noqa: E402
from scaffold_local.method import overlap, score_summary  # noqa: E402
from scaffold_local.runs import DEFAULT_MODEL, ModelConfig, Pipeline  # noqa: E402

ENTITY_EDIT = "entity_modification"
PER_KIND = 4  # consistent and entity-edited summaries per SummEdits document
RESAMPLES = 2000
MATCH = 0.5  # a main fact "matches" a key fact of people's where it holds half its content words (a proxy)


def interval(per_document: list[float], seed: int = 0) -> tuple[float, float, float]:
    """The mean over documents, and its 95% bootstrap interval resampling documents."""
    values = np.asarray(per_document, float)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), (RESAMPLES, len(values)))].mean(axis=1)
    return float(values.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def spearman(x: list[float | None], y: list[float]) -> float | None:
    pairs = [(a, b) for a, b in zip(x, y) if a is not None]
    if len(pairs) < 3 or len({a for a, _ in pairs}) < 2 or len({b for _, b in pairs}) < 2:
        return None
    return float(spearmanr([a for a, _ in pairs], [b for _, b in pairs]).statistic)


def judged(pipeline: Pipeline, items: list[tuple[Any, Any, Candidate]], task: str) -> Callable[..., dict[str, Any]]:
    """Reads every summary's `task` (from the store where it holds them) and returns a function giving one summary's
    records by kind, corrected by the priors or raw."""
    plans = {c.key: pipeline.judge.plan(scaffold, document, c, task=task) for scaffold, document, c in items}
    records, _ = pipeline.answer([p for planned in plans.values() for p in planned], f"reading {task}")
    return lambda c, raw=False: pipeline.judge.by_kind(plans[c.key], records, raw=raw)


def metrics(pipeline: Pipeline, scaffold: Any, document: Any, candidate: Candidate, mine: dict[str, Any],
            weighted: bool) -> dict[str, Any]:
    n = len(pipeline.judge.sentences(candidate.summary, pipeline.judge.summary_language(document)))
    return score_summary(scaffold, pipeline.judge.summary_verdicts(scaffold, n, mine, weighted), system=candidate.system,
                         n_sentences=n).values


def realsumm(data: Path, store: Path, model: str, documents: int, seed: int) -> dict[str, Any]:
    docs = random.Random(seed).sample(load(data, "realsumm", split="dev", per_document=6), documents)
    sources = [document_of(d) for d in docs]
    rows: dict[str, dict[str, list[Any]]] = {}  # variant -> doc_id -> values per summary
    human = {d["doc_id"]: [s["human"]["litepyramid_recall"] for s in d["summaries"]] for d in docs}
    main_counts, matching = [], []
    for version in (17, 19):
        pipeline = Pipeline(ModelConfig.load(model), store, method=version)
        try:
            scaffolds = pipeline.extract(sources).scaffolds
            items = [(scaffolds[s.doc_id], s, Candidate(record=n, doc_id=s.doc_id, system=x["system"], summary=x["summary"]))
                     for d, s in zip(docs, sources) if s.doc_id in scaffolds for n, x in enumerate(d["summaries"], 1)]
            read = judged(pipeline, items, "align_facts")
            for scaffold, document, c in items:
                # name -> (scaffold, raw P, weighted, metric)
                asked = {f"v{version} FC": (scaffold, False, False, "fc"),
                         f"v{version} FC weighted by P": (scaffold, True, True, "fc")}
                if version == 19:
                    extracted = pipeline.scaffolds.get(pipeline.judge.extraction.scaffold_key(document)).scaffold
                    asked |= {"v19 FC weighted by q": (scaffold, False, True, "fc"),
                              "v19 Main FC, read labels": (scaffold, False, False, "main_fc"),
                              "v19 Main FC, extracted labels": (extracted, False, False, "main_fc")}
                variants = {name: metrics(pipeline, sc, document, c, read(c, raw), weighted).get(key)
                            for name, (sc, raw, weighted, key) in asked.items()}
                for name, value in variants.items():
                    rows.setdefault(name, {}).setdefault(c.doc_id, []).append(value)
            if version == 19:
                for d, s in zip(docs, sources):
                    labelled = [*scaffolds[s.doc_id].items("facts"), *scaffolds[s.doc_id].items("questions")]
                    main_counts.append(sum(i.label == "main point" for i in labelled))
                    matching += [max(overlap(f.text, k) for k in d["keyfacts"]) >= MATCH
                                 for f in scaffolds[s.doc_id].items("facts") if f.label == "main point"]
        finally:
            pipeline.close()
    correlations = {name: {doc: spearman(values, human[doc]) for doc, values in by_doc.items()}
                    for name, by_doc in rows.items()}
    return {"documents": [d["doc_id"] for d in docs], "correlations": correlations,
            "main_items_per_document": main_counts, "main_facts_matching_a_key_fact": matching}


def summedits(data: Path, store: Path, model: str, documents: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    pool = []
    for d in load(data, "summedits", split="dev"):
        consistent = [s for s in d["summaries"] if s["human"]["label_consistent"]]
        edited = [s for s in d["summaries"] if not s["human"]["label_consistent"]
                  and (s["human"].get("edit_types") or []) == [ENTITY_EDIT]]
        if consistent and edited:
            pool.append({**d, "summaries": rng.sample(consistent, min(PER_KIND, len(consistent)))
                         + rng.sample(edited, min(PER_KIND, len(edited)))})
    docs = rng.sample(pool, min(documents, len(pool)))
    sources = [document_of(d) for d in docs]
    eps: dict[str, dict[str, list[tuple[bool, float | None]]]] = {}
    for version in (17, 19):
        pipeline = Pipeline(ModelConfig.load(model), store, method=version)
        try:
            scaffolds = pipeline.extract(sources).scaffolds
            items = [(scaffolds[s.doc_id], s, Candidate(record=n, doc_id=s.doc_id, system=f"s{n}", summary=x["summary"]),
                      bool(x["human"]["label_consistent"]))
                     for d, s in zip(docs, sources) if scaffolds.get(s.doc_id) and scaffolds[s.doc_id].items("entities")
                     for n, x in enumerate(d["summaries"], 1)]
            read = judged(pipeline, [i[:3] for i in items], "align_entities")
            for scaffold, document, c, consistent in items:
                variants = {f"v{version} EPS": (read(c), False), f"v{version} EPS weighted by P": (read(c, True), True)}
                if version == 19:
                    variants["v19 EPS weighted by q"] = (read(c), True)
                for name, (mine, weighted) in variants.items():
                    value = metrics(pipeline, scaffold, document, c, mine, weighted).get("eps")
                    eps.setdefault(name, {}).setdefault(c.doc_id, []).append((consistent, value))
        finally:
            pipeline.close()
    return {"documents": [d["doc_id"] for d in docs],
            "consistent_above_edited": {name: {doc: above(pairs) for doc, pairs in by_doc.items()}
                                        for name, by_doc in eps.items()}}


def above(summaries: list[tuple[bool, float | None]]) -> float | None:
    """The share of (consistent, edited) pairs where the consistent summary scores higher; a tie counts half."""
    good = [v for ok, v in summaries if ok and v is not None]
    bad = [v for ok, v in summaries if not ok and v is not None]
    pairs = [1.0 if g > b else 0.5 if g == b else 0.0 for g in good for b in bad]
    return float(np.mean(pairs)) if pairs else None


def paired(per_document: dict[str, dict[str, float | None]], a: str, b: str) -> dict[str, Any]:
    """a against b on the documents where both are defined: each mean and their difference, with intervals."""
    docs = [d for d in per_document[a] if per_document[a][d] is not None and per_document[b].get(d) is not None]
    if not docs:
        return {"a": a, "b": b, "documents": 0}
    first, second = [per_document[a][d] for d in docs], [per_document[b][d] for d in docs]
    return {"a": a, "b": b, "documents": len(docs), "mean_a": interval(first), "mean_b": interval(second),
            "difference": interval([x - y for x, y in zip(first, second)])}


def describe(row: dict[str, Any]) -> str:
    if not row["documents"]:
        return f"| {row['a']} | {row['b']} | 0 | | | |"
    f = lambda t: f"{t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]"  # noqa: E731
    means = " | ".join(f(row[k]) for k in ("mean_a", "mean_b", "difference"))
    return f"| {row['a']} | {row['b']} | {row['documents']} | {means} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--documents", type=int, default=12, help="REALSumm dev documents (6 summaries each)")
    parser.add_argument("--summedits", type=int, default=8, help="SummEdits dev documents (4 + 4 summaries each)")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--store", type=Path, default=Path("/tmp/version-19-dev-store"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "version_19_dev_cpu")
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args()
    started = time.perf_counter()
    facts = realsumm(a.data, a.store, a.model, a.documents, a.seed) if a.documents else None
    entities = summedits(a.data, a.store, a.model, a.summedits, a.seed) if a.summedits else None
    rows = []
    if facts:
        c = facts["correlations"]
        rows += [paired(c, "v19 FC weighted by q", "v19 FC weighted by P"),
                 paired(c, "v19 Main FC, read labels", "v19 Main FC, extracted labels"),
                 paired(c, "v19 FC", "v17 FC"), paired(c, "v19 FC weighted by q", "v17 FC weighted by P")]
    if entities:
        e = entities["consistent_above_edited"]
        rows += [paired(e, "v19 EPS weighted by q", "v19 EPS weighted by P"), paired(e, "v19 EPS weighted by P",
                                                                                     "v17 EPS weighted by P"),
                 paired(e, "v19 EPS", "v17 EPS")]
    summary = {"command": "python benchmarks/version_19_dev.py " + shlex.join(sys.argv[1:]), "model": a.model,
               "seconds": round(time.perf_counter() - started, 1), "rows": rows, "realsumm": facts, "summedits": entities}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    lines = ["# Method version 19's parts on dev halves (decision 0004)", "", f"`{summary['command']}`", "",
             "REALSumm rows: mean per-document Spearman with LitePyramid recall; SummEdits rows: the share of a "
             "document's (consistent, entity-edited) pairs where the consistent summary scores higher (a tie half), "
             "mean per document. 95% intervals resample documents.", "",
             "| a | b | documents | a | b | a - b |", "| --- | --- | --- | --- | --- | --- |", *map(describe, rows)]
    if facts:
        counts, matching = facts["main_items_per_document"], facts["main_facts_matching_a_key_fact"]
        lines += ["", f"Main items per document (read labels, facts and questions): mean {np.mean(counts):.1f}, "
                      f"{min(counts)}-{max(counts)}; main facts holding half the words of a key fact of people's: "
                      f"{np.mean(matching):.2f} of {len(matching)}."]
    lines += ["", f"{summary['seconds']} s on this machine (what the store held was read, not judged again)."]
    a.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
