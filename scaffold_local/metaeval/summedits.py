"""SummEdits (6 non-news domains: earnings calls, podcasts, meetings, sales calls and emails, paper
abstracts; seed summaries and small edits of them, each labelled consistent or not with the document by
people). Two tasks.

`consistency`: whether the judge's sentence check calls a summary consistent (every sentence supported,
F = 1) as people label it. Balanced accuracy of "inconsistent" per domain and its mean over the domains,
with 95% intervals over documents, beside word overlap (`sentence_checks`); the share of inconsistent
summaries caught per edit type (entity modifications test entity fidelity); where the judge gives
P(supported) per sentence, how well a summary's P(consistent) (its least) ranks and calibrates. For scale,
the SummEdits paper reports, over its 10 domains, 82.4% balanced accuracy for GPT-4 and about 90.9% for people.

`entity_edits`: whether EPS, the entity metric, ranks a document's consistent summaries above the ones
people found inconsistent after an entity edit alone (a name, number or date changed), each pair of the same
document compared (a tie counts half). The edit touches one entity, so the two summaries keep the same
attributes but the edited one: EPS should drop. With the attributes' P (a version that reads them), the
same for every threshold on P, and the threshold that ranks best: chosen on dev documents, it is the
config's entity threshold; and, apart from how many edits the scaffold's attributes cover, whether P falls on
the attributes an edit touches (`touched_attributes`). Word overlap (an attribute kept where the summary holds
half of its content words) beside it."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data.inputs import Candidate
from ..method.metrics import score_summary
from ..method.text import STOPWORDS
from ..runs.pipeline import Pipeline
from .agreement import Estimate, grouped_bootstrap
from .realsumm import document_of, present_by_overlap
from .results import MetaEvalResult
from .sentence_checks import balanced_accuracy_by_group, caught_by_type, check_summaries, summary_confidence

PUBLISHED = "SummEdits paper, all 10 domains: GPT-4 0.824, people about 0.909"


def domain_of(doc: dict[str, Any]) -> str:
    return str(doc["source_dataset"]).rsplit("/", 1)[-1]


def consistency(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    checked, failed = check_summaries(pipeline, docs, "checking summaries")
    rows = [c.row(domain=domain_of(c.doc), inconsistent=1 - c.summary["human"]["label_consistent"],
                  edit_types=c.summary["human"].get("edit_types") or []) for c in checked]
    result = MetaEvalResult("summedits-consistency", pipeline.config.name, len(docs), len(rows), failed)
    result.tables["per_summary"] = rows
    means = balanced_accuracy_by_group(result, rows, "domain", "SummEdits label", seed)
    result.tables["edit_types"] = caught_by_type(rows, "edit_types")
    result.summary += [f"mean over {len(v)} domains, {scorer}: balanced accuracy {sum(v) / len(v):.3f}"
                       for scorer, v in means.items() if v]
    summary_confidence(result, rows, seed)
    result.summary.append(f"for scale: {PUBLISHED}")
    return result


ENTITY_EDIT = "entity_modification"
PER_DOCUMENT = 4  # consistent and entity-edited summaries drawn per document, each: 16 pairs
THRESHOLDS = tuple(round(float(t), 2) for t in np.arange(0.05, 1.0, 0.05))  # the thresholds on P(kept) compared


def entity_edits(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    plans, no_entities = _planned(pipeline, docs, seed)
    every = [p for *_, planned in plans for p in planned]
    records, sent = pipeline.answer(every, "judging entity attributes")
    rows, probabilities, readings, failed = [], [], [], 0
    for doc, summary, document, scaffold, candidate, planned in plans:
        record = pipeline.judge.by_kind(planned, records).get("entities")
        if record is None or record.parsed is None:
            failed += 1
            continue
        n_sentences = len(pipeline.judge.sentences(candidate.summary, pipeline.judge.summary_language(document)))
        judged = score_summary(scaffold, pipeline.judge.summary_verdicts(scaffold, n_sentences, {"entities": record}),
                               system=candidate.system, n_sentences=n_sentences)
        attributes = [a for e in scaffold.items("entities") for a in e.attributes]
        confidence = record.confidence or {}
        p = [confidence[a.id] for a in attributes if a.id in confidence]
        probabilities.append(p if len(p) == len(attributes) else None)
        readings.append((candidate.summary, {a.id: (f"{e.name} {a.text}", confidence.get(a.id))
                                             for e in scaffold.items("entities") for a in e.attributes}))
        rows.append({"doc_id": document.doc_id, "system": candidate.system, "domain": domain_of(doc),
                     "edited": 1 - summary["human"]["label_consistent"], "attributes": len(attributes),
                     "judge_eps": judged.values.get("eps"),
                     "weighted_eps": float(np.mean(p)) if probabilities[-1] else None,
                     "word_overlap_eps": float(np.mean(present_by_overlap([a.text for a in attributes],
                                                                          candidate.summary)))})
    result = MetaEvalResult("summedits-entities", pipeline.config.name, len(docs), len(rows), failed)
    result.tables["per_summary"] = rows
    result.tables["paired"] = [_paired(rows, scorer, seed) for scorer in ("judge_eps", "weighted_eps", "word_overlap_eps")]
    result.summary += [f"{r['scorer']}: the consistent summary higher than the entity-edited one in "
                       f"{Estimate.of(r)} of {r['pairs']} pairs (mean per document, 95% "
                       "interval over documents; a tie counts half)" for r in result.tables["paired"]]
    if rows and all(p is not None for p in probabilities):
        _add_thresholds(result, rows, probabilities, readings, seed)
    else:
        result.summary.append(f"no threshold compared: method version {pipeline.method.number} gives no P(kept) per "
                              "entity attribute (version 12 reads them)")
    named = f" ({', '.join(no_entities)})" if no_entities else ""
    result.summary.append(f"documents without extracted entities: {len(no_entities)}{named}; summaries whose entity "
                          f"judgment failed: {failed}; judgments sent to the engine: {len(sent)} of {len(every)} "
                          "(the rest read from the store)")
    return result


def _add_thresholds(result: MetaEvalResult, rows: list[dict[str, Any]], probabilities: list[Any],
                    readings: list[Any], seed: int) -> None:
    """Where every attribute has its P(kept): EPS at each threshold paired as the other scorers are, the threshold
    that ranks best here, and how far P(kept) moves on the attributes an edit touched."""
    result.tables["paired"] += [
        _paired([{**row, "eps_at": float(np.mean([x >= t for x in p])) if p else None}
                 for row, p in zip(rows, probabilities)], "eps_at", seed, t) for t in THRESHOLDS]
    if (best := best_of(result.tables["paired"])) is not None:
        result.summary.append(f"threshold on P(kept) that ranks best on these documents: {best:.2f} (a config's "
                              "entity threshold is chosen on dev documents only)")
    result.tables["touched"], line = touched_attributes(rows, readings)
    result.summary.append(line)


def _planned(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Each chosen summary's entity judgments on its document's extracted scaffold; the documents without entities."""
    chosen = [(doc, summaries) for doc in docs if (summaries := _entity_pairs(doc, seed))]
    documents = [document_of(doc) for doc, _ in chosen]
    scaffolds = pipeline.extract(documents).scaffolds
    plans, no_entities = [], []
    for (doc, summaries), document in zip(chosen, documents):
        scaffold = scaffolds.get(document.doc_id)
        if scaffold is None or not scaffold.items("entities"):
            no_entities.append(document.doc_id)
            continue
        for n, summary in summaries:
            candidate = Candidate(record=n, doc_id=document.doc_id, system=f"{summary['system']} #{n}",
                                  summary=summary["summary"])
            plans.append((doc, summary, document, scaffold, candidate,
                          pipeline.judge.plan(scaffold, document, candidate, task="align_entities")))
    return plans, no_entities


