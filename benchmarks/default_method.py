"""Which method version the judges default to: two versions of one judge on the same fresh test documents of up to
four human-labelled sets, each version at its own calibrated thresholds, with paired intervals over documents. Each
decision's rule and draws are fixed in benchmarks/decisions/ before the run that applies them (`DECISIONS`).

    .venv/bin/python benchmarks/default_method.py --data ../shared/eval-data [--decision 2] [--model CONFIG]
        [--only REALSumm,FRANK] [--store /tmp/default-method-store] [--out benchmarks/results/<the decision's file>]

The sets and what is compared (balanced accuracy; a failed item is left out of both versions and counted):
- REALSumm: is each key fact in the summary, on the human ceiling's references (each annotator's label against
  the majority of the others);
- FRANK: does each summary sentence hold an error, on the ceiling's references, pooled over CNN/DM and XSum;
- SummEdits: is the summary inconsistent (some sentence unsupported), mean over its domains;
- AggreFact: does the summary hold an error people marked, pooled over CNN/DM and XSum.
Beside each: word overlap, the human ceiling where there are several annotators, and AUROC of each version's P.
Each version's judgments go through one store, so an interrupted run resumes and a rerun only reads. Slow (hours on
2 cores): not in CI. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks` importable

from benchmarks.earlier_draws import documents_in, fresh  # noqa: E402
from scaffold_local.data import Candidate  # noqa: E402
from scaffold_local.judge_check import SANITY_GATE, saved_balanced_accuracy  # noqa: E402
from scaffold_local.metaeval import (  # noqa: E402
    check_summaries,
    document_of,
    domain_of,
    facts_scaffold,
    flagged_by_overlap,
    load,
    majority_of_others,
    present_by_overlap,
    source_of,
)
from scaffold_local.runs import (  # noqa: E402
    DEFAULT_MODEL,
    ModelConfig,
    Pipeline,  # noqa: E402
)

SETS = ("REALSumm", "FRANK", "SummEdits", "AggreFact")
RESAMPLES = 1000
RESULTS = ROOT / "benchmarks" / "results"


@dataclass(frozen=True)
class Decision:
    """A decision of benchmarks/decisions/: its draws' seed, the versions it compares, its sets, its results file."""

    number: int
    seed: int
    versions: tuple[int, int]
    sets: tuple[str, ...]
    out: str  # the results' file name in benchmarks/results/, without its suffix
    checks_citations: bool = False  # its rule limits the kept facts left uncited (a version with citations apart)
    # Where the new version need only be no worse (decisions 0003, 0005): the lowest 95% lower bound of the mean
    # difference over the sets, and the lowest point difference of any set; None: better (the mean at least 0).
    no_worse: tuple[float, float] | None = None
    draws_of: int | None = None  # an earlier decision whose documents it measures again
    first: tuple[tuple[str, int], ...] = ()  # the first documents of each set's draw, where it takes a part


DECISIONS = {1: Decision(1, 58, (9, 15), SETS, "default_method_cpu"),
             # AggreFact's whole test half went to decision 1: no fresh document is left
             2: Decision(2, 16, (9, 16), SETS[:3], "default_method_16_cpu", checks_citations=True),
             3: Decision(3, 16, (16, 17), SETS[:3], "default_method_17_cpu", checks_citations=True,
                         no_worse=(-0.01, -0.02), draws_of=2, first=(("REALSumm", 16), ("FRANK", 25), ("SummEdits", 18))),
             # REALSumm's part of decision 0005 is end to end (benchmarks/end_to_end.py); here, the sentence checks
             5: Decision(5, 16, (17, 20), ("FRANK", "SummEdits"), "default_method_20_cpu", no_worse=(-0.03, -0.02),
                         draws_of=2)}


def decision_documents(data: Path, decision: Decision) -> dict[str, list[dict[str, Any]]]:
    """The documents a decision measures: its own draws, or the first of an earlier decision's."""
    chosen = draws(data, DECISIONS[decision.draws_of or decision.number])
    first = dict(decision.first)
    return {name: docs[:first[name]] if name in first else docs for name, docs in chosen.items() if name in decision.sets}


# ---------------------------------------------------------------- the draws (benchmarks/decisions/)

def _taken(draws: Sequence[list[dict[str, Any]]]) -> set[tuple[str, str]]:
    """The (document, summary text) pairs of earlier draws."""
    return {(str(d["doc_id"]), s["summary"]) for draw in draws for d in draw for s in d["summaries"]}


