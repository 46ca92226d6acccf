"""Correlations with human scores, reported as the field does (`correlation_table`): at summary level pooled over
all summaries and as the mean of per-document correlations (SummEval, G-Eval), at system level over system means on
the documents where every system has a value (and, for samples that draw some systems per document, over each
system's own summaries), each with Spearman's 95% interval from resampling documents (and, at system level,
Kendall's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from .agreement import Estimate, grouped_bootstrap


def correlations(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """Pearson, Spearman and Kendall correlation; None with fewer than 3 points or a constant side."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~np.isnan(a) & ~np.isnan(b)
    a, b = a[keep], b[keep]
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return {"pearson": None, "spearman": None, "kendall": None, "n": len(a)}
    return {"pearson": float(stats.pearsonr(a, b)[0]), "spearman": float(stats.spearmanr(a, b)[0]),
            "kendall": float(stats.kendalltau(a, b)[0]), "n": len(a)}


POOLED = "pooled over summaries"
PER_DOCUMENT = "mean of per-document"
SHARED_DOCUMENTS = "over the documents every system has"
OWN_SUMMARIES = "over each system's own summaries"


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rho as scipy computes it (Pearson's r of average ranks), without scipy's input checks,
    which took 20 times as long: the bootstrap computes it a thousand times per estimate."""
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float(ra @ rb / np.sqrt((ra @ ra) * (rb @ rb)))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing their mean rank (scipy's rankdata, method "average")."""
    order = values.argsort(kind="stable")
    ordered = values[order]
    run = np.empty(len(values), dtype=int)  # which run of equal values each sorted position is in
    run[0] = 0
    np.cumsum(ordered[1:] != ordered[:-1], out=run[1:])
    last = np.bincount(run).cumsum()  # the rank of each run's last member
    ranks = np.empty(len(values))
    ranks[order] = (last - (np.bincount(run) - 1) / 2)[run]
    return ranks


def correlation_table(rows: Sequence[dict[str, Any]], x: str, y: str, seed: int = 0,
                      systems: bool = True) -> list[dict[str, Any]]:
    """Pearson, Spearman and Kendall of `x` with `y` over rows (one per summary, with doc_id and system;
    None is no value), each row with Spearman's 95% interval from resampling documents and the number
    of documents it rests on: summary level pooled over summaries, and the mean of per-document
    correlations (over documents with 3 or more scored summaries that vary); with `systems`, system
    level over system means on the documents where every system has both values, and over each
    system's own summaries (the only one defined when a sample draws some systems per document)."""
    scored = [r for r in rows if _has_value(r[x]) and _has_value(r[y])]
    a, b = np.array([r[x] for r in scored], dtype=float), np.array([r[y] for r in scored], dtype=float)
    documents = np.array([r["doc_id"] for r in scored], dtype=str)
    pooled = grouped_bootstrap(lambda idx: spearman(a[idx], b[idx]), documents.tolist(), seed)
    out = [{"level": "summary", "aggregation": POOLED, **correlations(a, b), "documents": len(set(documents)),
            **_spearman_interval(pooled)}]
    per_document = {d: correlations(a[documents == d], b[documents == d]) for d in dict.fromkeys(documents.tolist())}
    defined = [d for d, c in per_document.items() if c["spearman"] is not None]
    rho = np.array([per_document[d]["spearman"] for d in defined])
    mean_rho = grouped_bootstrap(lambda idx: float(rho[idx].mean()) if len(idx) else None, defined, seed)
    out.append({"level": "summary", "aggregation": PER_DOCUMENT,
                **{k: float(np.mean([per_document[d][k] for d in defined])) if defined else None
                   for k in ("pearson", "spearman", "kendall")},
                "n": sum(per_document[d]["n"] for d in defined), "documents": len(defined),
                **_spearman_interval(mean_rho)})
    if systems:
        names = sorted({r["system"] for r in rows})
        code = np.array([names.index(r["system"]) for r in scored], dtype=int)
        complete = [d for d in dict.fromkeys(documents.tolist()) if len(set(code[documents == d])) == len(names)]
        shared = np.isin(documents, complete)
        out.append(_system_row(SHARED_DOCUMENTS, a[shared], b[shared], code[shared], documents[shared], len(names), seed))
        out.append({**out[-1], "aggregation": OWN_SUMMARIES} if shared.all() else  # the same summaries: the same row
                   _system_row(OWN_SUMMARIES, a, b, code, documents, len(names), seed))
    return out


def describe_spearman(rows: Sequence[dict[str, Any]]) -> str:
    """Spearman's rho of correlation_table rows (one scorer against one human score) in words, each
    with what it is computed over; Pearson and Kendall are in the table."""
    parts = []
    for row in rows:
        counted = f"{row['n']} summaries" if row["level"] == "summary" else f"{row['n']} systems"
        rho = Estimate.of(row, "spearman")
        parts.append(f"{row['level']}-level {row['aggregation']} {rho} ({counted}, {row['documents']} documents)")
    return "Spearman " + "; ".join(parts)


def _has_value(value: float | None) -> bool:
    return value is not None and not np.isnan(value)


def _spearman_interval(estimate: tuple[float | None, float | None, float | None]) -> dict[str, float | None]:
    return {"spearman_low95": estimate[1], "spearman_high95": estimate[2]}


def _system_means(a: np.ndarray, b: np.ndarray, code: np.ndarray, systems: int) -> tuple[np.ndarray, np.ndarray]:
    """Each system's mean of a and of b (systems without a summary here left out)."""
    count = np.bincount(code, minlength=systems)
    seen = count > 0
    return (np.bincount(code, a, systems)[seen] / count[seen], np.bincount(code, b, systems)[seen] / count[seen])


def kendall(a: np.ndarray, b: np.ndarray) -> float | None:
    """Kendall's tau-b; None with fewer than 3 points or a constant side."""
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(stats.kendalltau(a, b)[0])


def _system_row(aggregation: str, a: np.ndarray, b: np.ndarray, code: np.ndarray, documents: np.ndarray,
                systems: int, seed: int) -> dict[str, Any]:
    """System-level correlations, with Spearman's and Kendall's 95% intervals from resampling documents (how users
    compare systems: the ranking of a few systems, where Kendall's tau is the usual measure)."""
    means = lambda idx: _system_means(a[idx], b[idx], code[idx], systems)  # noqa: E731
    rho = grouped_bootstrap(lambda idx: spearman(*means(idx)), documents.tolist(), seed)
    tau = grouped_bootstrap(lambda idx: kendall(*means(idx)), documents.tolist(), seed)
    return {"level": "system", "aggregation": aggregation, **correlations(*_system_means(a, b, code, systems)),
            "documents": len(set(documents.tolist())), **_spearman_interval(rho),
            "kendall_low95": tau[1], "kendall_high95": tau[2]}
