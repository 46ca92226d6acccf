"""Pairwise against people: does a scorer order two summaries of one document as people do?

The full method runs on the sampled summaries (extraction, every judgment) with the holistic pairwise
baseline read on every pair of each document, both orders. People's order of a pair is its score from
people: REALSumm's LitePyramid recall, SummEval's expert relevance and, separately, consistency (a pair that
people score alike is left out). Each scorer orders the same pairs: grounded pairwise (more main facts kept,
then main questions, then main attributes; and by P(A keeps more main facts than B) against the reverse),
holistic pairwise (P averaged over both orders), FPS, FC and the direct score (their values), ROUGE-L against
the reference(s) and, where the data has human key facts, word overlap with them (the lexical baselines). A
scorer's tie counts half. Table `pair_agreement`: per human score, the share of pairs ordered as people order
them, with a 95% interval over resampled documents; `pairs`: every pair with each scorer's order."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..analysis.items import item_verdicts
from ..analysis.pairwise import grounded_preferences
from ..data.inputs import Candidate, LoadedInput
from ..method.metrics import rouge_l
from ..runs import Run, RunOutcome
from ..runs import load as load_run
from ..runs.holistic_pairs import Pairing
from ..runs.pipeline import Pipeline
from .agreement import grouped_bootstrap
from .realsumm import document_of, present_by_overlap
from .results import MetaEvalResult

VALUE_SCORERS = ("fps", "fc", "ds", "rouge_l", "word_overlap_fc")  # ordered by their values
PAIR_SCORERS = ("grounded pairwise", "grounded pairwise P", "holistic pairwise")  # by a preference per pair
PeopleScore = Callable[[dict[str, Any]], float]  # a summary's record -> its score from people


def realsumm_pairs(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    return pair_orders(pipeline, docs, seed, "realsumm-pairs",
                       {"LitePyramid recall": lambda s: s["human"]["litepyramid_recall"]})


def summeval_pairs(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    def expert(dimension: str) -> PeopleScore:
        return lambda summary: summary["human"][f"expert_mean_{dimension}"]

    return pair_orders(pipeline, docs, seed, "summeval-pairs",
                       {f"expert {d}": expert(d) for d in ("relevance", "consistency")})


def _preferences(run: Run, outcome: RunOutcome) -> dict[tuple[str, str, str], dict[str, float | None]]:
    """Each pairwise scorer's preference for a over b, by (document, a, b), under both orders of its pair, so that
    people's order of a pair finds it whichever way it was read."""
    preferences: dict[tuple[str, str, str], dict[str, float | None]] = defaultdict(dict)

    def prefer(doc_id: str, a: str, b: str, scorer: str, value: float | None) -> None:
        preferences[doc_id, a, b][scorer] = value
        preferences[doc_id, b, a][scorer] = None if value is None else 1 - value

    for e in grounded_preferences(item_verdicts(run), sorted({s.system for s in outcome.summaries})):
        prefer(e.doc_id, e.a, e.b, "grounded pairwise", e.preference)
        prefer(e.doc_id, e.a, e.b, "grounded pairwise P", e.probable_preference)
    for h in outcome.holistic_pairs:
        prefer(h.doc_id, h.a, h.b, "holistic pairwise", None if h.failure else h.value)
    return preferences


