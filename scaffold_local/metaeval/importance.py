"""How the judge's read importance (method version 19's P(main)) picks what people took for key facts: an extracted
fact of a REALSumm document counts as key where the judge matches it to one of people's key facts
(`realsumm-extraction`'s rule), and P(main) should rank those first. Its `confidence` table calibrates a config's
`main` threshold on the dev half; its summary says how many main points that threshold gives a document."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UsageError
from ..judging.main_points import main_requests, read_importance
from ..runs.pipeline import Pipeline
from .realsumm import confidence_tables, document_of, every_fact, matching_requests
from .results import MetaEvalResult


def importance(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    if not pipeline.method.reads_main:
        raise UsageError(f"method version {pipeline.method.number} does not read main points",
                         hint="run it under a version that reads them (19)")
    plans, failed_docs = matching_requests(pipeline, docs)
    scaffolds = pipeline.extract([document_of(doc) for doc in docs]).scaffolds  # stored: read back, nothing sent
    main_readings = {document.doc_id: main_requests(pipeline.judge, scaffolds[document.doc_id], document)
                     for document, *_ in plans}
    records, _ = pipeline.answer([p for *_, m in plans for p in m] + [p for ps in main_readings.values() for p in ps],
                                 "matching facts and reading their importance")
    confident: list[tuple[int, float, str]] = []
    main_counts, failed = [], 0
    for document, _human, ours, _labels, _covered, matched in plans:
        is_key = every_fact(pipeline, matched, records, len(ours))
        p_main = read_importance(main_readings[document.doc_id], records)
        facts = scaffolds[document.doc_id].items("facts")
        if is_key is None or any(f.id not in p_main for f in facts):
            failed += 1
            continue
        confident += [(key, p_main[f.id], document.doc_id) for f, key in zip(facts, is_key)]
        main_counts.append(sum(f.label == "main point" for f in facts))
    result = MetaEvalResult("realsumm-importance", pipeline.config.name, len(docs), len(confident), failed + failed_docs)
    if confident:
        confidence_tables(result, confident, seed, None, p="P(main)", kind="main")
        result.summary.append(f"main facts per document at the config's threshold: mean {np.mean(main_counts):.1f}, "
                              f"{min(main_counts)}-{max(main_counts)}; extracted facts matching a key fact of people's: "
                              f"{np.mean([c[0] for c in confident]):.2f}")
    result.summary.append(f"documents without an extracted fact list: {failed_docs}; documents with a failed matching "
                          f"or importance reading: {failed}")
    return result
