"""A run: the input fitted to the judge's context, its scaffolds from the session's source, every summary's
judgment requests (all summaries of a scaffold sent to the engine together, sorted so that requests sharing a prompt
prefix are adjacent), the records read into metrics, and the run folder that holds it all (session.py answers the
requests, from the store's cache first).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.inputs import Candidate, Document, LoadedInput
from ..data.store import RunFolder
from ..data.store.run_folder import check_run_name, now
from ..judging.planned import PlannedRequest
from ..method.holistic_pairwise import TASK as PAIR_TASK
from ..method.metrics import SummaryScores, SystemScores, system_means
from ..records import Record, RunSpec, RunStatus, RunUsage, usage_stats
from .failures import failure_rows
from .holistic_pairs import HolisticPair, Pairing, PlannedPair, plan_pairs, write_pairs
from .merged_scaffolds import add_groups
from .preparing import Prepared, prepare_for
from .run_spec import candidate_rows, run_spec
from .session import JudgeSession
from .sources import ScaffoldSet
from .summary_scores import split_summaries, summary_scores


@dataclass
class RunOutcome:
    run_dir: Path
    resumed: bool
    summaries: list[SummaryScores]
    systems: list[SystemScores]
    requests_sent: int
    requests_reused: int
    validation_failures: int
    engine_errors: int  # this run's retryable failures: sent again on the next run
    failures: dict[str, int]  # every failed judgment of the run, by failure class
    extraction: ScaffoldSet
    failed_summaries: dict[str, str]  # "doc/system" -> why it could not be judged at all
    usage: RunUsage  # tokens, prefix-cache hits, finish reasons, failures, for extraction and judgments
    scaffolds_extracted: bool = True  # by the run's own judge (else read from a file, a judge's store or a run)
    engine_log: str | None = None  # where the engine's own messages went, where it started
    holistic_pairs: list[HolisticPair] = field(default_factory=list)  # the holistic pairwise baseline, where asked
    status: RunStatus = "complete"  # partial where anything failed or was skipped: `failure_rows` says what
    failure_rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class AskedJudgments:
    """What a run asks the judge: each summary's requests by its key, why a summary has none, the holistic pairs."""

    candidates: list[Candidate]  # in scoring order
    plans: dict[str, list[PlannedRequest]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # "doc/system" -> why it could not be judged at all
    pairs: list[PlannedPair] = field(default_factory=list)

    @functools.cached_property
    def planned(self) -> list[PlannedRequest]:  # read once every summary is planned
        """Every request once: a reading that several summaries plan (an item's prior) is asked and counted once."""
        every = [*(p for ps in self.plans.values() for p in ps),
                 *(r for pair in self.pairs for r in (pair.a_first, pair.b_first))]
        return list({p.cache_key: p for p in every}.values())


class Pipeline(JudgeSession):
    """A run: the input prepared for the judge, then scaffolds -> judgments -> cache -> metrics -> the run folder."""

    # ------------------------------------------------------------ before anything is sent

    def prepare(self, loaded: LoadedInput, *, chunk_tokens: int | None = None, extraction: bool | None = None) -> Prepared:
        """The input fitted to the judge's context (judging/context_fit.py: long documents in chunks, documents
        that cannot fit left out, each said), its description, and the notes a user should read first.
        `extraction`: whether this run extracts scaffolds (default: when its scaffold source is extraction)."""
        extracting = self.source.kind == "extracted" if extraction is None else extraction
        return prepare_for(self.judge, self.source.describe(), loaded, extracting, chunk_tokens, self.dispatch.progress)

    # ------------------------------------------------------------ stage 2: judgments and metrics

    def score(self, loaded: LoadedInput, run_name: str | None = None, command: Sequence[str] | None = None,
              word_budget: int | None = None, pairing: Pairing | None = None) -> RunOutcome:
        """Score every summary; with `pairing`, also read the holistic pairwise baseline on those pairs."""
        if run_name is not None:
            check_run_name(run_name, "run_name")  # a name from outside: one plain folder under runs/
        if pairing is not None:  # its prompt is part of the run's identity whether or not its cost was said first
            self.judge.template(PAIR_TASK)
        spec = run_spec(self.judge, self.source, loaded, command, self.weighted_verdicts)
        run = RunFolder(self.store_root, run_name or spec.run_id or "run")
        spec, resumed = run.open(spec, self.cache)
        spec = spec.model_copy(update={"word_budget": word_budget})
        try:
            outcome, spec = self._score(loaded, run, spec, resumed, pairing)
        except BaseException:  # a crash, Ctrl-C or a kill the process sees: the run says so
            run.set_status(run.read_spec(), "interrupted")
            raise
        run.set_status(spec, outcome.status)
        return outcome

    def _score(self, loaded: LoadedInput, run: RunFolder, spec: RunSpec, resumed: bool,
               pairing: Pairing | None) -> tuple[RunOutcome, RunSpec]:
        sources = {d: loaded.source_of(d) for d in dict.fromkeys(c.doc_id for c in loaded.candidates)}
        retries_before = self.dispatch.retries.copy()
        scaffolds = self.document_scaffolds(loaded, sources)
        add_groups(self.scaffolds, scaffolds, loaded, sources)
        retries = {"extraction": self.dispatch.retries - retries_before}
        run.write_input_issues([*loaded.issues, *scaffolds.issues])
        spec = spec.model_copy(update={"scaffold_keys": {d: s.key for d, s in scaffolds.scaffolds.items()}})
        run.write_spec(spec)

        asked = self._plan_judgments(loaded, scaffolds, sources, pairing)
        run.write_requests({"cache_key": p.cache_key, "request_id": p.request.id, "task": p.task,
                            "doc_id": p.doc_id, "system": p.system} for p in asked.planned)
        records, sent = self.answer(asked.planned, "judging summaries")
        retries["judgments"] = self.dispatch.retries - retries_before - retries["extraction"]
        if self.dispatch.engine_description is not None:
            started = {**self.dispatch.engine_description, "started_at": now()}
            spec = spec.model_copy(update={"engines": [*spec.engines, started]})
        return self._results(loaded, run, resumed, scaffolds, asked, records, sent, retries, pairing), spec

    def _plan_judgments(self, loaded: LoadedInput, scaffolds: ScaffoldSet, sources: dict[str, Document],
                        pairing: Pairing | None) -> AskedJudgments:
        """Every summary's requests (a summary without a scaffold: why not), and the holistic pairs' where asked."""
        candidates = sorted(loaded.candidates, key=lambda c: (c.doc_id, c.system))
        split_summaries(self.judge, self.cache, candidates, sources)
        asked = AskedJudgments(candidates)
        for c in candidates:
            scaffold = scaffolds.scaffolds.get(c.doc_id)
            if scaffold is None:
                asked.failed[c.key] = scaffolds.unavailable.get(c.doc_id, "no scaffold")
            else:
                asked.plans[c.key] = self.judge.plan(scaffold, loaded.excerpts.get(c.key, sources[c.doc_id]), c)
        if pairing:
            asked.pairs = plan_pairs(self.judge, sources, [c for c in candidates if c.key in asked.plans], pairing)
        return asked

    def _results(self, loaded: LoadedInput, run: RunFolder, resumed: bool, scaffolds: ScaffoldSet,
                 asked: AskedJudgments, records: dict[str, Record], sent: list[Record],
                 retries: dict[str, Counter[str]], pairing: Pairing | None) -> RunOutcome:
        """Every summary's scores, the systems' means, the usage and the failures, written to the run folder."""
        scored = [summary_scores(self.judge, c, scaffolds.scaffolds[c.doc_id], asked.plans[c.key], records,
                                 self.weighted_verdicts) for c in asked.candidates if c.key in asked.plans]
        summaries = [summary for summary, _ in scored]
        systems = system_means(summaries)
        used = [records[p.cache_key] for p in asked.planned if p.cache_key in records]
        stages = {"extraction": usage_stats(scaffolds.records), "judgments": usage_stats(used)}
        for stage, resent in retries.items():  # attempts the backend sent again, by class; a resumed run adds to them
            stages[stage].retries = dict(sorted((resent + run.previous_retries(stage)).items()))
        # engine time of this run folder's invocations (a resumed run adds to it)
        usage = RunUsage(**stages, engine_seconds=round(self.dispatch.engine_seconds + run.previous_engine_seconds(), 3))
        members = [row for _, rows in scored for row in rows] if loaded.groups else None
        judged = candidate_rows(self.judge, asked.candidates, scaffolds, asked.failed, loaded.groups)
        run.write_results(usage, summaries, systems, judged, members, used)
        failures = failure_rows(used, asked.failed, [*loaded.issues, *scaffolds.issues])
        run.write_failures(failures)
        return RunOutcome(
            run_dir=run.dir, resumed=resumed, summaries=summaries, systems=systems,
            requests_sent=len(sent), requests_reused=len(asked.planned) - len(sent),
            validation_failures=sum(r.validation_error is not None for r in used),
            engine_errors=sum(r.retryable for r in sent), failures=dict(Counter(r.failure for r in used if r.failure)),
            extraction=scaffolds, failed_summaries=asked.failed, usage=usage,
            scaffolds_extracted=self.source.kind == "extracted",
            engine_log=(self.dispatch.engine_description or {}).get("log"),
            holistic_pairs=write_pairs(run, self.judge, pairing, asked.pairs, records) if pairing else [],
            status="partial" if failures else "complete", failure_rows=failures,
        )

