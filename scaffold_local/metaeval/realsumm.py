"""REALSumm (CNN/DM, human key facts = SCUs, per-annotator presence labels).

Alignment: the human key facts are the scaffold (no extraction, every fact a main point, none
dropped as a duplicate so fact i is the human's SCU i); the judge's inferred / not inferred per
(summary, key fact) and a word-overlap baseline on the same items are compared with the human
ceiling's references (each annotator held out against the majority of the others, ties dropped)
beside the ceiling itself, and with the majority of all annotators (`agreement.HumanReferences`);
the judge's FC per summary is correlated with the human LitePyramid recall (table
`fc_correlation`, one row per scorer, level and aggregation: `correlation.correlation_table`).

Extraction: the judge's own extracted facts against the human key facts, matched both ways by the
judge itself (a human fact is covered when the judge infers it from the list of extracted facts;
an extracted fact is matched when the judge infers it from the list of human facts), and by a
word-overlap rule (at least half of one fact's content words in the other) as a cheap check.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.inputs import Candidate, Document
from ..judging.planned import PlannedRequest
from ..method.scaffold import Scaffold
from ..method.text import normalize, overlap, sha256_text
from ..method.views.facts import Fact
from ..records import Record
from ..runs.pipeline import Pipeline
from .agreement import HumanReferences, calibration, grouped_bootstrap
from .correlation import correlation_table, describe_spearman
from .results import MetaEvalResult

OVERLAP_PRESENT = 0.5  # word-overlap baseline and fallback: share of a fact's content words found
MAIN = "main point"


def document_of(doc: dict[str, Any]) -> Document:
    text = normalize(doc["document"])
    return Document(doc_id=str(doc["doc_id"]), text=text, sha256=sha256_text(text))


def present_by_overlap(facts: Sequence[str], summary: str) -> list[int]:
    """The word-overlap baseline's verdict per fact: 1 where the summary holds at least half of its content words."""
    return [int(overlap(fact, summary) >= OVERLAP_PRESENT) for fact in facts]


def facts_scaffold(document: Document, facts: Sequence[str], origin: str = "user") -> Scaffold:
    """A scaffold of exactly these facts, in order (F1 is facts[0]), each a main point."""
    key = hashlib.sha256(json.dumps([origin, document.sha256, list(facts)]).encode()).hexdigest()
    return Scaffold(key=key, doc_id=document.doc_id, document_sha256=document.sha256, origin="user",
                    views={"facts": tuple(Fact(id=f"F{i}", text=t, label="main point") for i, t in enumerate(facts, 1)),
                           "questions": None, "entities": None},
                    failures={"questions": "not used", "entities": "not used"}, assembly=2)


def _fact_requests(pipeline: Pipeline, scaffold: Scaffold, document: Document, candidate: Candidate) -> list[PlannedRequest]:
    return pipeline.judge.plan(scaffold, document, candidate, task="align_facts")


def _facts_record(pipeline: Pipeline, planned: list[PlannedRequest], records: dict[str, Record]) -> Record | None:
    return pipeline.judge.by_kind(planned, records).get("facts")


def _inferred(pipeline: Pipeline, record: Record | None, n_facts: int) -> list[int | None] | None:
    """Per fact 1 (inferred) or 0 as the judge decides (its threshold on P(kept), where it has one), or
    None for a fact whose verdict failed; None when the whole judgment failed."""
    if record is None or record.parsed is None:
        return None
    verdicts = pipeline.judge.verdicts("facts", record)
    return [None if verdicts.failure(f"F{i}") else int(bool(verdicts.kept.get(f"F{i}"))) for i in range(1, n_facts + 1)]


def every_fact(pipeline: Pipeline, planned: list[PlannedRequest], records: dict[str, Record],
                n_facts: int) -> list[int] | None:
    """Per fact 1 or 0 where every fact has a valid verdict, else None: the extraction check's shares
    pool documents, so a document with a failed verdict is left out whole."""
    verdicts = _inferred(pipeline, _facts_record(pipeline, planned, records), n_facts) if planned else None
    return None if verdicts is None or None in verdicts else [v for v in verdicts if v is not None]


