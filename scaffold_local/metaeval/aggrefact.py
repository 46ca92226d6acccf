"""AggreFact's span annotations (CLIFF and Goyal'21: BART and PEGASUS summaries of CNN/DM and XSum articles, each
error span marked by people and typed: intrinsic or extrinsic, noun phrase or predicate): whether the judge's
sentence check finds what people found.

Summary level: "inconsistent" (some error annotated) against the judge calling a summary inconsistent (some
sentence unsupported, F < 1), per source and pooled, with 95% intervals over documents, beside word overlap
(`sentence_checks`), and how well the judge's P(consistent) ranks summaries where it gives one. Sentence
level: a sentence holds an error where an annotated span occurs in it (case and spacing aside); the judge's
flagged sentences against those; a summary labelled inconsistent whose spans occur in none of its sentences is
left out of this level and counted. Per error type, the share of inconsistent summaries caught (noun-phrase
errors are mostly wrong or invented entities and attributes: what EPS is about)."""

from __future__ import annotations

import re
from typing import Any

from ..runs.pipeline import Pipeline
from .agreement import binary_agreement
from .frank import source_of
from .results import MetaEvalResult
from .sentence_checks import (
    SCORERS,
    CheckedSummary,
    balanced_accuracy_by_group,
    caught_by_type,
    check_summaries,
    summary_confidence,
)

REFERENCE = "AggreFact label"


def spans_of(summary: dict[str, Any]) -> list[str]:
    """The annotated error spans, flat (CLIFF gives a list of strings, Goyal'21 a list of lists)."""
    spans = summary["human"].get("annotated_error_spans") or []
    flat = [s for span in spans for s in (span if isinstance(span, list) else [span])]
    return [s for s in (_plain(span) for span in flat) if s]


def error_sentences(sentences: list[str], spans: list[str]) -> list[int] | None:
    """Per sentence, 1 where an error span occurs in it; None where no span occurs in any sentence."""
    marked = [int(any(span in _plain(sentence) for span in spans)) for sentence in sentences]
    return marked if any(marked) else None


def _plain(text: str) -> str:
    """Lower case, single spaces, no space before punctuation: CLIFF's spans are tokenized ("Westwood ,")."""
    return re.sub(r"\s+", " ", re.sub(r"\s+([,.;:!?'])", r"\1", text)).strip().lower()


def error_spans(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    checked, failed = check_summaries(pipeline, docs, "checking summaries")
    rows = [c.row(source=source_of(c.doc), inconsistent=1 - c.summary["human"]["is_consistent"],
                  error_types=c.summary["human"].get("error_types") or []) for c in checked]
    result = MetaEvalResult("aggrefact-spans", pipeline.config.name, len(docs), len(rows), failed)
    result.tables["per_summary"] = rows
    balanced_accuracy_by_group(result, rows, "source", REFERENCE, seed)
    if len({r["source"] for r in rows}) > 1:
        balanced_accuracy_by_group(result, [{**r, "source": "both sources"} for r in rows], "source", REFERENCE, seed)
    summary_confidence(result, rows, seed)
    result.tables["error_types"] = caught_by_type(rows, "error_types")
    _sentence_level(result, checked, seed)
    return result


def _sentence_level(result: MetaEvalResult, checked: list[CheckedSummary], seed: int) -> None:
    truth: list[int] = []
    decided: dict[str, list[int]] = {scorer: [] for scorer in SCORERS}
    groups: list[str] = []
    unlocated = 0
    for c in checked:
        marked = [0] * len(c.sentences) if c.summary["human"]["is_consistent"] else \
            error_sentences(c.sentences, spans_of(c.summary))
        if marked is None:
            unlocated += 1
            continue
        truth += marked
        groups += [c.doc_id] * len(marked)
        for scorer in SCORERS:
            decided[scorer] += getattr(c, scorer)
    subject = "sentences holding an annotated error span"
    for scorer in SCORERS if truth else ():
        estimates = binary_agreement(truth, decided[scorer], groups, seed)
        result.agreement_rows(f"{scorer}, per sentence", estimates, len(truth), subject)
        result.summary.append(f"{subject}, {scorer}: balanced accuracy {estimates['balanced_accuracy']}, "
                              f"recall {estimates['recall_present']} ({len(truth)} sentences)")
    result.summary.append(f"inconsistent summaries whose error spans occur in none of their sentences (left out of "
                          f"the sentence level): {unlocated}")
