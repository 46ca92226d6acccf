"""SummEdits (6 non-news domains: earnings calls, podcasts, meetings, sales calls and emails, paper
abstracts; seed summaries and small edits of them, each labelled consistent or not with the document by
people): whether the judge's sentence check calls a summary consistent (every sentence supported, F = 1)
as people label it. Balanced accuracy of "inconsistent" per domain and its mean over the domains, with
95% intervals over documents, beside word overlap (every sentence with at least `OVERLAP_SUPPORTED` of
its content words in the document); the share of inconsistent summaries caught per edit type (entity
modifications test entity fidelity). For scale, the SummEdits paper reports, over its 10 domains, 82.4%
balanced accuracy for GPT-4 and about 90.9% for people."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..data.inputs import Candidate
from ..method.text import overlap
from ..runs.pipeline import Pipeline
from .agreement import binary_agreement
from .frank import OVERLAP_SUPPORTED
from .realsumm import document_of
from .results import MetaEvalResult

PUBLISHED = "SummEdits paper, all 10 domains: GPT-4 0.824, people about 0.909"


def domain_of(doc: dict[str, Any]) -> str:
    return str(doc["source_dataset"]).rsplit("/", 1)[-1]


def consistency(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    plans = []
    for doc in docs:
        document = document_of(doc)
        for n, summary in enumerate(doc["summaries"], 1):
            # a document's summaries share their system names ("seed summary"): numbered, each is its own
            candidate = Candidate(record=n, doc_id=document.doc_id, system=f"{summary['system']} #{n}",
                                  summary=summary["summary"])
            plans.append((doc, summary, document, candidate,
                          pipeline.judge.plan(None, document, candidate, task="check_faithfulness")))
    records, _ = pipeline.answer([p for *_, planned in plans for p in planned], "checking summaries")
    rows, failed = [], 0
    for doc, summary, document, candidate, planned in plans:
        sentences = pipeline.judge.sentences(candidate.summary, pipeline.judge.summary_language(document))
        record = pipeline.judge.by_kind(planned, records).get("faithfulness")
        verdicts = pipeline.judge.sentence_verdicts(record, len(sentences)) if record and record.parsed else []
        if not verdicts or None in verdicts:
            failed += 1  # kept in the store with its raw text; a summary needs every sentence's verdict
            continue
        rows.append({"doc_id": document.doc_id, "domain": domain_of(doc), "system": summary["system"],
                     "inconsistent": 1 - summary["human"]["label_consistent"],
                     "edit_types": summary["human"].get("edit_types") or [],
                     "judge": int(min(v for v in verdicts if v is not None) < 0.5),  # a sentence unsupported
                     "word_overlap": int(any(overlap(s, document.text) < OVERLAP_SUPPORTED for s in sentences))})
    result = MetaEvalResult("summedits-consistency", pipeline.config.name, len(docs), len(rows), failed)
    result.tables["per_summary"] = rows
    by_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_domain[row["domain"]].append(row)
    means: dict[str, list[float]] = defaultdict(list)
    for domain, found in sorted(by_domain.items()):
        for scorer in ("judge", "word_overlap"):
            estimates = binary_agreement([r["inconsistent"] for r in found], [r[scorer] for r in found],
                                         [r["doc_id"] for r in found], seed)
            result.agreement_rows(f"{scorer} ({domain})", estimates, len(found), "SummEdits label")
            balanced = estimates["balanced_accuracy"]
            if balanced.value is not None:
                means[scorer].append(balanced.value)
            result.summary.append(f"{domain}, {scorer}: balanced accuracy {balanced} ({len(found)} summaries, "
                                  f"{len({r['doc_id'] for r in found})} documents)")
    result.tables["edit_types"] = _caught_by_edit_type(rows)
    result.summary += [f"mean over {len(v)} domains, {scorer}: balanced accuracy {sum(v) / len(v):.3f}"
                       for scorer, v in means.items() if v]
    result.summary.append(f"for scale: {PUBLISHED}")
    return result


def _caught_by_edit_type(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per edit type, the share of inconsistent summaries each scorer flags."""
    out = []
    for edit in sorted({e for r in rows for e in r["edit_types"]}):
        found = [r for r in rows if r["inconsistent"] and edit in r["edit_types"]]
        out.append({"edit_type": edit, "summaries": len(found),
                    **{f"{scorer}_caught": sum(r[scorer] for r in found) / len(found) if found else None
                       for scorer in ("judge", "word_overlap")}})
    return out
