"""A run's set-up, done once for every front end: `open_judge(JudgeOptions(...))` makes the judge's pipeline from
what the user chose, `plan(pipeline, loaded, options)` fits the input to the judge's context, parses the pairing,
gathers what the user should read first (the summary line, the notes, the pairwise cost, the estimate of a long run,
a judge's first use in this store), and `RunPlan.execute()` scores. `plan_extraction` is the same for a run that only
extracts scaffolds. The CLI, `evaluate()` and the Inspect scorer only build options and render the plan; whoever
opened the pipeline closes it."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..data.inputs import LoadedInput
from ..judging.config import ModelConfig
from ..judging.dispatch import ProgressFactory, no_progress
from ..judging.quality import ScaffoldQuality
from ..records import ScaffoldSource
from .estimate import LONG_RUN_S, Estimate, estimate
from .holistic_pairs import Pairing, cost
from .pipeline import Pipeline, RunOutcome
from .preparing import Prepared
from .sources import ScaffoldSet


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    run_name: str | None = None  # the run folder's name under <store>/runs/ (default: from the run's identity)
    word_budget: int | None = None
    chunk_tokens: int | None = None  # read documents over this many tokens in chunks
    pairwise: str | None = None  # the holistic pairwise baseline: "all", or one system against every other


@dataclass(frozen=True, kw_only=True)
class JudgeOptions:
    """The judge of a run as its user chose it."""

    model: str | ModelConfig | None = None  # a config name or path, or a config (default: the package's default judge)
    store: str | Path = "scaffold_store"
    method_version: int | None = None  # default: the config's, else the package's default version
    batch_requests: int | None = None  # requests per engine call (default: the config's requests_per_call)
    scaffolds: ScaffoldSource | None = None  # where the scaffolds come from (default: the judge extracts them)
    verdict_confidence: bool = False  # record P(kept) of every written verdict
    weighted_verdicts: bool = False  # count each item by the probability of its verdict


def open_judge(options: JudgeOptions, progress: ProgressFactory = no_progress,
               announce: Callable[[str], None] | None = None) -> Pipeline:
    """The pipeline of the judge the user chose; nothing starts until a request is sent (`announce` is told how long
    each send will take, where that is long). Close it when done."""
    config = options.model if isinstance(options.model, ModelConfig) else ModelConfig.load(options.model)
    if options.verdict_confidence:
        config = config.model_copy(update={"verdict_confidence": True})
    return Pipeline(config, Path(options.store), progress=progress, announce=announce, batch_requests=options.batch_requests,
                    method=options.method_version, scaffolds=options.scaffolds,
                    weighted_verdicts=options.weighted_verdicts)


@dataclass
class RunPlan:
    pipeline: Pipeline
    prepared: Prepared
    options: RunOptions
    pairing: Pairing | None
    notes: list[str]  # what the user should know before scoring: the prepared notes, the pairwise cost

    @property
    def loaded(self) -> LoadedInput:
        return self.prepared.loaded

    @property
    def nothing_fits(self) -> bool:
        return self.prepared.nothing_fits

    @functools.cached_property
    def estimate(self) -> Estimate | None:
        """How long a run expected to take LONG_RUN_S or more will take, else None; read from the store's runs only
        when asked (a scorer that runs once per sample does not walk them each time)."""
        pipeline = self.pipeline
        guess = estimate(pipeline.store_root, pipeline.config.name, pipeline.method.number, len(self.loaded.candidates))
        return guess if guess is not None and guess.seconds >= LONG_RUN_S else None

    @functools.cached_property
    def judges_first_run_here(self) -> bool:
        """No judge check of this config in the store, and it never scored there (remembered once asked; a scorer
        that runs once per sample never asks)."""
        return not self.nothing_fits and _first_run_here(self.pipeline.store_root, self.pipeline)

    def first_run_hint(self, named: str | None = None) -> str | None:
        """On the judge's first run in this store, how to learn how far its verdicts can be trusted (`named`: the
        config as the user named it)."""
        if not self.judges_first_run_here:
            return None
        name = self.pipeline.config.name
        return (f"first run with judge {name} in this store: how far its verdicts can be trusted is a few minutes "
                f"away: scaffold-local check-judge -m {named or name}")

    def execute(self) -> RunOutcome:
        options = self.options
        return self.pipeline.score(self.loaded, options.run_name, word_budget=options.word_budget, pairing=self.pairing)


def plan(pipeline: Pipeline, loaded: LoadedInput, options: RunOptions = RunOptions()) -> RunPlan:
    """Every check and set-up step of a run, before anything is sent."""
    prepared = pipeline.prepare(loaded, chunk_tokens=options.chunk_tokens)
    fitted = prepared.loaded
    pairing = None if options.pairwise is None or prepared.nothing_fits else Pairing.parse(options.pairwise, fitted.systems)
    notes = [*prepared.notes, *([cost(pipeline.judge, fitted, pairing)] if pairing else [])]
    return RunPlan(pipeline, prepared, options, pairing, notes)


@dataclass
class ExtractionPlan:
    """A run that only extracts (and stores) the scaffolds of the input's documents, every check done."""

    pipeline: Pipeline
    prepared: Prepared

    @property
    def loaded(self) -> LoadedInput:
        return self.prepared.loaded

    @property
    def notes(self) -> list[str]:
        return self.prepared.notes

    def execute(self, check: bool = False) -> tuple[ScaffoldSet, list[ScaffoldQuality]]:
        """The scaffolds (extracted, or reused from the store) and, with `check`, each one's quality checks."""
        scaffolds = self.pipeline.document_scaffolds(self.loaded, self.loaded.documents)
        return scaffolds, self.pipeline.check(scaffolds.scaffolds, self.loaded.documents) if check else []


def plan_extraction(pipeline: Pipeline, loaded: LoadedInput) -> ExtractionPlan:
    """The input fitted to the judge's context for extraction, before anything is sent."""
    return ExtractionPlan(pipeline, pipeline.prepare(loaded, extraction=True))


def _first_run_here(store: Path, pipeline: Pipeline) -> bool:
    """True the first time this judge config (by fingerprint) scores in this store with no judge check of it there;
    remembers it."""
    config = pipeline.config
    fingerprint = config.fingerprint()
    checks = store / "judge-checks"
    if checks.is_dir() and any(p.name.startswith(f"{config.name}-{fingerprint[:12]}") for p in checks.glob("*.json")):
        return False
    seen = checks / "seen" / hashlib.sha256(fingerprint.encode()).hexdigest()[:16]
    if seen.is_file():
        return False
    seen.parent.mkdir(parents=True, exist_ok=True)
    seen.write_text(config.name, encoding="utf-8")
    return True
