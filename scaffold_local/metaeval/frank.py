"""FRANK (CNN/DM + XSum, per-sentence factual-error labels from 3 annotators): the judge's
per-sentence error / no error and a word-overlap baseline (a sentence with less than
`OVERLAP_SUPPORTED` of its content words in the document is an error) against the human ceiling's
references (each annotator held out against the majority of the other two, ties dropped) beside
the ceiling itself, and against the majority of all three (`agreement.HumanReferences`); the
judge's F per summary against FRANK's Factuality, pooled over summaries and as the mean of
per-document correlations (table `f_correlation`: `correlation.correlation_table`; no system level:
CNN/DM and XSum documents hold different systems, each document 1 to 5 of them). The summary is given to the judge
as FRANK's own sentences, one per line, so sentence i is FRANK's sentence i; a summary our
splitter would cut differently is left out and counted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.inputs import Candidate
from ..method.text import overlap
from ..runs.pipeline import Pipeline
from .agreement import HumanReferences
from .correlation import correlation_table, describe_spearman
from .realsumm import confidence_tables, document_of
from .results import MetaEvalResult

OVERLAP_SUPPORTED = 0.8


def flagged_by_overlap(sentences: list[str], document: str) -> list[int]:
    """The word-overlap baseline's verdict per sentence: 1 (an error) where the document holds less than
    OVERLAP_SUPPORTED of its content words."""
    return [int(overlap(sentence, document) < OVERLAP_SUPPORTED) for sentence in sentences]


def source_of(doc: dict[str, Any]) -> str:
    """FRANK's source dataset of a document: "CNN/DM" or "XSum" (its summaries differ: near-extractive, or
    abstractive and mostly wrong)."""
    source = str(doc.get("source_dataset", ""))
    return "XSum" if "xsum" in source.lower() else "CNN/DM" if "cnn" in source.lower() else source or "unknown"


@dataclass
class _Items:
    """The sentences of one source: human labels, the judge's errors, the baseline's, P(supported)."""

    humans: HumanReferences = field(default_factory=HumanReferences)
    judged: list[int] = field(default_factory=list)
    lexical: list[int] = field(default_factory=list)
    confident: list[tuple[int, float, str]] = field(default_factory=list)  # (no error?, P(supported), document)
    rows: list[dict[str, Any]] = field(default_factory=list)  # F per summary

    def extend(self, other: _Items) -> None:
        self.humans.merge(other.humans)
        self.judged += other.judged
        self.lexical += other.lexical
        self.confident += other.confident
        self.rows += other.rows


def faithfulness(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    plans = []
    mismatched = 0
    for doc in docs:
        document = document_of(doc)
        for n, summary in enumerate(doc["summaries"], 1):
            text = "\n".join(summary["sentences"])
            if len(pipeline.judge.sentences(text)) != len(summary["sentences"]):
                mismatched += 1
                continue
            candidate = Candidate(record=n, doc_id=document.doc_id, system=summary["system"], summary=text)
            planned = pipeline.judge.plan(None, document, candidate, task="check_faithfulness")
            plans.append((doc, summary, document, planned))
    records, _ = pipeline.answer([p for *_, planned in plans for p in planned], "checking sentences")
    by_source, failed = _by_source(pipeline, plans, records)
    pooled = _Items()
    for items in by_source.values():
        pooled.extend(items)
    result = MetaEvalResult("frank-faithfulness", pipeline.config.name, len(docs), len(pooled.judged), failed)
    subject = 'sentence errors ("present": an error)'
    lexical_name = f"word overlap with the document < {OVERLAP_SUPPORTED}"
    result.human_agreement(subject, pooled.humans, {"judge": pooled.judged, lexical_name: pooled.lexical}, seed)
    for source, items in sorted(by_source.items()) if len(by_source) > 1 else ():
        result.human_agreement(f"{subject}, {source} only", items.humans,
                               {f"judge ({source})": items.judged, f"{lexical_name} ({source})": items.lexical}, seed)
    if pooled.confident:
        confidence_tables(result, pooled.confident, seed, None, "P(supported)", "faithfulness")
    summary_rows = pooled.rows
    result.tables["f_per_summary"] = summary_rows
    result.tables["f_correlation"] = correlation_table(summary_rows, "judge_f", "human_factuality", seed, systems=False)
    result.summary += [
        f"F with FRANK Factuality: {describe_spearman(result.tables['f_correlation'])}",
        f"summaries left out because our splitter cuts FRANK's sentences differently: {mismatched}",
    ]
    return result


def _by_source(pipeline: Pipeline, plans: list[tuple[dict[str, Any], dict[str, Any], Any, list[Any]]],
               records: dict[str, Any]) -> tuple[dict[str, _Items], int]:
    """Every judged sentence beside people's labels and word overlap, by the summaries' source (CNN/DM, XSum); and
    how many sentences were left out because their summary's check failed."""
    by_source: dict[str, _Items] = {}
    failed = 0
    for doc, summary, document, planned in plans:
        record = pipeline.judge.by_kind(planned, records).get("faithfulness")
        majority = summary["human"]["sentence_error_majority"]
        if record is None or record.parsed is None or record.failed_items:
            failed += len(majority)  # F per summary needs every sentence's verdict: left out whole
            continue
        # the judge's verdicts as its metrics count them (its calibrated threshold on P(supported), where it has one)
        errors = [int(not v) for v in pipeline.judge.sentence_verdicts(record, len(majority))]
        items = by_source.setdefault(source_of(doc), _Items())
        items.humans.add(summary["human"].get("sentence_error_per_annotator") or [majority], majority, document.doc_id)
        items.judged += errors
        items.lexical += flagged_by_overlap(summary["sentences"], document.text)
        if record.confidence:  # P(supported) against "no error", the positive class of a calibrated threshold
            items.confident += [(1 - label, record.confidence[f"S{i}"], document.doc_id)
                                for i, label in enumerate(majority, 1)]
        items.rows.append({"doc_id": document.doc_id, "source": source_of(doc), "system": summary["system"],
                           "judge_f": 1 - float(np.mean(errors)),
                           "human_factuality": summary["human"]["frank_summary_scores"]["Factuality"]})
    return by_source, failed