@dataclass
class AlignmentItems:
    """The (summary, key fact) items with the judge's verdict, the human labels and the baseline."""

    humans: HumanReferences = field(default_factory=HumanReferences)
    judged: list[int] = field(default_factory=list)
    lexical: list[int] = field(default_factory=list)
    confident: list[tuple[int, float, str]] = field(default_factory=list)  # (human label, P(kept), document)
    p_kept: list[float | None] = field(default_factory=list)  # per judged item, where recorded
    p_kept_note: str | None = None  # what P(kept) measures where it is not a confidence (method/versions.py)
    fc_rows: list[dict[str, Any]] = field(default_factory=list)
    failed: int = 0
    summaries: int = 0
    whole_failed: int = 0  # summaries without one valid fact verdict: left out
    partly_failed: int = 0  # summaries whose fact output failed for some items (or named an unknown id) only

    def add(self, doc: dict[str, Any], summary: dict[str, Any], doc_id: str, verdicts: list[int | None],
            confidence: dict[str, float] | None) -> None:
        """One summary's (summary, key fact) items, those whose verdict failed left out on every side."""
        facts = [i for i, v in enumerate(verdicts) if v is not None]
        judged = [v for v in verdicts if v is not None]
        self.failed += len(verdicts) - len(facts)
        human = [summary["human"]["scu_presence"][i] for i in facts]
        lexical = present_by_overlap(doc["keyfacts"], summary["summary"])
        annotators = summary["human"].get("scu_presence_per_annotator") or [summary["human"]["scu_presence"]]
        self.humans.add([[labels[i] for i in facts] for labels in annotators], human, doc_id)
        self.judged += judged
        self.lexical += [lexical[i] for i in facts]
        self.p_kept += [(confidence or {}).get(f"F{i + 1}") for i in facts]
        if confidence:
            self.confident += [(label, confidence[f"F{i + 1}"], doc_id)
                               for i, label in zip(facts, human) if f"F{i + 1}" in confidence]
        self.fc_rows.append({"doc_id": doc_id, "system": summary["system"],
                             "judge_fc": float(np.mean(judged)),  # over the judged facts
                             "lexical_fc": float(np.mean(lexical)),
                             "human_litepyramid": summary["human"]["litepyramid_recall"]})

    def left_out(self) -> list[dict[str, Any]]:
        """Summaries left out of FC per summary under each rule for a failed verdict (the old rule and today's)."""
        return [{"rule": "any failed item leaves the summary out (the rule before items were judged one by one)",
                 "summaries": self.whole_failed + self.partly_failed, "of": self.summaries},
                {"rule": "only a summary without one valid fact verdict is left out", "summaries": self.whole_failed,
                 "of": self.summaries}]


