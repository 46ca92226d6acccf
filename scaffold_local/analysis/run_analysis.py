"""Every analysis of one run, and of several runs of different judges (or reruns of one judge) over
the same input, as plain dataclasses the report renders and writes."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..method.metrics import METRICS, SystemScores, system_means
from ..runs.run import Run
from .budget import BudgetCompliance, of_run
from .groups import MemberCoverage, member_coverage
from .items import ItemDrillDown, drill_down, item_verdicts
from .judges import JudgeComparison, SelfConsistency, cost, item_agreement, ranking_agreement, self_consistency
from .length import LengthEffect, length_effect
from .metric_agreement import MetricAgreement, metric_agreement
from .paired import MetricComparison, compare
from .rankings import RankingRow, side_by_side
from .resolving import ResolvingPower, resolving_power
from .scores import ScoreTable


@dataclass
class RunAnalysis:
    run: Run
    table: ScoreTable
    comparisons: dict[str, MetricComparison]
    resolving: list[ResolvingPower]
    agreement: MetricAgreement
    drill: ItemDrillDown
    length: LengthEffect
    overall: dict[str, SystemScores]  # each system's means over all its summaries, as `score` prints them
    rankings: list[RankingRow] = field(default_factory=list)  # grounded pairwise beside the metrics' rankings
    budget: BudgetCompliance | None = None  # with a word budget (the run's, or one given to the analysis)
    members: MemberCoverage | None = None  # a run of document groups: coverage of each member document

    @property
    def name(self) -> str:
        return self.run.dir.name

    def means_differ(self, metric: str) -> bool:
        """Whether some system's paired mean leaves out summaries its mean over all summaries has."""
        return any(s.metrics[metric].paired_left_out for s in self.overall.values())


def analyze(run: Run, seed: int = 0, word_budget: int | None = None) -> RunAnalysis:
    table = ScoreTable.from_run(run)
    comparisons = {metric: compare(table, metric, seed) for metric in METRICS}
    scored = {m: c for m, c in comparisons.items() if c.means}
    items = item_verdicts(run)
    return RunAnalysis(
        run=run, table=table, comparisons=comparisons,
        resolving=[resolving_power(table, c) for c in scored.values()],
        agreement=metric_agreement(table, scored),
        drill=drill_down(items, table.systems),
        rankings=side_by_side(comparisons, items, table.systems, seed, run.holistic_pairs),
        length=length_effect(table, list(scored)),
        overall={s.system: s for s in system_means(run.summaries)},  # from the summaries: old runs have them too
        budget=of_run(run, word_budget),
        members=member_coverage(run),
    )


@dataclass
class MultiRunAnalysis:
    runs: list[RunAnalysis]
    judges: JudgeComparison | None = None  # different judges over one input
    consistency: SelfConsistency | None = None  # one judge rerun with different seeds
    notes: list[str] = field(default_factory=list)
    seed: int = 0  # of the bootstrap resamples


def _judge_name(run: Run) -> str:
    return str(run.spec.judge.get("name", run.dir.name))


def _reruns_of_one_judge(runs: list[Run]) -> bool:
    """Same judge config but for its seed (and name): a self-consistency experiment."""
    def core(run: Run) -> dict:
        return {k: v for k, v in run.spec.judge.items() if k not in ("seed", "name", "description")}
    one_config = len({str(sorted(core(r).items())) for r in runs}) == 1
    return one_config and len({r.spec.judge.get("seed") for r in runs}) == len(runs)


def _scored(run: Run) -> frozenset[tuple[str, str, str]]:
    """What a run scored, whatever file held it (JSONL, CSV, Parquet): its (document id, system, summary) triples."""
    return frozenset((c["doc_id"], c["system"], c["summary"]) for c in run.candidates)


def analyze_runs(runs: list[Run], seed: int = 0, word_budget: int | None = None) -> MultiRunAnalysis:
    analyses = [analyze(run, seed, word_budget) for run in runs]
    out = MultiRunAnalysis(analyses, seed=seed)
    if len(runs) < 2:
        return out
    if len({r.spec.input.get("fingerprint") for r in runs}) > 1 and len({_scored(r) for r in runs}) > 1:
        out.notes.append("the runs score different summaries (their (document, system, summary) triples differ): "
                         "judge comparison needs runs over the same summaries")
        return out
    comparisons = [a.comparisons for a in analyses]
    if _reruns_of_one_judge(runs):
        out.consistency = self_consistency(runs, comparisons)
        return out
    names = [f"{_judge_name(r)} ({r.dir.name})" if [_judge_name(x) for x in runs].count(_judge_name(r)) > 1
             else _judge_name(r) for r in runs]
    shared = len({tuple(sorted(r.spec.scaffold_keys.items())) for r in runs}) == 1 and bool(runs[0].spec.scaffold_keys)
    agreement, disagreements = item_agreement(names, runs) if shared else ([], [])
    if not shared:
        out.notes.append("each judge used its own scaffolds, so item-level agreement is not defined; "
                         "rerun with a shared scaffold (compare --shared-scaffold) to isolate judging")
    out.judges = JudgeComparison(names, shared, agreement, ranking_agreement(comparisons),
                                 [cost(n, r) for n, r in zip(names, runs)], disagreements)
    return out
