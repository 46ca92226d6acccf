"""FRANK (CNN/DM + XSum, per-sentence factual-error labels from 3 annotators): the judge's
per-sentence error / no error against the human majority, beside the human ceiling (each annotator
against the majority of the other two) and a word-overlap baseline (a sentence with less than
`OVERLAP_SUPPORTED` of its content words in the document is an error). The summary is given to the
judge as FRANK's own sentences, one per line, so sentence i is FRANK's sentence i; a summary our
splitter would cut differently is left out and counted."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data import Candidate
from ..method import NO_ERROR
from ..pipeline import Pipeline
from ..schemas import Scaffold
from ..text import overlap
from .agreement import binary_agreement, correlations, majority_of_others
from .realsumm import document_of
from .results import MetaEvalResult

OVERLAP_SUPPORTED = 0.8


def faithfulness(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    plans = []
    mismatched = 0
    for doc in docs:
        document = document_of(doc)
        nothing = Scaffold(key="none", doc_id=document.doc_id, document_sha256=document.sha256, facts=None,
                           questions=None, entities=None)
        for n, summary in enumerate(doc["summaries"], 1):
            text = "\n".join(summary["sentences"])
            if len(pipeline.judge.sentences(text)) != len(summary["sentences"]):
                mismatched += 1
                continue
            candidate = Candidate(record=n, doc_id=document.doc_id, system=summary["system"], summary=text)
            planned = pipeline.judge.task_requests("check_faithfulness", nothing, document, candidate)
            plans.append((doc, summary, document, planned))
    records, _ = pipeline.answer([p for *_, planned in plans for p in planned], "checking sentences")

    truth, judged, lexical, groups, ceiling, ceiling_groups, summary_rows = [], [], [], [], [], [], []
    failed = 0
    for _, summary, document, planned in plans:
        record = pipeline.judge.by_kind(planned, records).get("faithfulness")
        majority = summary["human"]["sentence_error_majority"]
        if record is None or record.parsed is None or record.failed_items:
            failed += len(majority)  # F per summary needs every sentence's verdict: left out whole
            continue
        errors = [int(record.parsed[f"S{i}"]["category"] != NO_ERROR) for i in range(1, len(majority) + 1)]
        truth += majority
        judged += errors
        lexical += [int(overlap(s, document.text) < OVERLAP_SUPPORTED) for s in summary["sentences"]]
        groups += [document.doc_id] * len(majority)
        pairs = majority_of_others(summary["human"]["sentence_error_per_annotator"])
        ceiling += pairs
        ceiling_groups += [document.doc_id] * len(pairs)
        summary_rows.append({"doc_id": document.doc_id, "system": summary["system"],
                             "judge_f": 1 - float(np.mean(errors)),
                             "human_factuality": summary["human"]["frank_summary_scores"]["Factuality"]})

    result = MetaEvalResult("frank-faithfulness", pipeline.config.name, len(docs), len(truth), failed)
    judge = binary_agreement(truth, judged, groups, seed)  # "present" here: a factual error
    result.agreement_rows("judge", judge, len(truth))
    human = binary_agreement([m for _, m in ceiling], [a for a, _ in ceiling], ceiling_groups, seed)
    result.agreement_rows("human ceiling (annotator vs majority of the other two)", human, len(ceiling))
    baseline = binary_agreement(truth, lexical, groups, seed)
    result.agreement_rows(f"word overlap with the document < {OVERLAP_SUPPORTED}", baseline, len(truth))
    result.tables["f_per_summary"] = summary_rows
    f_corr = correlations([r["judge_f"] for r in summary_rows], [r["human_factuality"] for r in summary_rows])
    result.tables["f_correlation"] = [{"level": "summary", **f_corr}]
    result.summary = [
        f"error detection, balanced accuracy: judge {judge['balanced_accuracy']}, "
        f"word overlap {baseline['balanced_accuracy']}",
        f"Cohen's kappa: judge {judge['cohen_kappa']}, word overlap {baseline['cohen_kappa']}",
        f"human ceiling: balanced accuracy {human['balanced_accuracy']}, kappa {human['cohen_kappa']}",
        f"summary-level correlation of F with FRANK Factuality: spearman "
        f"{'undefined' if f_corr['spearman'] is None else format(f_corr['spearman'], '.3f')} (n={f_corr['n']})",
        f"summaries left out because our splitter cuts FRANK's sentences differently: {mismatched}",
    ]
    return result