def pair_orders(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int, task: str,
                people_scores: dict[str, PeopleScore]) -> MetaEvalResult:
    loaded, lexical = _input(task, docs)
    outcome = pipeline.score(loaded, pairing=Pairing())
    run = load_run(outcome.run_dir)
    values = {(s.doc_id, s.system): {**{m: s.values.get(m) for m in ("fps", "fc", "ds")}, **lexical[s.doc_id, s.system]}
              for s in outcome.summaries}
    preferences = _preferences(run, outcome)
    rows = []
    for (people_name, people_score), doc in itertools.product(people_scores.items(), docs):
        doc_id = str(doc["doc_id"])
        human = {s["system"]: people_score(s) for s in doc["summaries"] if (doc_id, s["system"]) in values}
        for a, b in itertools.combinations(human, 2):
            if human[a] == human[b]:
                continue  # people score them alike: no order to agree with
            people = float(human[a] > human[b])
            row: dict[str, Any] = {"human": people_name, "doc_id": doc_id, "a": a, "b": b, "people": people}
            for scorer in VALUE_SCORERS:
                row[scorer] = _agrees(_by_values(values[doc_id, a][scorer], values[doc_id, b][scorer]), people)
            for scorer in PAIR_SCORERS:
                row[scorer] = _agrees(_by_preference(preferences[doc_id, a, b].get(scorer)), people)
            rows.append(row)
    result = MetaEvalResult(task, pipeline.config.name, len(docs), len(rows), sum(outcome.failures.values()))
    result.tables["pairs"] = rows
    result.tables["pair_agreement"] = [_share([r for r in rows if r["human"] == name], name, scorer, seed)
                                       for name in people_scores for scorer in (*PAIR_SCORERS, *VALUE_SCORERS)]
    result.summary = [f"run folder: {outcome.run_dir}"]
    for name in people_scores:
        result.summary.append(f"{sum(r['human'] == name for r in rows)} pairs of summaries of one document that "
                              f"people's {name} orders")
        result.summary += [f"{r['scorer']}: {r['share']:.3f} [{_f(r['low95'])}, {_f(r['high95'])}] of {r['pairs']} "
                           f"pairs ordered as people's {name} orders them"
                           for r in result.tables["pair_agreement"] if r["human"] == name and r["share"] is not None]
    return result


def _input(task: str, docs: list[dict[str, Any]]) -> tuple[LoadedInput, dict[tuple[str, str], dict]]:
    """The sampled summaries as a run's input, and the lexical baselines per summary: ROUGE-L against the
    reference(s), word overlap with the human key facts where the data has them."""
    drawn = [(str(d["doc_id"]), s["system"]) for d in docs for s in d["summaries"]]
    loaded = LoadedInput(source=f"meta-eval-{task}",
                         fingerprint=f"{task}:" + hashlib.sha256(json.dumps(drawn).encode()).hexdigest())
    lexical = {}
    for doc in docs:
        document = document_of(doc)
        loaded.documents[document.doc_id] = document
        references = doc.get("references_all") or ([doc["reference"]] if doc.get("reference") else [])
        for summary in doc["summaries"]:
            loaded.candidates.append(Candidate(record=len(loaded.candidates) + 1, doc_id=document.doc_id,
                                               system=summary["system"], summary=summary["summary"]))
            kept = present_by_overlap(doc.get("keyfacts", []), summary["summary"])
            lexical[document.doc_id, summary["system"]] = {
                "rouge_l": rouge_l(summary["summary"], references),
                "word_overlap_fc": float(np.mean(kept)) if kept else None}
    return loaded, lexical


def _by_values(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    return 0.5 if a == b else float(a > b)


def _by_preference(value: float | None) -> float | None:
    if value is None:
        return None
    return 0.5 if abs(value - 0.5) < 1e-9 else float(value > 0.5)


def _agrees(order: float | None, people: float) -> float | None:
    """1 for people's order, 0 for the other, 0.5 for a tie; None where the scorer has no value."""
    return None if order is None else 0.5 if order == 0.5 else float(order == people)


def _share(rows: list[dict[str, Any]], human: str, scorer: str, seed: int) -> dict[str, Any]:
    scored = [r for r in rows if r[scorer] is not None]
    agree = np.array([r[scorer] for r in scored], dtype=float)

    def statistic(idx: np.ndarray) -> float | None:
        return float(agree[idx].mean()) if len(idx) else None

    value, low, high = grouped_bootstrap(statistic, [r["doc_id"] for r in scored], seed) if scored else (None, None, None)
    return {"human": human, "scorer": scorer, "share": value, "low95": low, "high95": high, "pairs": len(scored),
            "documents": len({r["doc_id"] for r in scored})}


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
