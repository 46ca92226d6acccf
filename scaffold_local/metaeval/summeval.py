"""SummEval (CNN/DM, 16 systems, expert Likert scores for coherence, consistency, fluency and
relevance): the full method (extraction, every judgment) on the summaries, then Pearson, Spearman
and Kendall of FC, FPS, F, EPS and the direct-score axes against each expert dimension, beside the
lexical baselines: ROUGE-L against the references, and FC and F with word overlap in the judge's
place. Table `correlation` has, per metric and dimension, the rows of `correlation.correlation_table`:
summary level pooled over summaries and as the mean of per-document correlations (SummEval's and
G-Eval's "summary level"), system level over the documents where every system has a value and over
each system's own summaries (a sample that draws some systems per document has only the latter),
each with Spearman's interval over documents. No human ceiling: the data holds the experts' means
only, not each expert's score."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..data.inputs import Candidate, Document, LoadedInput
from ..method.metrics import rouge_l
from ..method.scaffold import Scaffold
from ..runs.pipeline import Pipeline
from .correlation import correlation_table, describe_spearman
from .end_to_end import scored_by_word_overlap
from .frank import flagged_by_overlap
from .realsumm import document_of
from .results import MetaEvalResult

JUDGE_METRICS = ("fc", "fps", "f", "eps", "ds_faithfulness", "ds_completeness", "ds_understandability",
                 "ds_hallucination", "ds")
# The lexical baselines: ROUGE-L against the references, and word overlap in the judge's place: FC with a fact kept
# where the summary holds half of its content words, F with a sentence supported where the document holds 80% of its.
LEXICAL_METRICS = ("rouge_l", "lexical_fc", "lexical_f")
METRICS = (*JUDGE_METRICS, *LEXICAL_METRICS)
DIMENSIONS = ("consistency", "relevance", "coherence", "fluency")


def correlation(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    drawn = [(str(d["doc_id"]), s["system"]) for d in docs for s in d["summaries"]]  # a sample may hold some systems only
    loaded = LoadedInput(source="meta-eval-summeval",
                         fingerprint="summeval:" + hashlib.sha256(json.dumps(drawn).encode()).hexdigest())
    human: dict[tuple[str, str], dict[str, float]] = {}
    lexical: dict[tuple[str, str], float | None] = {}
    for doc in docs:
        document = document_of(doc)
        loaded.documents[document.doc_id] = document
        for summary in doc["summaries"]:
            loaded.candidates.append(Candidate(record=len(loaded.candidates) + 1, doc_id=document.doc_id,
                                               system=summary["system"], summary=summary["summary"]))
            human[document.doc_id, summary["system"]] = {d: summary["human"][f"expert_mean_{d}"] for d in DIMENSIONS}
            references = doc.get("references_all") or ([doc["reference"]] if doc.get("reference") else [])
            lexical[document.doc_id, summary["system"]] = rouge_l(summary["summary"], references)
    # The run folder is named by the run's identity (judge, method, threshold, sample): never another run's.
    outcome = pipeline.score(loaded)
    candidates = {(c.doc_id, c.system): c for c in loaded.candidates}
    rows: list[dict[str, Any]] = [{"doc_id": s.doc_id, "system": s.system, **{m: s.values.get(m) for m in JUDGE_METRICS},
             "rouge_l": lexical[s.doc_id, s.system],
             **word_overlap_metrics(pipeline, outcome.extraction.scaffolds.get(s.doc_id), loaded.documents[s.doc_id],
                                    candidates[s.doc_id, s.system]),
             **{f"human_{d}": human[s.doc_id, s.system][d] for d in DIMENSIONS}} for s in outcome.summaries]
    failed = sum(outcome.failures.values())
    result = MetaEvalResult("summeval-correlation", pipeline.config.name, len(docs), len(rows), failed)
    result.tables["per_summary"] = rows
    result.tables["correlation"] = []
    result.summary = [f"run folder: {outcome.run_dir}", "human ceiling: not computable (the data holds expert means only)"]
    for metric in METRICS:
        for dimension in DIMENSIONS:
            correlated = correlation_table(rows, metric, f"human_{dimension}", seed)
            result.tables["correlation"] += [{"metric": metric, "human": dimension, **row} for row in correlated]
            if metric in ("fc", "fps", "f", "ds", *LEXICAL_METRICS) and dimension in ("consistency", "relevance"):
                result.summary.append(f"{metric} with {dimension}: {describe_spearman(correlated)}")
    return result


def word_overlap_metrics(pipeline: Pipeline, scaffold: Scaffold | None, document: Document,
                         candidate: Candidate) -> dict[str, float | None]:
    """FC with word overlap as the alignment on the judge's extracted facts, and F with word overlap as the
    sentence check (FRANK's rule): the judge's verdicts replaced, everything else the method's."""
    sentences = pipeline.judge.sentences(candidate.summary, pipeline.judge.summary_language(document))
    flagged = flagged_by_overlap(sentences, document.text)
    fc = scored_by_word_overlap(scaffold, candidate, len(sentences)).values.get("fc") if scaffold else None
    return {"lexical_fc": fc, "lexical_f": 1 - sum(flagged) / len(flagged) if flagged else None}
