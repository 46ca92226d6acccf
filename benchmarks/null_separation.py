"""How often a rule calls two systems "separated" when they do not differ: the table behind the report's
choice of a paired t-test (README, "Decisions: intervals, resolving power, judge comparison").

    .venv/bin/python benchmarks/null_separation.py        # about a minute on 2 cores; prints Markdown

Null data are the test's own (`tests/test_analysis.py`: two exchangeable systems per document, as FC-like
shares of 4 items with a skewed difficulty per document, or as normal scores). Per row: the percentile
bootstrap the report used before, scipy's BCa bootstrap (1,000 simulations: it is slow), the paired t-test
and the t-test with the minimum number of documents (4,000 simulations each). Then Holm: 4 exchangeable
systems (6 pairs), 10 documents, normal data: how often some pair is separated without and with it.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats

from scaffold_local.analysis import CONFIDENCE, N_RESAMPLES, holm_adjusted, paired_t_test
from tests.test_analysis import null_differences, null_separation_shares


def bca_share(rng: np.random.Generator, case: str, n: int, simulations: int = 1000) -> float:
    separated = []
    for row in null_differences(rng, case, n, simulations):
        if np.ptp(row) == 0:  # BCa is undefined on a constant sample; a constant non-zero one reads as separated
            separated.append(row[0] != 0)
            continue
        low, high = stats.bootstrap((row,), np.mean, n_resamples=N_RESAMPLES, confidence_level=CONFIDENCE,
                                    method="BCa", random_state=rng).confidence_interval
        separated.append(low > 0 or high < 0)
    return float(np.mean(separated))


def holm_shares(seed: int = 0, systems: int = 4, n: int = 10, simulations: int = 4000) -> tuple[float, float]:
    """Share of simulations in which some pair of exchangeable systems is separated: raw p, Holm's p."""
    rng = np.random.default_rng(seed)
    document = rng.normal(size=(simulations, n, 1))
    scores = document + rng.normal(size=(simulations, n, systems))
    pairs = list(itertools.combinations(range(systems), 2))
    p = np.stack([paired_t_test(scores[..., a] - scores[..., b])[2] for a, b in pairs], axis=1)
    alpha = 1 - CONFIDENCE
    raw = (p < alpha).any(axis=1).mean()
    adjusted = np.mean([min(holm_adjusted(row)) < alpha for row in p])
    return float(raw), float(adjusted)


def main() -> None:
    rng = np.random.default_rng(1)
    print("| null data | documents | percentile bootstrap (before) | BCa bootstrap | paired t | "
          "paired t, at least 6 documents (now) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for case, n, percentile, t, with_minimum in null_separation_shares():
        print(f"| {case} | {n} | {percentile:.1%} | {bca_share(rng, case, n):.1%} | {t:.1%} | {with_minimum:.1%} |")
    raw, adjusted = holm_shares()
    print(f"\nHolm, 4 exchangeable systems (6 pairs), 10 documents, normal data: some pair separated in {raw:.1%} "
          f"of simulations without the adjustment, {adjusted:.1%} with it.")


if __name__ == "__main__":
    main()
