"""One summary scored: its sentences (split once, kept by the store), its records read as the judge's method decides
them, its metrics, and for a group's summary its coverage of each member document."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from ..data.inputs import Candidate, Document
from ..data.store import JudgmentCache
from ..judging.judge import Judge
from ..judging.planned import PlannedRequest
from ..method.document_groups import member_scores
from ..method.metrics import SummaryScores, rouge_l, score_summary
from ..method.scaffold import Scaffold
from ..records import Record


def split_summaries(judge: Judge, cache: JudgmentCache, candidates: Sequence[Candidate],
                    sources: dict[str, Document]) -> None:
    """Each summary's sentences, kept by the store from an earlier run where there is one (splitting was most
    of a rerun's time), split by its document's language where the method version says so."""
    by_language: dict[str | None, list[str]] = {}  # one group (None) unless the splitter goes by language
    for c in candidates:
        by_language.setdefault(judge.summary_language(sources[c.doc_id]), []).append(c.summary)
    for language, texts in by_language.items():
        splitter = judge.splitter_version + (f"+{language}" if language else "")
        judge.known_sentences.update(cache.sentences(texts, splitter, functools.partial(judge.sentences, language=language)))


def summary_scores(judge: Judge, candidate: Candidate, scaffold: Scaffold, planned: list[PlannedRequest],
                   records: Mapping[str, Record], weighted: bool = False) -> tuple[SummaryScores, list[dict[str, Any]]]:
    """A summary's scores and, for a group's summary, its coverage of each member document."""
    mine = judge.by_kind(planned, records)
    n_sentences = len(judge.sentences(candidate.summary))
    verdicts = judge.summary_verdicts(scaffold, n_sentences, mine, weighted)
    scores = score_summary(scaffold, verdicts, system=candidate.system, n_sentences=n_sentences,
                           rouge_l_value=rouge_l(candidate.summary, candidate.references))
    members = [{"group": candidate.doc_id, **m.model_dump()}
               for m in member_scores(scaffold, verdicts, candidate.system, n_sentences)]
    return scores, members
