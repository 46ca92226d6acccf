"""FRANK (CNN/DM + XSum, per-sentence factual-error labels from 3 annotators): the judge's
per-sentence error / no error and a word-overlap baseline (a sentence with less than
`OVERLAP_SUPPORTED` of its content words in the document is an error) against the human ceiling's
references (each annotator held out against the majority of the other two, ties dropped) beside
the ceiling itself, and against the majority of all three (`agreement.HumanReferences`); the
judge's F per summary against FRANK's Factuality, pooled over summaries and as the mean of
per-document correlations (table `f_correlation`: `agreement.correlation_table`; no system level:
CNN/DM and XSum documents hold different systems, each document 1 to 5 of them). The summary is given to the judge
as FRANK's own sentences, one per line, so sentence i is FRANK's sentence i; a summary our
splitter would cut differently is left out and counted."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data import Candidate
from ..method import NO_ERROR
from ..pipeline import Pipeline
from ..text import overlap
from .agreement import HumanReferences, correlation_table, describe_spearman
from .realsumm import document_of
from .results import MetaEvalResult

OVERLAP_SUPPORTED = 0.8


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

    humans, judged, lexical, summary_rows = HumanReferences(), [], [], []
    failed = 0
    for _, summary, document, planned in plans:
        record = pipeline.judge.by_kind(planned, records).get("faithfulness")
        majority = summary["human"]["sentence_error_majority"]
        if record is None or record.parsed is None or record.failed_items:
            failed += len(majority)  # F per summary needs every sentence's verdict: left out whole
            continue
        errors = [int(record.parsed[f"S{i}"]["category"] != NO_ERROR) for i in range(1, len(majority) + 1)]
        humans.add(summary["human"]["sentence_error_per_annotator"], majority, document.doc_id)
        judged += errors
        lexical += [int(overlap(s, document.text) < OVERLAP_SUPPORTED) for s in summary["sentences"]]
        summary_rows.append({"doc_id": document.doc_id, "system": summary["system"],
                             "judge_f": 1 - float(np.mean(errors)),
                             "human_factuality": summary["human"]["frank_summary_scores"]["Factuality"]})

    result = MetaEvalResult("frank-faithfulness", pipeline.config.name, len(docs), len(judged), failed)
    result.human_agreement('sentence errors ("present": an error)', humans,
                           {"judge": judged, f"word overlap with the document < {OVERLAP_SUPPORTED}": lexical}, seed)
    result.tables["f_per_summary"] = summary_rows
    result.tables["f_correlation"] = correlation_table(summary_rows, "judge_f", "human_factuality", seed, systems=False)
    result.summary += [
        f"F with FRANK Factuality: {describe_spearman(result.tables['f_correlation'])}",
        f"summaries left out because our splitter cuts FRANK's sentences differently: {mismatched}",
    ]
    return result