def _earlier_results(decision: Decision) -> list[Path]:
    """The result files written before `decision`'s run: not its own results, nor a later decision's."""
    later = {f"{d.out}.json" for d in DECISIONS.values() if d.number >= decision.number}
    return [p for p in sorted(RESULTS.glob("*.json")) if p.name not in later]


def _rows_in_results(files: list[Path]) -> set[tuple[str, str]]:
    """Every (document, system) pair a stored result lists in a row."""
    found: set[tuple[str, str]] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("doc_id"), str) and isinstance(value.get("system"), str):
                found.add((value["doc_id"], value["system"]))
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    for path in files:
        walk(json.loads(path.read_text()))
    return found


def _fresh_summaries(docs: list[dict[str, Any]], taken: set[tuple[str, str]], per_document: int,
                     seed: int) -> list[dict[str, Any]]:
    """Each document with `per_document` of the summaries no earlier draw took (`taken` holds (document, summary
    text) and, from result rows, (document, system) pairs; seeded per document, in file order); a document with none
    left is dropped."""
    out = []
    for doc in docs:
        doc_id = str(doc["doc_id"])
        left = [s for s in doc["summaries"] if (doc_id, s["summary"]) not in taken and (doc_id, s["system"]) not in taken]
        if left:
            chosen = sorted(random.Random(f"{seed}:{doc_id}").sample(range(len(left)), min(per_document, len(left))))
            out.append({**doc, "summaries": [left[i] for i in chosen]})
    return out


def draws(data: Path, decision: Decision = DECISIONS[1]) -> dict[str, list[dict[str, Any]]]:
    """The test documents of each of `decision`'s sets, as its record fixes them: what no earlier measurement and no
    earlier decision drew."""
    test = {name: load(data, name, split="test") for name in ("realsumm", "frank", "summedits", "aggrefact")}
    earlier = [draws(data, d) for d in DECISIONS.values() if d.number < decision.number]
    rows = _rows_in_results(_earlier_results(decision))
    realsumm_taken = _taken([load(data, "realsumm", split="test", per_document=n) for n in (5, 6)]
                            + [load(data, "realsumm", limit=n, seed=s) for n, s in ((2, 0), (1, 0), (3, 1))]
                            + [load(data, "realsumm", limit=5, seed=0, split="test")]
                            + [e["REALSumm"] for e in earlier]) | rows
    # SummEdits' summaries of one document share system names: earlier sentence checks drew 6 per document (seed 0)
    summedits_taken = _taken([load(data, "summedits", split="test", per_document=6)]
                             + [e["SummEdits"] for e in earlier])
    frank_used = {str(d["doc_id"]) for n in (30, 5) for d in load(data, "frank", limit=n, seed=0, split="test")}
    frank_used |= documents_in(_earlier_results(decision)) | {d for d, _ in rows}
    frank_used |= {str(d["doc_id"]) for e in earlier for d in e["FRANK"]}
    chosen = {"REALSumm": _fresh_summaries(test["realsumm"], realsumm_taken, 5, decision.seed),
              "FRANK": fresh(test["frank"], frank_used, 100, decision.seed),
              "SummEdits": _fresh_summaries(test["summedits"], summedits_taken, 6, decision.seed),
              "AggreFact": test["aggrefact"]}
    return {name: docs for name, docs in chosen.items() if name in decision.sets}


# ---------------------------------------------------------------- one version's decisions

@dataclass
class Unit:
    """One judged item: its document and stratum, the human references it is scored on (the ceiling's, or the
    label), the judge's decision (1: the positive class; None: its verdict failed), P of the positive class, and
    word overlap's decision."""

    doc: str
    stratum: str
    references: list[int]
    decision: int | None
    p: float | None
    overlap: int
    held_out: list[int] = field(default_factory=list)  # the held-out annotators' labels (the ceiling)
    uncited: bool = False  # a kept fact whose citation reading failed (its verdict stands: method version 16)


Units = dict[tuple[Any, ...], Unit]


