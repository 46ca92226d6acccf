"""The notebook API: `evaluate(data)` scores summaries held in memory and returns pandas tables.

    import scaffold_local
    result = scaffold_local.evaluate(df, judge="qwen2.5-coder-1.5b-llama-cpp", store="scaffold_store")
    result.systems      # one row per system: each metric's mean, as `score` prints it
    result.intervals    # one row per (metric, system): the paired mean over documents and its 95% interval
    result.summaries    # one row per summary: every metric, NaN where undefined (`undefined` says why)

`data` is a pandas DataFrame, a `datasets.Dataset` or a list of dicts, one record per summary with the
fields a JSONL input has (`fields` maps other names). It is the `score` command without files: the same
checks (a bad record is skipped and named in `result.issues`), the same store (scaffolds extracted once
per document, judgments cached, a run resumed when the same records come again), the same run folder
(`result.run_dir`, which `show`, `report` and `runs.load` read).
"""

from __future__ import annotations

import contextlib
import math
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import runs
from .analysis.budget import OVER, WITHIN, check_budget, of_run
from .analysis.items import item_verdicts
from .analysis.paired import compare
from .analysis.rankings import side_by_side, three_digits
from .analysis.scores import ScoreTable
from .errors import InputError, UsageError
from .runs import METRICS, FieldMap, InputIssue, LoadedInput, ModelConfig, RunOutcome

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Evaluation:
    run_dir: Path
    summaries: pd.DataFrame
    systems: pd.DataFrame
    intervals: pd.DataFrame
    issues: list[InputIssue]  # records skipped or warned about, each naming its record and field
    outcome: RunOutcome  # what the run did: requests sent and reused, tokens, failures by kind
    # With a word budget: per system and metric, the mean within and over it, and the compliance rate.
    budget: pd.DataFrame | None = None
    # With document groups: one row per (group, member document, system): the group summary's
    # metrics over that member's items.
    members: pd.DataFrame | None = None
    # The systems ranked by grounded pairwise preferences beside FPS, QPS, EPS and DS (show --rankings).
    rankings: pd.DataFrame | None = None

    def __repr__(self) -> str:
        return f"{self.systems.to_string(float_format=lambda v: f'{v:.3f}', na_rep='-')}\nrun folder: {self.run_dir}"

    def _repr_html_(self) -> str:  # a notebook shows the per-system table and where the run is
        return self.systems.to_html(float_format=lambda v: f"{v:.3f}", na_rep="-") + f"<p>run folder: {self.run_dir}</p>"


def evaluate(data: Any, judge: str | ModelConfig | None = None, store: str | Path = "scaffold_store", *,
             fields: FieldMap | None = None, method_version: int | None = None, run_name: str | None = None,
             word_budget: int | None = None, chunk_tokens: int | None = None, pairwise: str | None = None,
             progress: bool = True) -> Evaluation:
    """Score every summary in `data` (a pandas DataFrame, a `datasets.Dataset` or a list of dicts) with
    `judge` (a model config name or path, or a ModelConfig; default: the package's default judge).
    With `word_budget`, `.budget` holds each system's compliance and every metric within and over it;
    records with a `group` field give `.members`; `chunk_tokens` is `score --chunk-tokens`; `pairwise` is
    `score --pairwise` ("all", or a system to compare every other with): the holistic judge's pairwise
    ranking joins `.rankings`, its cost said first as a warning."""
    check_budget(word_budget)  # before anything is scored
    # One source name for all: a DataFrame and a Dataset of the same records are one run.
    loaded = runs.load_records(_records(data), fields)
    pipeline = runs.open_judge(runs.JudgeOptions(model=judge, store=Path(store), method_version=method_version),
                               _progress_bar if progress else runs.no_progress)
    try:
        plan = runs.plan(pipeline, loaded, runs.RunOptions(
            run_name=run_name, word_budget=word_budget, chunk_tokens=chunk_tokens, pairwise=pairwise))
        fitted = plan.loaded
        if plan.nothing_fits:
            raise InputError(runs.no_usable_records(fitted))
        skipped = [issue for issue in fitted.issues if issue.severity == "error"]
        if skipped:  # shown by a notebook; the rest is scored
            warnings.warn(f"{len(skipped)} record(s) not scored, all in result.issues; the first: {skipped[0]}",
                          stacklevel=2)
        for note in [*plan.notes, *filter(None, [plan.first_run_hint()])]:
            warnings.warn(note, stacklevel=2)
        outcome = plan.execute()
    finally:
        pipeline.close()
    return _tables(outcome, fitted)


