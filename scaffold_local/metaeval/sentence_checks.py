"""The judge's sentence check on whole summaries of a dataset, for the tasks that label a summary (or its
spans) consistent or not: SummEdits, AggreFact. One request per summary; a summary counts only with a
verdict for every sentence (a failed one stays in the store with its raw text and is counted). Where the
judge gives P(supported) per sentence, a summary's P(consistent) is the least of its sentences' (consistent
only if every sentence is), and word overlap's summary score is likewise its least overlapping sentence's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..data.inputs import Candidate
from ..method.text import overlap
from ..runs.pipeline import Pipeline
from .agreement import binary_agreement
from .frank import OVERLAP_SUPPORTED  # the FRANK baseline's rule, the same everywhere
from .realsumm import confidence_tables, document_of
from .results import MetaEvalResult

SCORERS = ("judge", "word_overlap")


@dataclass
class CheckedSummary:
    doc: dict[str, Any]
    summary: dict[str, Any]
    sentences: list[str]
    judge: list[int]  # per sentence: 1 where the judge finds it unsupported
    overlaps: list[float]  # per sentence: its word overlap with the document
    supported: list[float] | None  # per sentence: P(supported), where the judge gives one for every sentence

    @property
    def doc_id(self) -> str:
        return str(self.doc["doc_id"])

    @property
    def word_overlap(self) -> list[int]:
        """Per sentence: 1 below OVERLAP_SUPPORTED (the baseline's verdict)."""
        return [int(o < OVERLAP_SUPPORTED) for o in self.overlaps]

    def row(self, **fields: Any) -> dict[str, Any]:
        """A per-summary row: its document, system and `fields`, and per scorer 1 where it calls the summary
        inconsistent (some sentence flagged; for the judge, F < 1); the judge's P(consistent) (None where it gives
        no probabilities) and the least word overlap of its sentences."""
        return {"doc_id": self.doc_id, "system": self.summary["system"], **fields,
                **{scorer: int(any(getattr(self, scorer))) for scorer in SCORERS},
                "judge_p_consistent": min(self.supported) if self.supported else None,
                "least_overlap": min(self.overlaps)}


def check_summaries(pipeline: Pipeline, docs: list[dict[str, Any]], label: str) -> tuple[list[CheckedSummary], int]:
    """Every summary of `docs` checked sentence by sentence; and how many summaries failed."""
    plans = []
    for doc in docs:
        document = document_of(doc)
        for n, summary in enumerate(doc["summaries"], 1):
            # a document's summaries may share a system name ("seed summary"): numbered, each is its own
            candidate = Candidate(record=n, doc_id=document.doc_id, system=f"{summary['system']} #{n}",
                                  summary=summary["summary"])
            plans.append((doc, summary, document, candidate,
                          pipeline.judge.plan(None, document, candidate, task="check_faithfulness")))
    records, _ = pipeline.answer([p for *_, planned in plans for p in planned], label)
    checked, failed = [], 0
    for doc, summary, document, candidate, planned in plans:
        sentences = pipeline.judge.sentences(candidate.summary, pipeline.judge.summary_language(document))
        record = pipeline.judge.by_kind(planned, records).get("faithfulness")
        verdicts = pipeline.judge.sentence_verdicts(record, len(sentences)) if record and record.parsed else []
        if record is None or not verdicts or None in verdicts:
            failed += 1
            continue
        confidence, items = record.confidence or {}, [f"S{i}" for i in range(1, len(sentences) + 1)]
        checked.append(CheckedSummary(doc, summary, sentences, [int(not v) for v in verdicts],
                                      [overlap(s, document.text) for s in sentences],
                                      [confidence[i] for i in items] if all(i in confidence for i in items) else None))
    return checked, failed


def balanced_accuracy_by_group(result: MetaEvalResult, rows: list[dict[str, Any]], group: str, reference: str,
                               seed: int) -> dict[str, list[float]]:
    """Per value of `group`, each scorer's summary-level agreement with people ("inconsistent" as the
    positive class), with intervals over documents; the balanced accuracies per scorer, for a mean."""
    found: dict[str, list[float]] = {scorer: [] for scorer in SCORERS}
    for value in sorted({r[group] for r in rows}):
        chosen = [r for r in rows if r[group] == value]
        for scorer in SCORERS:
            estimates = binary_agreement([r["inconsistent"] for r in chosen], [r[scorer] for r in chosen],
                                         [r["doc_id"] for r in chosen], seed)
            result.agreement_rows(f"{scorer} ({value})", estimates, len(chosen), reference)
            balanced = estimates["balanced_accuracy"]
            if balanced.value is not None:
                found[scorer].append(balanced.value)
            result.summary.append(f"{value}, {scorer}: balanced accuracy {balanced} ({len(chosen)} summaries, "
                                  f"{len({r['doc_id'] for r in chosen})} documents)")
    return found


def caught_by_type(rows: list[dict[str, Any]], types: str) -> list[dict[str, Any]]:
    """Per error (or edit) type named in the rows' `types` list, the share of inconsistent summaries each scorer flags."""
    out = []
    for kind in sorted({t for r in rows for t in r[types]}):
        found = [r for r in rows if r["inconsistent"] and kind in r[types]]
        out.append({"type": kind, "summaries": len(found),
                    **{f"{scorer}_caught": sum(r[scorer] for r in found) / len(found) if found else None
                       for scorer in SCORERS}})
    return out


def summary_confidence(result: MetaEvalResult, rows: list[dict[str, Any]], seed: int) -> None:
    """How well the judge's P(consistent) ranks and calibrates against people's "consistent", where it gives one."""
    confident = [(1 - r["inconsistent"], r["judge_p_consistent"], r["doc_id"]) for r in rows
                 if r["judge_p_consistent"] is not None]
    if confident:
        confidence_tables(result, confident, seed, None, "P(consistent)", None)
