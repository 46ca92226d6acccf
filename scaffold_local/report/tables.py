"""The analyses as flat tables (lists of rows), written as JSON, CSV and Parquet beside the HTML
page, so every number in the report can be read by a program."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..analysis.groups import GroupedVsIndividual, MemberCoverage
from ..analysis.rankings import three_digits
from ..analysis.run_analysis import MultiRunAnalysis, RunAnalysis
from ..data.store.score_tables import write_csv
from ..method.metrics import METRICS

Rows = list[dict[str, Any]]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return round(value, 6) if isinstance(value, float) else value


def _comparison_tables(analysis: RunAnalysis) -> dict[str, Rows]:
    """Per metric: each system's paired mean over documents, every pair's difference, how often a rank holds."""
    run = analysis.name
    means, pairs, stability = [], [], []
    for metric, c in analysis.comparisons.items():
        for m in c.means:
            overall = analysis.overall[m.system].metrics[metric]
            means.append({"run": run, "metric": metric, "system": m.system, "paired_mean": m.mean, "low95": m.low,
                          "high95": m.high, "documents": len(c.documents), "documents_left_out": len(c.left_out),
                          "left_out": "; ".join(f"{d}: {why}" for d, why in c.left_out.items()),
                          "mean_over_all_summaries": overall.mean, "summaries": overall.n,
                          "summaries_excluded": overall.excluded})
        for p in c.pairs:
            pairs.append({"run": run, "metric": metric, "a": p.a, "b": p.b, "difference": p.difference,
                          "documents": p.documents, "low95": p.low, "high95": p.high, "p_value": p.p_value,
                          "p_holm": p.p_holm, "holm_pairs": len(c.pairs), "p_a_better": p.p_a_better,
                          "separated": p.separated, "not_assessed": p.not_assessed})
        for system, share in c.rank_stability.items():
            stability.append({"run": run, "metric": metric, "system": system, "keeps_rank": share})
    return {"system_means": means, "pair_differences": pairs, "rank_stability": stability}


def run_tables(analysis: RunAnalysis) -> dict[str, Rows]:
    run = analysis.name
    agreement = analysis.agreement
    correlations = [{"run": run, "metric_a": a, "metric_b": b, "spearman": agreement.spearman[i][j],
                     "pearson": agreement.pearson[i][j]}
                    for i, a in enumerate(agreement.metrics) for j, b in enumerate(agreement.metrics)]
    return {
        **_comparison_tables(analysis),
        "resolving_power": [{"run": run, **vars(r)} for r in analysis.resolving],
        "rankings": [{"run": run, "ranked_by": r.name, "order": r.ordered(three_digits),
                      "pairs_separated": r.pairs_separated, "pairs": r.pairs, "not_assessed": r.not_assessed,
                      "kendall_tau_with_grounded": r.tau_with_grounded, "note": r.note,
                      **{f"score[{s}]": v for s, v in r.scores.items()}} for r in analysis.rankings],
        "metric_correlations": correlations,
        "leaders": [{"run": run, "metric": m, "leader": " = ".join(s), "tied": len(s) > 1,
                     "split_leadership": agreement.split_leadership} for m, s in agreement.leaders.items()],
        "missed_items": [{"run": run, "system": system, "doc_id": m.item.doc_id, "view": m.item.view,
                          "item_id": m.item.item_id, "label": m.item.label, "item": m.item.text,
                          "kept_by_other_systems": m.kept_by_others, "other_systems": m.others}
                         for system, misses in analysis.drill.missed_by_system.items() for m in misses],
        "missed_by_all": [{"run": run, "doc_id": i.doc_id, "view": i.view, "item_id": i.item_id, "label": i.label,
                           "item": i.text, "systems": len(i.kept)} for i in analysis.drill.missed_by_all],
        "length_correlation": [{"run": run, "metric": metric, "spearman_with_words": rho}
                               for metric, rho in analysis.length.spearman_with_length.items()],
        "length_by_system": [{"run": run, "system": s, "mean_words": w} for s, w in analysis.length.mean_words.items()],
        **(_budget_tables(analysis) if analysis.budget else {}),
        **({"member_coverage": member_rows(analysis.name, analysis.members)} if analysis.members else {}),
    }


def member_rows(run: str, coverage: MemberCoverage) -> Rows:
    return [{"run": run, "group": group, "member": member, "system": system, **coverage.values[(group, member, system)]}
            for group, member in coverage.rows for system in coverage.systems
            if (group, member, system) in coverage.values]


def grouped_vs_individual_tables(side: GroupedVsIndividual) -> dict[str, Rows]:
    """The side-by-side of an individual and a grouped run as two tables (`report --individual`)."""
    means = [{"metric": m, "system": s, "individual_mean": side.individual[m][s][0],
              "individual_summaries": side.individual[m][s][1], "grouped_mean": side.grouped[m][s][0],
              "grouped_summaries": side.grouped[m][s][1], "individual_run": side.individual_run,
              "grouped_run": side.grouped_run} for m in side.metrics for s in side.systems]
    members = [{"member": member, "system": s, "fc_own_summary": own, "fc_in_group_summaries": grouped,
                "group_summaries": n} for (member, s), (own, (grouped, n)) in side.member_fc.items()]
    return {name: [{k: _clean(v) for k, v in row.items()} for row in rows]
            for name, rows in (("grouped_vs_individual", means), ("member_fc_grouped_vs_individual", members))}


def _budget_tables(analysis: RunAnalysis) -> dict[str, Rows]:
    budget, run = analysis.budget, analysis.name
    assert budget is not None
    return {
        "budget_compliance": [{"run": run, "word_budget": budget.budget, "system": s.system, "summaries": s.summaries,
                               "within_budget": s.within, "compliance_rate": s.rate, "mean_words": s.mean_words,
                               "max_words": s.max_words} for s in budget.systems],
        "budget_metric_means": [{"run": run, "word_budget": budget.budget, "metric": metric, "system": system,
                                 "group": group, "mean": mean, "summaries": n}
                                for metric, by_system in budget.means.items() for system, groups in by_system.items()
                                for group, (mean, n) in groups.items()],
    }


def all_tables(multi: MultiRunAnalysis) -> dict[str, Rows]:
    tables: dict[str, Rows] = {}
    for analysis in multi.runs:
        for name, rows in run_tables(analysis).items():
            tables.setdefault(name, []).extend(rows)
    if multi.judges is not None:
        j = multi.judges
        tables["judge_agreement"] = [vars(a) for a in j.agreement]
        tables["judge_ranking_tau"] = [{"metric": m, "kendall_tau": t} for m, t in j.ranking_tau.items()]
        tables["judge_cost"] = [vars(c) for c in j.costs]
        tables["judge_disagreements"] = [
            {"doc_id": d.doc_id, "system": d.system, "view": d.view, "item_id": d.item_id, "label": d.label,
             "item": d.text, **{f"kept[{k}]": v for k, v in d.verdicts.items()},
             **{f"why[{k}]": v for k, v in d.justifications.items()}} for d in j.disagreements]
    if multi.consistency is not None:
        c = multi.consistency
        tables["self_consistency_flips"] = [{"view": v, "flip_rate": r, "reruns": c.reruns} for v, r in c.flip_rate.items()]
        tables["self_consistency_spread"] = [{"metric": m, "system": s, "spread_of_mean": v}
                                             for m, by in c.mean_spread.items() for s, v in by.items()]
    return {name: [{k: _clean(v) for k, v in row.items()} for row in rows] for name, rows in tables.items()}


def write_tables(tables: dict[str, Rows], out_dir: Path, index: str = "analysis.json") -> None:
    """`index` with every table, and one CSV and one Parquet file per table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / index).write_text(json.dumps(tables, indent=1, ensure_ascii=False), encoding="utf-8")
    for name, rows in tables.items():
        columns = list(dict.fromkeys(k for row in rows for k in row))
        write_csv(out_dir / f"{name}.csv", rows, columns)
        if rows:
            pq.write_table(pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in rows]),
                           out_dir / f"{name}.parquet")


def metric_name(key: str) -> str:
    return METRICS.get(key, key)