def realsumm_units(pipeline: Pipeline, docs: list[dict[str, Any]]) -> Units:
    """Per (summary, key fact): present (1) or not."""
    plans = []
    for doc in docs:
        document = document_of(doc)
        scaffold = facts_scaffold(document, doc["keyfacts"])
        for n, summary in enumerate(doc["summaries"]):
            candidate = Candidate(record=n, doc_id=document.doc_id, system=summary["system"], summary=summary["summary"])
            plans.append((doc, summary, pipeline.judge.plan(scaffold, document, candidate, task="align_facts")))
    records, _ = pipeline.answer([p for *_, planned in plans for p in planned], "REALSumm key facts")
    units: Units = {}
    for doc, summary, planned in plans:
        record = pipeline.judge.by_kind(planned, records).get("facts")
        verdicts = pipeline.judge.verdicts("facts", record) if record is not None and record.parsed is not None else None
        annotators = summary["human"].get("scu_presence_per_annotator") or [summary["human"]["scu_presence"]]
        pairs, _ = majority_of_others(annotators)
        overlap = present_by_overlap(doc["keyfacts"], summary["summary"])
        for i in range(len(doc["keyfacts"])):
            item = f"F{i + 1}"
            failed = verdicts is None or verdicts.failure(item)
            units[(doc["doc_id"], summary["system"], item)] = Unit(
                str(doc["doc_id"]), "all", [r for at, _, r in pairs if at == i],
                None if failed else int(bool(verdicts.kept.get(item))),  # type: ignore[union-attr]
                (record.confidence or {}).get(item) if record is not None else None, overlap[i],
                [h for at, h, _ in pairs if at == i], not failed and item in verdicts.uncited)  # type: ignore[union-attr]
    return units


def frank_units(pipeline: Pipeline, docs: list[dict[str, Any]]) -> Units:
    """Per summary sentence: an error (1) or not; a summary the judge's splitter cuts otherwise is left out."""
    plans = []
    for doc in docs:
        document = document_of(doc)
        for n, summary in enumerate(doc["summaries"]):
            text = "\n".join(summary["sentences"])
            if len(pipeline.judge.sentences(text)) == len(summary["sentences"]):
                candidate = Candidate(record=n, doc_id=document.doc_id, system=summary["system"], summary=text)
                plans.append((doc, summary, document, pipeline.judge.plan(None, document, candidate,
                                                                          task="check_faithfulness")))
    records, _ = pipeline.answer([p for *_, planned in plans for p in planned], "FRANK sentences")
    units: Units = {}
    for doc, summary, document, planned in plans:
        record = pipeline.judge.by_kind(planned, records).get("faithfulness")
        n = len(summary["sentences"])
        supported = pipeline.judge.sentence_verdicts(record, n) if record is not None and record.parsed else [None] * n
        annotators = summary["human"].get("sentence_error_per_annotator") or [summary["human"]["sentence_error_majority"]]
        pairs, _ = majority_of_others(annotators)
        overlap = flagged_by_overlap(summary["sentences"], document.text)
        confidence = (record.confidence or {}) if record is not None else {}
        for i in range(n):
            p = confidence.get(f"S{i + 1}")
            units[(doc["doc_id"], summary["system"], i)] = Unit(
                str(doc["doc_id"]), source_of(doc), [r for at, _, r in pairs if at == i],
                None if supported[i] is None else int(not supported[i]), None if p is None else 1 - p, overlap[i],
                [h for at, h, _ in pairs if at == i])
    return units


def summary_units(label: Callable[[dict[str, Any]], int], stratum: Callable[[dict[str, Any]], str]) -> Callable[..., Units]:
    """Per summary: inconsistent (1) or not, for the sets that label whole summaries; a failed summary is left out."""
    def units(pipeline: Pipeline, docs: list[dict[str, Any]]) -> Units:
        checked, _ = check_summaries(pipeline, docs, "checking summaries")
        out: Units = {(c.doc_id, c.doc["summaries"].index(c.summary)): Unit(
            c.doc_id, stratum(c.doc), [label(c.summary)], int(any(c.judge)),
            None if c.supported is None else 1 - min(c.supported), int(any(c.word_overlap))) for c in checked}
        for doc in docs:  # a summary whose check failed: present, without a decision
            for n, _ in enumerate(doc["summaries"]):
                out.setdefault((str(doc["doc_id"]), n), Unit(str(doc["doc_id"]), stratum(doc), [], None, None, 0))
        return out
    return units


UNITS = {"REALSumm": realsumm_units, "FRANK": frank_units,
         "SummEdits": summary_units(lambda s: 1 - s["human"]["label_consistent"], domain_of),
         "AggreFact": summary_units(lambda s: 1 - s["human"]["is_consistent"], source_of)}
