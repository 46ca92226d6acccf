"""SummEdits (6 non-news domains: earnings calls, podcasts, meetings, sales calls and emails, paper
abstracts; seed summaries and small edits of them, each labelled consistent or not with the document by
people): whether the judge's sentence check calls a summary consistent (every sentence supported, F = 1)
as people label it. Balanced accuracy of "inconsistent" per domain and its mean over the domains, with
95% intervals over documents, beside word overlap (`sentence_checks`); the share of inconsistent summaries
caught per edit type (entity modifications test entity fidelity); where the judge gives P(supported) per
sentence, how well a summary's P(consistent) (its least) ranks and calibrates. For scale, the SummEdits paper reports,
over its 10 domains, 82.4% balanced accuracy for GPT-4 and about 90.9% for people."""

from __future__ import annotations

from typing import Any

from ..runs.pipeline import Pipeline
from .results import MetaEvalResult
from .sentence_checks import balanced_accuracy_by_group, caught_by_type, check_summaries, summary_confidence

PUBLISHED = "SummEdits paper, all 10 domains: GPT-4 0.824, people about 0.909"


def domain_of(doc: dict[str, Any]) -> str:
    return str(doc["source_dataset"]).rsplit("/", 1)[-1]


def consistency(pipeline: Pipeline, docs: list[dict[str, Any]], seed: int = 0) -> MetaEvalResult:
    checked, failed = check_summaries(pipeline, docs, "checking summaries")
    rows = [c.row(domain=domain_of(c.doc), inconsistent=1 - c.summary["human"]["label_consistent"],
                  edit_types=c.summary["human"].get("edit_types") or []) for c in checked]
    result = MetaEvalResult("summedits-consistency", pipeline.config.name, len(docs), len(rows), failed)
    result.tables["per_summary"] = rows
    means = balanced_accuracy_by_group(result, rows, "domain", "SummEdits label", seed)
    result.tables["edit_types"] = caught_by_type(rows, "edit_types")
    result.summary += [f"mean over {len(v)} domains, {scorer}: balanced accuracy {sum(v) / len(v):.3f}"
                       for scorer, v in means.items() if v]
    summary_confidence(result, rows, seed)
    result.summary.append(f"for scale: {PUBLISHED}")
    return result

