"""One summary's records as metric inputs: each view's verdicts, each sentence's check and the direct
score, decided as each kind's strategy (strategies.py) and the judge's thresholds decide them."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..method.metrics import SummaryVerdicts
from ..method.scaffold import Scaffold
from ..method.views import ViewVerdicts, judgment_kind
from ..method.views import sentences as sentence_check
from ..records import Record
from .judge_setup import JudgeSetup
from .planned import PlannedRequest
from .prior_free import prior_kind, with_priors
from .read_verdicts import citation_failed, cited
from .strategies import JudgmentStrategy
from .verdicts import join_records


def by_kind(planned: Sequence[PlannedRequest], records: Mapping[str, Record], raw: bool = False) -> dict[str, Record]:
    """One summary's records by judgment kind (a view, "faithfulness", "direct_score"): where a
    kind was asked one item per request, its records joined into one (see `join_records`); a view read against
    its items' priors corrected by them (prior_free.py), unless `raw` (what the judge read, for its study)."""
    grouped: dict[str | None, list[Record]] = {}
    priors: dict[str, list[Record]] = {}
    asked: Counter[str | None] = Counter()
    asked_priors: Counter[str | None] = Counter()
    for p in planned:
        prior = prior_kind(p.task)
        kind = prior or judgment_kind(p.task)
        (asked_priors if prior else asked)[kind] += 1
        if p.cache_key in records and prior:
            priors.setdefault(prior, []).append(records[p.cache_key])
        elif p.cache_key in records:
            grouped.setdefault(kind, []).append(records[p.cache_key])
    joined = {kind: join_records(found) for kind, found in grouped.items()
              if kind is not None and len(found) == asked[kind] and len(priors.get(kind, [])) == asked_priors[kind]}
    return joined if raw else with_priors(joined, priors)  # with_priors corrects only the kinds joined here


def view_verdicts(judge: JudgeSetup, strategy: JudgmentStrategy, view: str, record: Record, weighted: bool = False,
                  n_sentences: int | None = None) -> ViewVerdicts:
    """A view's verdicts as this judge decides them: the output's own, or, for every item whose
    P(kept) was recorded, P(kept) itself (`weighted`) or P(kept) >= the config's decision threshold.
    Items whose verdict failed are in `failed`, neither kept nor missed."""
    verdicts, parsed = strategy.view_verdicts(view, record)
    threshold = judge.thresholds.get(view)
    if record.confidence and weighted:
        verdicts = dataclasses.replace(verdicts, kept={**verdicts.kept, **record.confidence})
    elif record.confidence and threshold is not None:
        decided = {i: float(p >= threshold) for i, p in record.confidence.items()}
        verdicts = dataclasses.replace(verdicts, kept={**verdicts.kept, **decided})
    if parsed is not None:  # the sentences read for every item count where it is kept
        verdicts = _with_citations(judge, verdicts, parsed, n_sentences)
    return verdicts


def _with_citations(judge: JudgeSetup, verdicts: ViewVerdicts, parsed: Mapping[str, Any],
                    n_sentences: int | None) -> ViewVerdicts:
    """Each kept item's cited sentences as read; under `citations_apart` a one-sentence summary's is its sentence
    (never read), and a kept item whose citation reading failed is `uncited`."""
    kept = [i for i in parsed if verdicts.kept.get(i, 0) >= 0.5]
    if not judge.method.citations_apart:
        return dataclasses.replace(verdicts, cited={i: cited(parsed[i]) for i in kept})
    citations = {i: [1] if n_sentences == 1 else cited(parsed[i]) for i in kept}
    uncited = {i: why for i in kept if (why := citation_failed(i, verdicts.failed))}  # none where none was read
    return dataclasses.replace(verdicts, cited=citations, uncited=uncited)


def summary_verdicts(judge: JudgeSetup, strategies: Mapping[str, JudgmentStrategy], scaffold: Scaffold, n_sentences: int,
                     records: Mapping[str, Record], weighted: bool = False) -> SummaryVerdicts:
    """Normalize one summary's records (keyed by judgment kind) into metric inputs. `weighted`:
    a fact or question counts by the probability the judge gave its verdict, where recorded."""
    if n_sentences == 0:
        # Nothing to judge: every item is missed, F and Fact Focus are undefined (docs/method.md).
        return SummaryVerdicts(views={name: ViewVerdicts(kept={i.id: False for i in spec.judged(items)})
                                      for name, spec in judge.views.items()
                                      if (items := scaffold.view(name)) is not None})
    out = SummaryVerdicts()
    for kind, strategy in strategies.items():  # every judgment kind: the views, the sentence check, the direct score
        record = records.get(kind)
        spec = judge.views.get(kind)
        items = scaffold.view(kind)
        if record is None and spec is not None and items is not None and not spec.prompt_items(items):
            parsed: Mapping[str, Any] = {}  # a view with nothing to judge is never asked about
        elif record is None:
            out.failures[kind] = "not judged"
            continue
        elif record.parsed is None:
            out.failures[kind] = record.validation_error or record.error or "no output"
            continue
        else:
            parsed = record.parsed
        if spec is not None:
            out.views[kind] = (view_verdicts(judge, strategy, kind, record, weighted, n_sentences)
                               if record is not None else spec.read(parsed))
        elif kind == sentence_check.KIND:
            assert record is not None
            out.sentence_faithful = strategy.sentence_verdicts(record, n_sentences, weighted)
        else:
            read, why = strategy.direct_score(parsed)
            if read is None:
                out.failures[kind] = why
            else:
                out.direct_score = read
    return out