BY_STRATUM = {"SummEdits"}  # balanced accuracy per stratum, then their mean; elsewhere pooled


# ---------------------------------------------------------------- agreement and paired differences

def balanced_accuracy(truth: np.ndarray, decided: np.ndarray) -> float | None:
    if truth.all() or not truth.any():
        return None
    return float((decided[truth].mean() + (~decided[~truth]).mean()) / 2)


def agreement(units: list[Unit], decide: Callable[[Unit], int], by_stratum: bool) -> float | None:
    """Balanced accuracy of `decide` over every reference of `units` (per stratum and averaged, where asked)."""
    def pooled(chosen: list[Unit]) -> float | None:
        truth = np.array([r for u in chosen for r in u.references], bool)
        decided = np.array([decide(u) for u in chosen for _ in u.references], bool)
        return balanced_accuracy(truth, decided) if len(truth) else None
    if not by_stratum:
        return pooled(units)
    strata = sorted({u.stratum for u in units})
    found = [v for s in strata if (v := pooled([u for u in units if u.stratum == s])) is not None]
    return float(np.mean(found)) if found else None


def auroc(units: list[Unit], p: Callable[[Unit], float | None]) -> float | None:
    from sklearn.metrics import roc_auc_score

    pairs = [(r, p(u)) for u in units for r in u.references if p(u) is not None]
    truth = [t for t, _ in pairs]
    return float(roc_auc_score(truth, [q for _, q in pairs])) if 0 < sum(truth) < len(truth) else None


def bootstrap(statistic: Callable[[list[Any]], float | None], elements: list[Any], doc: Callable[[Any], str],
              seed: int) -> dict[str, Any]:
    """The statistic of `elements` (units, or pairs of them), and its 95% percentile interval resampling whole
    documents; the resampled values are kept (`_draws`) for the mean over sets."""
    by_doc: dict[str, list[Any]] = {}
    for element in elements:
        by_doc.setdefault(doc(element), []).append(element)
    docs = list(by_doc)
    rng = np.random.default_rng(seed)
    draws = [statistic([e for i in rng.integers(0, len(docs), len(docs)) for e in by_doc[docs[i]]])
             for _ in range(RESAMPLES)]
    found = [d for d in draws if d is not None]
    low, high = (float(np.percentile(found, q)) for q in (2.5, 97.5)) if len(found) >= RESAMPLES // 2 else (None, None)
    return {"value": statistic(elements), "low95": low, "high95": high, "_draws": found}


def compare(units: dict[str, Units], by_stratum: bool, seed: int) -> dict[str, Any]:
    """Each version, word overlap and the ceiling on the items every version decided; the paired differences."""
    old, new = units
    keys = [k for k in units[old] if k in units[new] and all(units[v][k].decision is not None for v in units)]

    def on(version: str) -> list[Unit]:
        return [units[version][k] for k in keys]

    out: dict[str, Any] = {"items": len(keys), "documents": len({units[old][k].doc for k in keys}),
                           "failed": {v: sum(u.decision is None for u in units[v].values()) for v in units},
                           "of": {v: len(units[v]) for v in units},
                           "uncited": {v: sum(u.uncited for u in units[v].values()) for v in units},
                           "kept": {v: sum(u.decision == 1 for u in units[v].values()) for v in units}}
    def of(u: Unit) -> str:
        return u.doc

    for version in units:
        out[version] = bootstrap(lambda us: agreement(us, lambda u: u.decision, by_stratum), on(version), of, seed)
        out[f"{version} AUROC"] = bootstrap(lambda us: auroc(us, lambda u: u.p), on(version), of, seed)
    out["word overlap"] = bootstrap(lambda us: agreement(us, lambda u: u.overlap, by_stratum), on(new), of, seed)
    if any(u.held_out for u in on(new)):
        out["human ceiling"] = bootstrap(lambda us: _ceiling(us, by_stratum), on(new), of, seed)

    def difference(pairs: list[tuple[Unit, Unit]]) -> float | None:
        a = agreement([p for p, _ in pairs], lambda u: u.decision, by_stratum)
        b = agreement([q for _, q in pairs], lambda u: u.decision, by_stratum)
        return None if a is None or b is None else b - a
    out["difference"] = bootstrap(difference, [(units[old][k], units[new][k]) for k in keys], lambda p: p[0].doc, seed)
    return out


