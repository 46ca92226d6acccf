"""Reading runs: `scaffold_local.runs.load(path)` gives a run's spec, scores, records and scaffolds
to the report, the analysis and any script.

    run = runs.load("scaffold_store/runs/news-smollm2-135m-transformers-7cf81bcb")
    run.spec.judge["name"], run.spec.method_version, run.spec.status
    for s in run.systems: print(s.system, s.metrics["fps"].mean)
    run.records_for("heater-recall", "verbose")["facts"].parsed

Runs written before the run spec had a format version (format 1) open too.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from ..data.store import JudgmentCache, RunFolder, RunNameError, ScaffoldStore
from ..errors import RunNotReadable, SummaryNotFound
from ..judging.config import ModelConfig
from ..judging.judge import Judge
from ..judging.prior_free import prior_kind, with_priors
from ..judging.quality import inspect, load_support, quality_path
from ..judging.verdicts import join_records
from ..method.metrics import SummaryScores, SystemScores
from ..method.scaffold import Scaffold
from ..method.versions import method_version
from ..method.views import ViewVerdicts, judgment_kind
from ..records import RUN_FORMAT_VERSION, Record, RunSpec, RunUsage
from .holistic_pairs import HolisticPair


class Run:
    def __init__(self, run_dir: Path, spec: RunSpec):
        self.dir = run_dir
        self.spec = spec
        self.store_root = run_dir.parent.parent
        self._folder = RunFolder(self.store_root, run_dir.name)
        self._scaffolds: dict[str, Scaffold | None] = {}

    def _lines(self, name: str) -> list[dict[str, Any]]:
        path = self.dir / name
        if not path.is_file():
            raise RunNotReadable(f"{self.dir} has no {name}: the run has not finished scoring (status: {self.spec.status})")
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]

    @cached_property
    def systems(self) -> list[SystemScores]:
        path = self.dir / "systems.json"
        if not path.is_file():
            raise RunNotReadable(f"{self.dir} has no systems.json: the run has not finished scoring "
                                 f"(status: {self.spec.status})")
        return [SystemScores.model_validate(s) for s in json.loads(path.read_text(encoding="utf-8"))]

    @cached_property
    def summaries(self) -> list[SummaryScores]:
        return [SummaryScores.model_validate(s) for s in self._lines("summaries.jsonl")]

    @cached_property
    def candidates(self) -> list[dict[str, Any]]:
        return self._lines("candidates.jsonl")

    @cached_property
    def member_scores(self) -> list[dict[str, Any]]:
        """A grouped run's coverage of each member document by each group summary; [] without groups."""
        return self._lines("member_scores.jsonl") if (self.dir / "member_scores.jsonl").is_file() else []

    @cached_property
    def holistic_pairs(self) -> list[HolisticPair]:
        """The holistic pairwise baseline's preferences where the run read them (`score --pairwise`), else []."""
        stored = self._folder.holistic_pairs()
        return [HolisticPair(**row) for row in stored["pairs"]] if stored else []

    @cached_property
    def usage(self) -> RunUsage:
        """Tokens, finish reasons, failures by class and engine seconds (usage.json; empty where there is none)."""
        return self._folder.usage()

    @cached_property
    def records(self) -> dict[str, Record]:
        """The run's records by cache key: its records.jsonl export, or (for a run interrupted
        before the export) those of its requests found in the store's judgment cache."""
        exported = self._folder.exported_records()
        if exported or not (self.dir / "requests.jsonl").is_file():
            return {r.cache_key: r for r in exported}
        cache = JudgmentCache(self.store_root)
        try:
            return cache.get(row["cache_key"] for row in self._lines("requests.jsonl"))
        finally:
            cache.close()

    def candidate(self, key: str) -> dict[str, Any]:
        for c in self.candidates:
            if f"{c['doc_id']}/{c['system']}" == key:
                return c
        known = ", ".join(f"{c['doc_id']}/{c['system']}" for c in self.candidates[:8])
        raise SummaryNotFound(f"no summary {key!r} in this run (e.g. {known})")

    def records_for(self, doc_id: str, system: str) -> dict[str, Record]:
        """One summary's judgment records, by judgment kind (a view, "faithfulness", "direct_score"), as its metrics
        counted them (a view read against priors corrected by its document's prior readings)."""
        grouped: dict[str, list[Record]] = {}
        priors: dict[str, list[Record]] = {}
        for r in self.records.values():
            if r.doc_id == doc_id and (kind := prior_kind(r.task)) is not None:
                priors.setdefault(kind, []).append(r)
            elif r.doc_id == doc_id and r.system == system and (kind := judgment_kind(r.task)) is not None:
                grouped.setdefault(kind, []).append(r)
        return with_priors({kind: join_records(found) for kind, found in grouped.items()}, priors)

    @cached_property
    def judge(self) -> Judge:
        """The run's judge as it read its verdicts (its config, method version and thresholds); never started."""
        return Judge(ModelConfig.model_validate(self.spec.judge), method_version(self.spec.method_version))

    def verdicts(self, view: str, record: Record) -> ViewVerdicts:
        """A view's verdicts as the run's metrics counted them (the thresholds applied, P(kept) where weighted)."""
        return self.judge.verdicts(view, record, self.spec.weighted_verdicts)

    def scaffold(self, key: str) -> Scaffold | None:
        if key not in self._scaffolds:
            stored = ScaffoldStore(self.store_root).get(key)
            self._scaffolds[key] = stored.scaffold if stored else None
        return self._scaffolds[key]

    def scaffold_notes(self) -> Counter[str]:
        """How many dropped duplicates and merged entities the run's scaffolds record, by action."""
        keys = {c["scaffold_key"] for c in self.candidates if c.get("scaffold_key")}
        return Counter(note.action for key in keys if (s := self.scaffold(key)) for note in s.notes)

    def describe_scaffolds(self) -> str:
        """The run's scaffolds in one line: label balance, near-duplicates, cut items, unsupported facts."""
        limits = ModelConfig.model_validate(self.spec.judge).limits if self.spec.judge.get("backend") else None
        store = ScaffoldStore(self.store_root)
        labels: Counter[str] = Counter()
        duplicates = cut = unsupported = checked = 0
        for key in dict.fromkeys(self.spec.scaffold_keys.values()):
            stored = store.get(key)
            if stored is None or limits is None:
                continue
            quality = inspect(stored.scaffold, limits)
            load_support(quality_path(store.path(key)), quality)
            labels.update(quality.labels.get("facts", {}))
            duplicates += len(quality.near_duplicates)
            cut += len(quality.at_length_bound)
            if quality.unsupported is not None:
                checked += 1
                unsupported += len(quality.unsupported)
        support = (f"{unsupported} facts unsupported by the source in {checked} checked scaffolds" if checked
                   else "facts not checked against the source (extract --check)")
        return (f"scaffold quality: facts main/supporting/other {labels['main point']}/{labels['supporting detail']}/"
                f"{labels['other']}; {duplicates} near-duplicate pairs; {cut} items at the length bound; {support}")