def edit_words(text: str) -> set[str]:
    """The words an edit can change: lower-case words of three or more characters, and every number."""
    return {w for w in re.findall(r"[^\W_]+", text.lower()) if (len(w) >= 3 or w.isdigit()) and w not in STOPWORDS}


AttributeReadings = tuple[str, dict[str, tuple[str, float | None]]]  # a summary; per attribute id its claim and P(kept)


def touched_attributes(rows: Sequence[dict[str, Any]],
                       readings: Sequence[AttributeReadings]) -> tuple[list[dict[str, Any]], str]:
    """Whether P(kept) falls where an edit touches an attribute: each edited summary against its document's most
    similar consistent summary (the share of words they share), the words only the consistent one holds, and
    each attribute (the entity's name and the claim) that holds one of them. The paired share counts every
    attribute; this reads the ones the edit can have changed, apart from the scaffold's coverage of the edits."""
    words = [edit_words(summary) for summary, _ in readings]
    table, untouched, edits, touching = [], [], 0, 0
    for i, row in enumerate(rows):
        kept = [j for j, r in enumerate(rows) if r["doc_id"] == row["doc_id"] and not r["edited"]]
        if not row["edited"] or not kept:
            continue
        nearest = max(kept, key=lambda j: len(words[j] & words[i]) / max(1, len(words[j] | words[i])))
        removed = words[nearest] - words[i]
        edits += 1
        hit = False
        for attribute, (claim, p) in readings[i][1].items():
            before = readings[nearest][1].get(attribute, ("", None))[1]
            if p is None or before is None:
                continue
            if removed & edit_words(claim):
                hit = True
                table.append({"doc_id": row["doc_id"], "system": row["system"], "consistent": rows[nearest]["system"],
                              "attribute": attribute, "p_consistent": before, "p_edited": p, "fall": before - p})
            else:
                untouched.append(abs(before - p))
        touching += hit
    falls = [t["fall"] for t in table]
    line = (f"edits that touch an attribute (it holds a word only the most similar consistent summary has): {touching} "
            f"of {edits}; P(kept) falls on {sum(f > 0 for f in falls)} of the {len(falls)} attribute readings they "
            f"touch, by {np.mean(falls) if falls else float('nan'):.3f} on average; the attributes they leave alone "
            f"move by a median of {np.median(untouched) if untouched else float('nan'):.3f}")
    return table, line