def _records(data: Any) -> list[Any]:
    """The records of a DataFrame (missing values as None), a Dataset, or a list; anything else is refused."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        frame = data.astype(object)
        return frame.where(frame.notna(), None).to_dict("records")
    datasets = sys.modules.get("datasets")  # a Dataset's owner is imported already: no second of importing it here
    if datasets is not None and isinstance(data, datasets.Dataset):
        return data.to_list()
    if isinstance(data, list | tuple):
        return list(data)
    raise UsageError(f"evaluate() takes a pandas DataFrame, a datasets.Dataset or a list of dicts, not a "
                     f"{type(data).__name__}")


def _tables(outcome: RunOutcome, loaded: LoadedInput) -> Evaluation:
    import pandas as pd

    summaries = pd.DataFrame([{"doc_id": s.doc_id, "system": s.system, "n_sentences": s.n_sentences,
                               **{m: _number(s.values.get(m)) for m in METRICS}, "undefined": s.undefined}
                              for s in outcome.summaries])
    systems = pd.DataFrame([{"system": s.system, "n_summaries": s.n_summaries,
                             **{m: _number(s.metrics[m].mean) if m in s.metrics else math.nan for m in METRICS}}
                            for s in outcome.systems]).set_index("system")
    run = runs.load(outcome.run_dir)
    table = ScoreTable.from_run(run)
    rows = []
    comparisons = {metric: compare(table, metric) for metric in METRICS}
    for metric, comparison in comparisons.items():
        rows += [{"metric": metric, "system": m.system, "mean": m.mean, "low": _number(m.low), "high": _number(m.high),
                  "documents": len(comparison.documents)} for m in comparison.means]
    intervals = pd.DataFrame(rows, columns=["metric", "system", "mean", "low", "high", "documents"])
    compliance = of_run(run)
    budget = None if compliance is None else pd.DataFrame(
        [{"metric": metric, "system": s.system, "within_budget": _number(groups[WITHIN][0]),
          "over_budget": _number(groups[OVER][0]), "compliance_rate": s.rate}
         for metric, by_system in compliance.means.items() for s in compliance.systems
         for groups in [by_system[s.system]]])
    members = pd.DataFrame([{"group": r["group"], "member": r["doc_id"], "system": r["system"],
                             **{m: _number(v) for m, v in r["values"].items()}} for r in run.member_scores]
                           ) if run.member_scores else None
    rankings = pd.DataFrame([{"ranked_by": r.name, "order": r.ordered(three_digits),
                              "pairs_separated": r.pairs_separated, "pairs": r.pairs, "not_assessed": r.not_assessed,
                              "kendall_tau_with_grounded": _number(r.tau_with_grounded), "note": r.note}
                             for r in side_by_side(comparisons, item_verdicts(run), table.systems,
                                                   holistic=run.holistic_pairs)])
    return Evaluation(outcome.run_dir, summaries, systems, intervals, loaded.issues, outcome, budget, members, rankings)


def _number(value: float | None) -> float:
    return math.nan if value is None else value


@contextlib.contextmanager
def _progress_bar(label: str, total: int) -> Iterator[Callable[..., None]]:
    """A tqdm widget in a notebook with ipywidgets, a text bar elsewhere (tqdm.auto would warn without them)."""
    try:
        import ipywidgets  # noqa: F401
        from tqdm.auto import tqdm
    except ImportError:
        from tqdm import tqdm

    with tqdm(total=total, desc=label) as bar:
        def advance(n: int, detail: str = "") -> None:
            bar.update(n)
            if detail:
                bar.set_postfix_str(detail)
        yield advance