def load(run_dir: Path | str) -> Run:
    """A finished (or partial) run from its folder; RunNotReadable says why a folder is not one."""
    run_dir = Path(run_dir)
    try:
        folder = RunFolder(run_dir.parent.parent, run_dir.name)
    except RunNameError:  # ".", "..", "/": not a run folder's own path
        raise RunNotReadable(f"{run_dir} is not a run folder (no spec.json)") from None
    if not run_dir.is_dir():
        raise RunNotReadable(f"no run folder at {run_dir}")
    if not folder.spec_path.is_file():
        raise RunNotReadable(f"{run_dir} is not a run folder (no spec.json)")
    try:
        spec = folder.read_spec()
    except ValueError as exc:
        raise RunNotReadable(f"{folder.spec_path} is not a run spec this version can read: {exc}") from None
    if spec.format_version > RUN_FORMAT_VERSION:
        raise RunNotReadable(f"{run_dir} was written in run format {spec.format_version}; this version of "
                             f"scaffold_local reads formats 1 to {RUN_FORMAT_VERSION}: upgrade it to read the run")
    return Run(run_dir, spec)


def in_store(store: Path) -> Iterator[Run | RunNotReadable]:
    """Every run folder of a store, in name order: the run, or why it cannot be read (for the caller to say or skip)."""
    for folder in sorted((store / "runs").iterdir()) if (store / "runs").is_dir() else []:
        try:
            yield load(folder)
        except RunNotReadable as exc:
            yield exc