def _paired(rows: Sequence[dict[str, Any]], scorer: str, seed: int, threshold: float | None = None) -> dict[str, Any]:
    found, pairs = paired_accuracy(rows, scorer, seed)
    name = scorer if threshold is None else f"judge_eps at P >= {threshold:.2f}"
    return {"scorer": name, "threshold": threshold, "value": found.value, "low95": found.low, "high95": found.high,
            "pairs": pairs}


def _entity_pairs(doc: dict[str, Any], seed: int) -> list[tuple[int, dict[str, Any]]]:
    """Up to PER_DOCUMENT consistent summaries and as many whose only edit is an entity's and which people
    found inconsistent (drawn, seeded), numbered as in the document; none where either kind is missing."""
    numbered = list(enumerate(doc["summaries"], 1))
    consistent = [(n, s) for n, s in numbered if s["human"]["label_consistent"]]
    edited = [(n, s) for n, s in numbered
              if not s["human"]["label_consistent"] and (s["human"].get("edit_types") or []) == [ENTITY_EDIT]]
    if not consistent or not edited:
        return []
    draw = random.Random(f"{seed}:{doc['doc_id']}")
    picked = [*draw.sample(consistent, min(PER_DOCUMENT, len(consistent))),
              *draw.sample(edited, min(PER_DOCUMENT, len(edited)))]
    return sorted(picked, key=lambda pair: pair[0])


def paired_accuracy(rows: Sequence[dict[str, Any]], scorer: str, seed: int = 0) -> tuple[Estimate, int]:
    """The share of (consistent, edited) pairs of one document where `scorer` is higher for the consistent
    summary (a tie counts half), averaged over documents, with its 95% interval over documents; and the pairs."""
    per_document, pairs = [], 0
    for doc_id in dict.fromkeys(r["doc_id"] for r in rows):
        mine = [r for r in rows if r["doc_id"] == doc_id and r[scorer] is not None]
        kept = [r[scorer] for r in mine if not r["edited"]]
        edited = [r[scorer] for r in mine if r["edited"]]
        if kept and edited:
            wins = [1.0 if a > b else 0.5 if a == b else 0.0 for a in kept for b in edited]
            per_document.append((doc_id, float(np.mean(wins))))
            pairs += len(wins)
    values = np.array([v for _, v in per_document])
    found = grouped_bootstrap(lambda idx: float(values[idx].mean()) if len(idx) else None,
                              [d for d, _ in per_document], seed)
    return Estimate(*found), pairs


def best_of(table: Sequence[dict[str, Any]]) -> float | None:
    """Of the thresholds compared, the one that ranks best (of equally good ones, the middle one)."""
    compared = [r for r in table if r.get("threshold") is not None and r["value"] is not None]
    if not compared:
        return None
    top = max(r["value"] for r in compared)
    ties = [r["threshold"] for r in compared if r["value"] == top]
    return float(ties[len(ties) // 2])