def _ceiling(units: list[Unit], by_stratum: bool) -> float | None:
    """Each held-out annotator against the others' majority: references and labels paired one to one."""
    flat = [Unit(u.doc, u.stratum, [r], h, None, 0) for u in units for r, h in zip(u.references, u.held_out)]
    return agreement(flat, lambda u: u.decision, by_stratum)


# ---------------------------------------------------------------- the rule of decisions 0001 and 0002

MARGIN = 0.03
MOST_FAILED = 0.02


def decide(table: dict[str, dict[str, Any]], old: str, new: str, checks_citations: bool = False,
           no_worse: tuple[float, float] | None = None) -> dict[str, Any]:
    """The rule: the new version becomes every config's default if the mean over the sets of its paired difference
    in balanced accuracy is at least 0, on no set is it below -MARGIN, and on no set does the new version fail more
    than MOST_FAILED of the items (nor, where the decision `checks_citations`, leave more than MOST_FAILED of its
    kept facts uncited); point estimates. A decision that asks for `no_worse` = (mean, set) wants instead the mean's
    95% lower bound at least `mean` and no set's difference below `set`."""
    differences = {name: row["difference"]["value"] for name, row in table.items()}
    draws = [row["difference"]["_draws"] for row in table.values()]
    size = min(len(d) for d in draws)
    mean_draws = np.mean([d[:size] for d in draws], axis=0)  # the sets' resamples are independent: their mean's
    mean, low = float(np.mean(list(differences.values()))), float(np.percentile(mean_draws, 2.5))
    lowest_set = no_worse[1] if no_worse else -MARGIN
    fallen = [name for name, d in differences.items() if d < lowest_set]
    failing = [name for name, row in table.items() if row["failed"][new] > MOST_FAILED * row["of"][new]
               or checks_citations and row["uncited"][new] > MOST_FAILED * row["kept"][new]]
    mean_holds = low >= no_worse[0] if no_worse else mean >= 0
    mean_rule = f"the mean's 95% lower bound >= {no_worse[0]}" if no_worse else "mean of the paired differences >= 0"
    return {"mean difference": mean, "low95": low, "high95": float(np.percentile(mean_draws, 97.5)),
            "sets below the margin": fallen, "sets with too many failed items": failing,
            "moves": mean_holds and not fallen and not failing,
            "rule": f"{mean_rule}, none below {lowest_set}, none with over "
                    f"{MOST_FAILED:.0%} of {new}'s items failed" + (" or of its kept facts uncited" if checks_citations
                                                                    else "")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--decision", type=int, default=1, choices=sorted(DECISIONS),
                        help="whose draws, versions and rule (benchmarks/decisions/)")
    parser.add_argument("--versions", help="the versions compared (default: the decision's)")
    parser.add_argument("--only", help="the sets to run (default: the decision's; its rule needs them all)")
    parser.add_argument("--all-documents", action="store_true",
                        help="every document of the draw the decision takes a part of: a measurement, not the decision "
                             "(no outcome is written)")
    parser.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")
    parser.add_argument("--store", type=Path, default=Path("/tmp/default-method-store"))
    parser.add_argument("--out", type=Path, help="default: benchmarks/results/<the decision's results file>")
    a = parser.parse_args()
    decision = DECISIONS[a.decision]
    versions = [int(v) for v in a.versions.split(",")] if a.versions else list(decision.versions)
    names = [f"version {v}" for v in versions]
    chosen = draws(a.data, DECISIONS[decision.draws_of or decision.number]) if a.all_documents \
        else decision_documents(a.data, decision)
    sets = [s for s in decision.sets if s in (a.only.split(",") if a.only else decision.sets)]
    a.out = a.out or RESULTS / decision.out
    config = ModelConfig.load(a.model)
    checked = saved_balanced_accuracy(a.store, config, versions[-1])
    if checked is None or checked < SANITY_GATE:  # the sanity gate: a judge below it decides nothing
        sys.exit(f"the judge check of {config.name} under version {versions[-1]} is {checked} (gate {SANITY_GATE}): "
                 f"run `scaffold-local check-judge -m {config.name} --method-version {versions[-1]} --store {a.store}`")
    units: dict[str, dict[str, Units]] = {s: {} for s in sets}
    seconds: dict[str, dict[str, float]] = {s: {} for s in sets}
    thresholds = {}
    for version, name in zip(versions, names):
        pipeline = Pipeline(config, a.store, method=version)
        thresholds[name] = pipeline.judge.thresholds
        try:
            for s in sets:
                started = time.perf_counter()
                units[s][name] = UNITS[s](pipeline, chosen[s])
                seconds[s][name] = round(time.perf_counter() - started, 1)
                print(f"{name}, {s}: {len(units[s][name])} items in {seconds[s][name]} s", flush=True)
        finally:
            pipeline.close()
    table = {s: compare(units[s], s in BY_STRATUM, a.seed) for s in sets}
    complete = len(sets) == len(decision.sets) and not a.all_documents  # the rule needs every set of the decision
    result = {"command": "python benchmarks/default_method.py " + shlex.join(sys.argv[1:]), "decision": decision.number,
              "judge": config.name, "versions": names, "thresholds": thresholds, "seconds": seconds,
              **({"drawn": f"decision {decision.draws_of or decision.number:04d} draws them, all of them (a measurement, "
                           "not the decision)"} if a.all_documents else {}),
              "documents": {s: [str(d["doc_id"]) for d in chosen[s]] for s in sets},
              "table": table,
              "outcome": decide(table, *names, decision.checks_citations, decision.no_worse) if complete else None}
    text = markdown(result)
    for row in table.values():
        for entry in row.values():
            if isinstance(entry, dict):
                entry.pop("_draws", None)
    if result["outcome"] is not None:
        result["outcome"].pop("_draws", None)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    a.out.with_suffix(".md").write_text(text)
    print(text)


