"""Decisions from stored runs: paired system comparisons with bootstrap intervals, resolving power
per metric, agreement between metrics, item drill-down, length effects, and judge comparison.

Everything here reads runs (`scaffold_local.runs.run`) and computes with numpy, scipy, scikit-learn
and krippendorff; nothing calls an engine. Results are plain dataclasses, turned into tables and
the HTML report by `scaffold_local.report`.
"""

from .judges import JudgeComparison
from .paired import CONFIDENCE, N_RESAMPLES, MetricComparison, compare, holm_adjusted, paired_t_test
from .rankings import RankingRow, rankings_of
from .run_analysis import MultiRunAnalysis, RunAnalysis, analyze_runs
from .scores import ScoreTable

__all__ = [
    "CONFIDENCE", "JudgeComparison", "MetricComparison", "MultiRunAnalysis", "N_RESAMPLES", "RankingRow", "RunAnalysis",
    "ScoreTable", "analyze_runs", "compare", "holm_adjusted", "paired_t_test", "rankings_of",
]