def alignment(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    items = alignment_items(pipeline, docs)
    result = _alignment_result(pipeline.config.name, len(docs), items, seed)
    result.tables["summaries_left_out"] = items.left_out()
    result.summary.append(f"summaries left out for a failed fact verdict: {items.whole_failed + items.partly_failed} "
                          f"of {items.summaries} if any failed item voided the summary (the old rule), "
                          f"{items.whole_failed} of {items.summaries} now (items judged one by one)")
    return result


def alignment_items(pipeline: Pipeline, docs: list[dict[str, Any]]) -> AlignmentItems:
    """The judge's verdict and P(kept) on every (summary, human key fact) item, beside the human labels and
    the word-overlap baseline, in the documents' order."""
    plans = []
    for doc in docs:
        document = document_of(doc)
        scaffold = facts_scaffold(document, doc["keyfacts"])
        for n, summary in enumerate(doc["summaries"], 1):
            candidate = Candidate(record=n, doc_id=document.doc_id, system=summary["system"], summary=summary["summary"])
            plans.append((doc, summary, document, _fact_requests(pipeline, scaffold, document, candidate)))
    records, _ = pipeline.answer([p for *_, planned in plans for p in planned], "judging key facts")
    items = AlignmentItems(summaries=len(plans), p_kept_note=pipeline.method.not_a_confidence)
    for doc, summary, document, planned in plans:
        n_facts = len(doc["keyfacts"])
        record = _facts_record(pipeline, planned, records)
        no_sentences: list[int | None] = [0] * n_facts  # nothing conveyed
        verdicts = no_sentences if not planned else _inferred(pipeline, record, n_facts)
        if verdicts is None:
            items.failed += n_facts
            items.whole_failed += 1
        else:
            items.partly_failed += bool(record and record.failed_items)
            items.add(doc, summary, document.doc_id, verdicts, record.confidence if record else None)
    return items


def _alignment_result(judge: str, documents: int, items: AlignmentItems, seed: int) -> MetaEvalResult:
    result = MetaEvalResult("realsumm-alignment", judge, documents, len(items.judged), items.failed)
    result.human_agreement("key-fact presence", items.humans,
                           {"judge": items.judged, f"word overlap >= {OVERLAP_PRESENT}": items.lexical}, seed)
    result.tables["fc_per_summary"] = items.fc_rows
    result.tables["fc_correlation"] = []
    for scorer in ("judge_fc", "lexical_fc"):
        rows = correlation_table(items.fc_rows, scorer, "human_litepyramid", seed)
        result.tables["fc_correlation"] += [{"scorer": scorer, **row} for row in rows]
        result.summary.append(f"{scorer} with LitePyramid recall: {describe_spearman(rows)}")
    if items.confident:
        confidence_tables(result, items.confident, seed, items.p_kept_note)
    return result


def confidence_tables(result: MetaEvalResult, confident: list[tuple[int, float, str]], seed: int,
                      not_a_confidence: str | None, p: str = "P(kept)", kind: str | None = "facts") -> None:
    """How well `p` (human label, P, document per item) ranks and calibrates, and the threshold that the
    config's thresholds of `kind` take from a dev split (None: a level no config threshold applies to)."""
    calibrated = calibration([c[0] for c in confident], [c[1] for c in confident], [c[2] for c in confident], seed)
    result.tables["confidence"] = [{"items": len(confident),
                                    "p_kept": f"not a confidence: {not_a_confidence}" if not_a_confidence else "confidence",
                                    "auroc": calibrated.auroc.value,
                                    "auroc_low95": calibrated.auroc.low, "auroc_high95": calibrated.auroc.high,
                                    "ece": calibrated.ece,
                                    "threshold": calibrated.threshold,
                                    "threshold_all_documents": calibrated.threshold_all,
                                    "held_out_balanced_accuracy": calibrated.held_out_balanced_accuracy,
                                    "held_out_balanced_accuracy_at_0.5": calibrated.held_out_balanced_accuracy_at_half}]
    result.tables["reliability"] = calibrated.reliability
    what = f"{p}, not a confidence ({not_a_confidence})" if not_a_confidence else "verdict confidence"
    result.summary.append(
        f"{what} ({len(confident)} of {result.items} items have {p}): AUROC {calibrated.auroc}, "
        f"ECE {_f(calibrated.ece)}; "
        f"threshold {_f(calibrated.threshold)} from half the documents gives balanced accuracy "
        f"{_f(calibrated.held_out_balanced_accuracy)} on the other half "
        f"(at 0.5: {_f(calibrated.held_out_balanced_accuracy_at_half)}); the threshold chosen on all "
        f"these documents: {_f(calibrated.threshold_all)}"
        + ("" if not_a_confidence or kind is None else f" (for a config's thresholds of {kind} when they are a dev split)"))


def _f(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def matching_requests(pipeline: Pipeline, docs: list[dict[str, Any]]) -> tuple[list[tuple[Any, ...]], int]:
    """Each document's extracted facts against people's key facts, asked both ways: is a human fact covered by the
    judge's facts (read as a summary), and does an extracted fact match a human one; and how many documents have no
    extracted fact list."""
    documents = [document_of(doc) for doc in docs]
    extracted = pipeline.extract(documents)
    plans = []
    failed_docs = 0
    for doc, document in zip(docs, documents):
        scaffold = extracted.scaffolds.get(document.doc_id)
        if scaffold is None or not scaffold.items("facts"):
            failed_docs += 1
            continue
        ours = [f.text for f in scaffold.items("facts")]
        labels = [f.label for f in scaffold.items("facts")]
        human = doc["keyfacts"]
        # A human fact is covered when the judge infers it from our facts, and the other way round.
        ours_as_summary = Candidate(record=1, doc_id=document.doc_id, system="extracted facts", summary="\n".join(ours))
        human_as_summary = Candidate(record=2, doc_id=document.doc_id, system="human facts", summary="\n".join(human))
        covered = _fact_requests(pipeline, facts_scaffold(document, human), document, ours_as_summary)
        matched = _fact_requests(pipeline, facts_scaffold(document, ours, origin="extracted"), document, human_as_summary)
        plans.append((document, human, ours, labels, covered, matched))
    return plans, failed_docs


def extraction(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    plans, failed_docs = matching_requests(pipeline, docs)
    records, _ = pipeline.answer([p for *_, c, m in plans for p in (*c, *m)], "matching facts")

    rows: list[dict[str, Any]] = []
    failed = 0
    for document, human, ours, labels, covered, matched in plans:
        by_judge_covered = every_fact(pipeline, covered, records, len(human))
        by_judge_matched = every_fact(pipeline, matched, records, len(ours))
        if by_judge_covered is None or by_judge_matched is None:
            failed += 1
            continue
        rows.append({
            "doc_id": document.doc_id, "human_facts": len(human), "extracted_facts": len(ours),
            "judge_covered": sum(by_judge_covered), "judge_unmatched": len(ours) - sum(by_judge_matched),
            # whether the judge's "main point" labels go to what people took for key facts
            "extracted_main": labels.count(MAIN),
            "matched_main": sum(m for m, label in zip(by_judge_matched, labels) if label == MAIN),
            "lexical_covered": sum(max(overlap(h, o) for o in ours) >= OVERLAP_PRESENT for h in human),
            "lexical_unmatched": sum(max(overlap(o, h) for h in human) < OVERLAP_PRESENT for o in ours),
        })
    result = MetaEvalResult("realsumm-extraction", pipeline.config.name, len(docs), sum(r["human_facts"] for r in rows),
                            failed + failed_docs)
    result.tables["per_document"] = rows
    shares = _coverage_shares(rows, seed)
    result.tables["coverage"] = shares
    result.summary = [f"{r['measure']} ({r['rule']} rule): {_f(r['value'])} [{_f(r['low95'])}, {_f(r['high95'])}]"
                      for r in shares]
    result.summary.append(f"documents without an extracted fact list: {failed_docs}; failed matching judgments: {failed}")
    return result


def _coverage_shares(rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Pooled shares over documents, with intervals: human facts covered and extracted facts matching none, by the
    judge's rule and by word overlap; extracted main facts matching a human fact."""
    def share(rule: str, measure: str, numerator: str, denominator: str) -> dict[str, Any]:
        value, low, high = _pooled_share(rows, numerator, denominator, seed)
        return {"rule": rule, "measure": measure, "value": value, "low95": low, "high95": high}

    shares = []
    for rule in ("judge", "lexical"):
        shares += [share(rule, "human facts covered", f"{rule}_covered", "human_facts"),
                   share(rule, "extracted facts matching no human fact", f"{rule}_unmatched", "extracted_facts")]
    return [*shares, share("judge", "extracted main facts matching a human fact", "matched_main", "extracted_main")]


def _pooled_share(rows: list[dict[str, Any]], part: str, whole: str, seed: int) -> tuple[float | None, ...]:
    """sum(part) / sum(whole) over documents, with a bootstrap interval over documents."""
    if not rows:
        return None, None, None
    numerator = np.array([r[part] for r in rows], dtype=float)
    denominator = np.array([r[whole] for r in rows], dtype=float)

    def share(idx: np.ndarray) -> float | None:
        total = denominator[idx].sum()
        return float(numerator[idx].sum() / total) if total else None

    return grouped_bootstrap(share, [r["doc_id"] for r in rows], seed)
