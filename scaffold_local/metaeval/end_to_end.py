"""REALSumm end to end: the method as a user runs it, against people's LitePyramid recall.

The judge extracts each document's scaffold (not people's key facts: `realsumm.alignment` measures the
alignment alone on those) and aligns every summary with its facts; each summary's FC, FPS and Main FC are
then correlated with the human LitePyramid recall (summary level pooled and per document, and system level),
beside the same metrics with word overlap as the alignment (a fact kept where the summary holds half of its
content words, on the same extracted facts), word overlap's FC on people's own key facts (what the same rule
reaches with the facts people wrote: the gap to it is the extraction's) and ROUGE-L against the document's
reference summary. The metrics are computed by the package's own metric code (`method.metrics.score_summary`),
so a row is what `score` would print for that summary's fact metrics.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.inputs import Candidate, Document
from ..judging.planned import PlannedRequest
from ..method.metrics import SummaryScores, SummaryVerdicts, rouge_l, score_summary
from ..method.scaffold import Scaffold
from ..method.views.judged import ViewVerdicts
from ..records import Record
from ..runs.pipeline import Pipeline
from .correlation import correlation_table, describe_spearman
from .realsumm import document_of, present_by_overlap
from .results import MetaEvalResult

METRICS = ("fc", "fps", "main_fc")  # the fact metrics correlated; FC is the one LitePyramid recall measures
HUMAN = "human_litepyramid"


def realsumm_end_to_end(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    documents = [document_of(doc) for doc in docs]
    scaffolds = pipeline.extract(documents).scaffolds
    plans = []
    no_scaffold = []
    for doc, document in zip(docs, documents):
        scaffold = scaffolds.get(document.doc_id)
        if scaffold is None or not scaffold.items("facts"):
            no_scaffold.append(document.doc_id)
            continue
        for n, summary in enumerate(doc["summaries"], 1):
            candidate = Candidate(record=n, doc_id=document.doc_id, system=summary["system"], summary=summary["summary"],
                                  references=(doc["reference"],) if doc.get("reference") else ())
            planned = pipeline.judge.plan(scaffold, document, candidate, task="align_facts")
            plans.append((doc, summary, document, scaffold, candidate, planned))
    every = [p for *_, planned in plans for p in planned]
    records, sent = pipeline.answer(every, "judging facts")

    rows = [_row(pipeline, records, *plan) for plan in plans]
    failed_items = sum(row.pop("failed_items") for row in rows)
    result = MetaEvalResult("realsumm-end-to-end", pipeline.config.name, len(docs), len(rows), failed_items)
    result.tables["per_summary"] = rows
    result.tables["correlation"] = []
    for scorer in [*(f"judge_{m}" for m in METRICS), *(f"lexical_{m}" for m in METRICS), "lexical_fc_key_facts",
                   "rouge_l"]:
        correlated = correlation_table(rows, scorer, HUMAN, seed)
        result.tables["correlation"] += [{"scorer": scorer, **row} for row in correlated]
        result.summary.append(f"{scorer} with LitePyramid recall: {describe_spearman(correlated)}")
    named = f" ({', '.join(no_scaffold)})" if no_scaffold else ""
    result.summary.append(f"documents without extracted facts: {len(no_scaffold)}{named}; "
                          f"summaries without FC: {sum(r['judge_fc'] is None for r in rows)} of {len(rows)}; "
                          f"failed fact verdicts: {failed_items}; fact judgments sent to the engine: {len(sent)} of "
                          f"{len(every)} (the rest read from the store)")
    return result


def _row(pipeline: Pipeline, records: dict[str, Record], doc: dict[str, Any], summary: dict[str, Any],
         document: Document, scaffold: Scaffold, candidate: Candidate, planned: list[PlannedRequest]) -> dict[str, Any]:
    """One summary: every metric by the judge and by word overlap on the same scaffold, beside people's LitePyramid
    recall, and how many of its fact verdicts failed."""
    n_sentences = len(pipeline.judge.sentences(candidate.summary, pipeline.judge.summary_language(document)))
    mine = pipeline.judge.by_kind(planned, records)
    judged = score_summary(scaffold, pipeline.judge.summary_verdicts(scaffold, n_sentences, mine),
                           system=candidate.system, n_sentences=n_sentences)
    lexical = scored_by_word_overlap(scaffold, candidate, n_sentences)
    return {"doc_id": document.doc_id, "system": candidate.system,
            **{f"judge_{m}": judged.values.get(m) for m in METRICS},
            **{f"lexical_{m}": lexical.values.get(m) for m in METRICS},
            "lexical_fc_key_facts": float(np.mean(present_by_overlap(doc["keyfacts"], candidate.summary))),
            "rouge_l": rouge_l(candidate.summary, candidate.references),
            "facts_scored": sum(f.label != "other" for f in scaffold.items("facts")),
            HUMAN: summary["human"]["litepyramid_recall"],
            "undefined": judged.undefined.get("fc"),
            "failed_items": sum(len(r.failed_items or ()) for r in mine.values())}


def scored_by_word_overlap(scaffold: Scaffold, candidate: Candidate, n_sentences: int) -> SummaryScores:
    """The fact metrics with word overlap as the alignment: each extracted fact kept where the summary holds at
    least half of its content words."""
    facts = scaffold.items("facts")
    present = present_by_overlap([f.text for f in facts], candidate.summary)
    verdicts = ViewVerdicts(kept={f.id: float(kept) for f, kept in zip(facts, present)})
    return score_summary(scaffold, SummaryVerdicts(views={"facts": verdicts}), system=candidate.system,
                         n_sentences=n_sentences)
