"""A run's per-summary metric values as arrays: documents x systems, NaN where undefined."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..method.metrics import DIRECT_SCORE_AXES, METRICS
from ..method.text import count_words
from ..runs.run import Run

# The best value a metric can take: shares reach 1, the direct-score grades 10.
CEILING = {key: (10.0 if key == "ds" or key.removeprefix("ds_") in DIRECT_SCORE_AXES else 1.0) for key in METRICS}
FLOOR = {key: (1.0 if CEILING[key] == 10.0 else 0.0) for key in METRICS}


@dataclass
class ScoreTable:
    documents: list[str]
    systems: list[str]
    values: dict[str, np.ndarray]  # metric -> (documents x systems), NaN where undefined or missing
    reasons: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)  # metric -> (doc, system) -> why
    words: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # summary length in words

    @classmethod
    def from_run(cls, run: Run) -> ScoreTable:
        documents = list(dict.fromkeys(s.doc_id for s in run.summaries))
        systems = [s.system for s in run.systems]
        d_index = {d: i for i, d in enumerate(documents)}
        s_index = {s: j for j, s in enumerate(systems)}
        shape = (len(documents), len(systems))
        values = {key: np.full(shape, np.nan) for key in METRICS}
        reasons: dict[str, dict[tuple[str, str], str]] = {key: {} for key in METRICS}
        for summary in run.summaries:
            i, j = d_index[summary.doc_id], s_index[summary.system]
            for key in METRICS:
                value = summary.values.get(key)
                if value is None:
                    reasons[key][summary.doc_id, summary.system] = summary.undefined.get(key, "undefined")
                else:
                    values[key][i, j] = value
        words = np.full(shape, np.nan)
        for candidate in run.candidates:
            if candidate["doc_id"] in d_index and candidate["system"] in s_index:
                words[d_index[candidate["doc_id"]], s_index[candidate["system"]]] = count_words(candidate["summary"])
        return cls(documents, systems, values, reasons, words)

    def why_missing(self, metric: str, doc: str, system: str) -> str:
        return self.reasons.get(metric, {}).get((doc, system), "no summary")
