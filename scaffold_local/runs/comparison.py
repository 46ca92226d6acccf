"""Judge comparisons: several judge configs (or one judge rerun with several seeds) scoring the same
input, either on the first judge's scaffolds (isolates judging) or each on its own (isolates
extraction). Runs are ordinary runs in the store; the analysis reads them back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends import Backend, create_backend
from ..data.inputs import InputIssue, LoadedInput
from ..errors import UsageError
from ..judging.config import ModelConfig
from ..judging.dispatch import ProgressFactory
from ..judging.judge import Judge
from ..method.versions import method_version
from ..records import ScaffoldSource
from .holistic_pairs import Pairing, cost
from .pipeline import Pipeline
from .preparing import Prepared, prepare_for

DEFAULT_RERUN_TEMPERATURE = 0.7
SAMPLING_ONLY = ("name", "description", "seed", "temperature", "top_p")  # per request in every backend


def judge_variants(models: list[str], seeds: int, temperature: float | None) -> list[ModelConfig]:
    """The judges to compare: the configs given, or one config rerun with seeds 0..n-1."""
    if seeds:
        if len(models) != 1:
            raise UsageError("--seeds reruns one judge: give exactly one --model")
        base = ModelConfig.load(models[0])
        heat = temperature if temperature is not None else (base.temperature or DEFAULT_RERUN_TEMPERATURE)
        if heat <= 0:
            raise UsageError("reruns with several seeds need a temperature above 0 (--temperature)")
        return [base.model_copy(update={"seed": seed, "temperature": heat, "name": f"{base.name}-t{heat:g}-seed{seed}"})
                for seed in range(seeds)]
    if len(models) < 2:
        raise UsageError("compare needs two or more --model judges, or one with --seeds")
    configs = [ModelConfig.load(m) for m in models]
    names = [c.name for c in configs]
    if len(set(names)) < len(names):
        raise UsageError(f"judge names must differ: {', '.join(names)} (set `name` in the configs)")
    return configs


class _SharedBackends:
    """One engine for judges that differ only in sampling (seed, temperature), which every backend
    takes per request: reruns do not start the engine again. Closed once, at the end."""

    def __init__(self) -> None:
        self._engines: dict[str, Backend] = {}

    def factory(self, config: ModelConfig) -> Backend:
        key = config.model_dump_json(exclude=set(SAMPLING_ONLY))
        if key not in self._engines:
            self._engines[key] = create_backend(config)
        return _Borrowed(self._engines[key])

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()


class _Borrowed:
    """A shared engine as one pipeline sees it: every attribute is the engine's (progress, retries),
    but closing it is left to its owner."""

    def __init__(self, engine: Backend):
        object.__setattr__(self, "engine", engine)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.engine, name, value)

    def close(self) -> None:
        pass


@dataclass
class ComparisonPlan:
    """Judges that will score one input, each set up once: the input every judge's context takes, the pairing, and
    what the user should read first. `execute` scores it with each judge in turn."""

    configs: list[ModelConfig]
    prepared: Prepared
    shared_scaffold: bool
    method: int | None
    pairing: Pairing | None
    notes: list[str]

    def execute(self, store: Path, progress: ProgressFactory, announce: Callable[[str], None] | None = None) -> list[Path]:
        return run_judges(self.configs, self.prepared.loaded, store, self.shared_scaffold, self.method, progress,
                          pairing=self.pairing, announce=announce)


def plan_comparison(models: list[str], loaded: LoadedInput, *, seeds: int = 0, temperature: float | None = None,
                    shared_scaffold: bool = True, method: int | None = None,
                    pairwise: str | None = None) -> ComparisonPlan:
    """Every check and set-up step of a comparison, before anything is sent (`runs.plan` for several judges)."""
    configs = judge_variants(models, seeds, temperature)
    prepared = prepare_every_judge(configs, loaded, shared_scaffold, method)
    fitted = prepared.loaded
    pairing = None if pairwise is None or prepared.nothing_fits else Pairing.parse(pairwise, fitted.systems)
    pair_cost = [f"each judge: {cost(Judge(configs[0]), fitted, pairing)}"] if pairing else []
    return ComparisonPlan(configs, prepared, shared_scaffold, method, pairing, [*prepared.notes, *pair_cost])


def prepare_every_judge(configs: list[ModelConfig], loaded: LoadedInput, shared_scaffold: bool,
                        method: int | None) -> Prepared:
    """`Pipeline.prepare` for every judge in turn: the documents every judge's context can take (one
    skipped for a judge is skipped for all, so the judges score the same input), every judge's issues
    and notes, and each judge's description."""
    issues: list[InputIssue] = []
    summaries, notes = [], []
    for i, config in enumerate(configs):
        extracting = i == 0 or not shared_scaffold
        scaffolds = "extracted by this run's judge" if extracting else "the first judge's"
        one = prepare_for(Judge(config, method_version(method)), scaffolds, loaded, extracting)
        loaded, issues = one.loaded, issues + one.issues
        summaries.append(one.summary)
        notes += [note for note in one.notes if note not in notes]
    return Prepared(loaded, issues, "\n".join(summaries), notes)


def run_judges(configs: list[ModelConfig], loaded: LoadedInput, store: Path, shared_scaffold: bool,
               method: int | None, progress: ProgressFactory,
               backend_factory: Callable[[ModelConfig], Backend] | None = None,
               pairing: Pairing | None = None, announce: Callable[[str], None] | None = None) -> list[Path]:
    """Score the input with each judge in turn (each reading `pairing`'s pairs, where given; `announce` told how long
    each send will take); with a shared scaffold, the first judge's run lends its scaffolds to the others. Returns
    the run folders, in judge order."""
    shared = _SharedBackends()
    run_dirs: list[Path] = []
    try:
        for config in configs:
            source = ScaffoldSource(kind="run", reference=str(run_dirs[0])) if shared_scaffold and run_dirs else None
            pipeline = Pipeline(config, store, backend_factory=backend_factory or shared.factory, progress=progress,
                                announce=announce, method=method, scaffolds=source)
            try:
                run_dirs.append(pipeline.score(loaded, pairing=pairing).run_dir)
            finally:
                pipeline.close()
    finally:
        shared.close()
    return run_dirs
