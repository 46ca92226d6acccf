"""Document groups in the analysis: how much of each member document a group's summary covers, and
an individual run beside a grouped run over the same documents (the paper's failure mode F1: a
holistic score of grouped summaries collapses while coverage shows which member lost what)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from statistics import fmean

from ..method.metrics import METRICS, SummaryScores
from ..runs.run import Run

# What the side-by-side compares: the direct score against the fact coverages that explain it.
COMPARED = ("ds", "fc", "main_fc", "supp_fc", "fps", "qc", "eps")

Mean = tuple[float | None, int]  # (mean over the summaries where the metric is defined, how many)


def _mean(values: list[float | None]) -> Mean:
    defined = [v for v in values if v is not None]
    return (fmean(defined) if defined else None, len(defined))


@dataclass
class MemberCoverage:
    """Each (group, member document) row: a metric of each system's group summary over that member's items."""

    metrics: list[str]
    systems: list[str]
    rows: list[tuple[str, str]]  # (group, member) in run order
    values: dict[tuple[str, str, str], dict[str, float | None]]  # (group, member, system) -> metric -> value
    groups: dict[tuple[str, str], dict[str, float | None]]  # (group, system) -> the group summary's own values


def member_coverage(run: Run) -> MemberCoverage | None:
    """None for a run without groups."""
    scores = run.member_scores
    if not scores:
        return None
    rows = list(dict.fromkeys((r["group"], r["doc_id"]) for r in scores))
    return MemberCoverage(
        metrics=[k for k in METRICS if any(k in r["values"] for r in scores)],
        systems=list(dict.fromkeys(r["system"] for r in scores)),
        rows=rows,
        values={(r["group"], r["doc_id"], r["system"]): r["values"] for r in scores},
        groups={(s.doc_id, s.system): s.values for s in run.summaries if any(g == s.doc_id for g, _ in rows)},
    )


@dataclass
class GroupedVsIndividual:
    """Per system, each compared metric's mean in the individual run (over the grouped run's member
    documents) and in the grouped run; per member document and system, FC of its own summary beside
    the coverage of its items in the group summaries it is in."""

    individual_run: str
    grouped_run: str
    systems: list[str]
    metrics: list[str]
    individual: dict[str, dict[str, Mean]]  # metric -> system -> mean
    grouped: dict[str, dict[str, Mean]]
    members: list[str]
    member_fc: dict[tuple[str, str], tuple[float | None, Mean]]  # (member, system) -> (own FC, grouped FC)


def grouped_vs_individual(grouped: Run, individual: Run) -> GroupedVsIndividual:
    coverage = member_coverage(grouped)
    if coverage is None:
        raise ValueError(f"{grouped.dir} has no document groups (its input has no group field)")
    members = list(dict.fromkeys(m for _, m in coverage.rows))
    own = {(s.doc_id, s.system): s for s in individual.summaries if s.doc_id in members}
    systems = [s for s in coverage.systems if any(k[1] == s for k in own)]
    if not systems:
        raise ValueError(f"{individual.dir} has no summary of a member document of {grouped.dir} by the same "
                         "systems: the two runs are not over the same documents")
    metrics = [m for m in COMPARED if m in METRICS]

    def means(summaries: Iterable[SummaryScores]) -> dict[str, dict[str, Mean]]:
        listed = list(summaries)
        return {m: {s: _mean([x.values.get(m) for x in listed if x.system == s]) for s in systems} for m in metrics}

    member_fc = {}
    for member in members:
        for system in systems:
            in_groups = [coverage.values[(g, m, system)].get("fc") for g, m in coverage.rows
                         if m == member and (g, m, system) in coverage.values]
            summary = own.get((member, system))
            member_fc[(member, system)] = (summary.values.get("fc") if summary else None, _mean(in_groups))
    return GroupedVsIndividual(
        individual_run=individual.dir.name, grouped_run=grouped.dir.name, systems=systems, metrics=metrics,
        individual=means(own.values()), grouped=means(grouped.summaries),
        members=members, member_fc=member_fc,
    )
