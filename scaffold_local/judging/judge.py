"""The judge: one object for everything a judge does with a model config and a method version. It
plans each request (prompt + per-request schema + token budget) and reads its output back into a
record, parsed or failed with a failure class; assembles scaffolds and the metric inputs of one
summary. Knows prompts, schemas and the views; never an engine. Each job lives in its own module: extraction.py
(stage 1: `judge.extraction`), strategies.py (stage 2: each judgment kind's strategy, written or read, chosen once when
the judge is bound to its method version: it plans the kind's requests and reads its records back) and
metric_inputs.py (records -> metric inputs); this class binds them to its setup."""

from __future__ import annotations

from collections.abc import Mapping

from ..backends.protocol import Result
from ..data.inputs import Candidate, Document
from ..method.metrics import SummaryVerdicts
from ..method.scaffold import Scaffold
from ..method.schemas import json_schema, schema_sha256
from ..method.versions import MethodVersion
from ..method.views import ViewVerdicts, direct_score, judgment_kind
from ..method.views import sentences as sentence_check
from ..records import Record
from . import metric_inputs
from .config import ModelConfig
from .extraction import Extraction
from .judge_setup import JudgeSetup
from .planned import PlannedRequest, read_together
from .prompts import PromptTemplate
from .read_verdicts import VerdictReader
from .strategies import JudgmentStrategy, ReadJudgment, WrittenJudgment
from .written_verdicts import parse_written


class Judge(JudgeSetup):
    """Binds a model config, a method version and its prompt set; turns documents and summaries into
    requests and outputs into records, scaffolds and judgments."""

    def __init__(self, config: ModelConfig, method: MethodVersion | None = None,
                 prompts: Mapping[str, PromptTemplate] | None = None):
        super().__init__(config, method, prompts)
        self.extraction = Extraction(self)  # stage 1
        # Every judge reads what it was asked to read (the holistic pairwise baseline is read under any version);
        # only a version that reads a kind's verdicts plans that kind's judgments as readings.
        self.reader = VerdictReader(self)
        read, written = ReadJudgment(self, self.reader), WrittenJudgment(self)
        # Each judgment kind's strategy, written or read, chosen once here for the method version.
        kinds = (*self.views, sentence_check.KIND, direct_score.KIND)
        self.strategies: dict[str, JudgmentStrategy] = {k: read if self.method.reads(k) else written for k in kinds}

    # ------------------------------------------------------------ stage 2: judgment

    def plan(self, scaffold: Scaffold | None, document: Document, candidate: Candidate,
             task: str | None = None) -> list[PlannedRequest]:
        """The requests for one summary: of every judgment task, or of `task` alone. A summary with no
        sentences needs none (see `summary_verdicts`)."""
        sentences = self.sentences(candidate.summary, self.summary_language(document))
        if not sentences:
            return []
        planned = []
        for asked in self.judgment_tasks():
            if task in (None, asked):
                strategy = self.strategies[judgment_kind(asked) or ""]
                requests = strategy.plan(scaffold, document, candidate, asked, sentences)
                # one task's readings of the summary are computed together, whether or not the others are planned
                planned += read_together(requests, self.fingerprint) if self.method.readings_together else requests
        return planned

    def judgment_tasks(self) -> tuple[str, ...]:
        """Every judgment task, in the order a summary's requests are planned: the views', the sentence check,
        the direct score."""
        return (*(spec.align_task for spec in self.views.values()), sentence_check.TASK, direct_score.TASK)

    def record(self, planned: PlannedRequest, result: Result, attempts: int = 1) -> Record:
        """One output as a record: parsed, or failed with its class (an engine's own, "truncated"
        when cut off at max_tokens, "validation" when complete but invalid)."""
        schema = planned.request.json_schema or (json_schema(planned.model) if planned.reading else None)
        record = Record(
            request_id=planned.request.id, cache_key=planned.cache_key, task=planned.task,
            prompt=self.template(planned.task).ref, schema_sha256=schema_sha256(schema) if schema else None,
            doc_id=planned.doc_id, system=planned.system, text=result.text, finish_reason=result.finish_reason,
            usage=result.usage.model_dump() if result.usage else None, latency_s=result.latency_s, error=result.error,
            max_tokens=planned.request.sampling.max_tokens, attempts=attempts,
        )
        if planned.reading is not None:
            return self.reader.record(planned, result, record)
        if result.finish_reason == "error":
            record.failure = result.failure or "engine_crash"
            return record
        if schema is None:  # free text (a justification written on demand): kept as written, never a verdict
            record.parsed = {"text": result.text or ""}
            return record
        return parse_written(self, planned, result, record)

    def reread(self, planned: PlannedRequest, stored: Record) -> Record:
        """A stored output read again under today's rules, without an engine call: a store written
        before verdicts were read item by item holds outputs rejected whole for one bad item. The
        token probabilities are not stored, so items valid only now have no confidence."""
        again = self.record(planned, Result(id=stored.request_id, text=stored.text, finish_reason="stop"))
        return stored.model_copy(update={key: getattr(again, key)
                                         for key in ("parsed", "failed_items", "validation_error", "failure")})

    # ------------------------------------------------------------ records -> metric inputs

    by_kind = staticmethod(metric_inputs.by_kind)

    def verdicts(self, view: str, record: Record, weighted: bool = False) -> ViewVerdicts:
        return metric_inputs.view_verdicts(self, self.strategies[view], view, record, weighted)

    def sentence_verdicts(self, record: Record, n_sentences: int, weighted: bool = False) -> list[float | None]:
        return self.strategies[sentence_check.KIND].sentence_verdicts(record, n_sentences, weighted)

    def summary_verdicts(self, scaffold: Scaffold, n_sentences: int, records: Mapping[str, Record],
                         weighted: bool = False) -> SummaryVerdicts:
        return metric_inputs.summary_verdicts(self, self.strategies, scaffold, n_sentences, records, weighted)