def cell(e: dict[str, Any] | None) -> str:
    if not e or e.get("value") is None:
        return "-"
    interval = f" [{e['low95']:.3f}, {e['high95']:.3f}]" if e.get("low95") is not None else ""
    return f"{e['value']:.3f}{interval}"


def markdown(result: dict[str, Any]) -> str:
    old, new = result["versions"]
    drawn = result.get("drawn") or f"decision {result['decision']:04d} draws them"
    lines = [f"`{result['command']}`", "", f"Judge {result['judge']}; each version at its own thresholds "
             f"({result['thresholds']}); test documents as {drawn}; 95% intervals "
             "resample documents; a version's seconds are this command's (judgments already in the store are read, "
             "not made); "
             "items a version failed are left out of both.", "",
             f"| set | documents / items | {old} | {new} | {new} - {old} (paired) | word overlap | human ceiling | "
             f"AUROC {old} | AUROC {new} | failed ({old} / {new}) | seconds of this command ({old} / {new}) |",
             "| --- " * 11 + "|"]
    for name, row in result["table"].items():
        seconds = result["seconds"][name]
        lines.append(f"| {name} | {row['documents']} / {row['items']} | {cell(row[old])} | {cell(row[new])} | "
                     f"{cell(row['difference'])} | {cell(row['word overlap'])} | {cell(row.get('human ceiling'))} | "
                     f"{cell(row[f'{old} AUROC'])} | {cell(row[f'{new} AUROC'])} | "
                     f"{row['failed'][old]} of {row['of'][old]} / {row['failed'][new]} of {row['of'][new]} | "
                     f"{seconds.get(old, '-')} / {seconds.get(new, '-')} |")
    uncited = {name: row["uncited"][new] for name, row in result["table"].items() if row.get("uncited", {}).get(new)}
    if uncited:
        lines += ["", "Kept facts whose citation reading failed (their verdicts stand; Fact Focus unknown where they "
                      "matter): " + ", ".join(f"{name} {n} of {result['table'][name]['kept'][new]}"
                                              for name, n in uncited.items())]
    decision = result["outcome"]
    if decision is not None:
        lines += ["", f"Mean of the paired differences over the sets: {decision['mean difference']:.3f} "
                      f"[{decision['low95']:.3f}, {decision['high95']:.3f}]; sets below the margin: "
                      f"{', '.join(decision['sets below the margin']) or 'none'}; sets where {new} failed over "
                      f"{MOST_FAILED:.0%} of the items (or left its kept facts uncited): "
                      f"{', '.join(decision['sets with too many failed items']) or 'none'}. "
                      f"The rule ({decision['rule']}): "
                      f"{new} becomes the default: **{'yes' if decision['moves'] else 'no'}**."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
