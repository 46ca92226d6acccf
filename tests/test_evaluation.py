"""The notebook API: `evaluate()` on a DataFrame, a Dataset and a list of dicts gives what `score` gives
on the same records in a file, as pandas tables; bad records are named and skipped, not fatal."""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest
from datasets import Dataset

import scaffold_local
from scaffold_local import Pipeline, load_input
from scaffold_local.errors import InputError, UsageError

from .helpers import RESPONDER_CONFIG, SUMMARIES

RECORDS = [{"doc_id": d, "document": text, "system": s, "summary": summary} for d, text, s, summary in SUMMARIES]


def _evaluate(data, store):
    return scaffold_local.evaluate(data, judge=str(RESPONDER_CONFIG), store=store, progress=False)


def test_a_dataframe_a_dataset_and_a_list_give_what_score_gives_on_a_file(small_input, responder_config, tmp_path):
    from_file = Pipeline(responder_config, tmp_path / "file-store").score(load_input(small_input))
    expected = {(s.doc_id, s.system): s.values for s in from_file.summaries}

    frame = _evaluate(pd.DataFrame(RECORDS), tmp_path / "store")
    assert frame.outcome.requests_sent > 0
    for row in frame.summaries.to_dict("records"):
        values = expected[row["doc_id"], row["system"]]
        assert {m: row[m] for m in values if values[m] is not None} == {m: v for m, v in values.items() if v is not None}
        assert all(math.isnan(row[m]) for m, v in values.items() if v is None)
    # By hand (tests/helpers.py): factory/brief keeps the 2 main facts of 4 main + supporting: FC 0.5;
    # library/details keeps the 1 supporting fact of 3: FC 1/3.
    fc = frame.summaries.set_index(["doc_id", "system"])["fc"]
    assert fc["factory", "brief"] == 0.5 and fc["library", "details"] == pytest.approx(1 / 3)
    assert frame.systems.loc["brief", "fps"] == pytest.approx(
        sum(expected[d, "brief"]["fps"] for d in ("factory", "library")) / 2)
    assert list(frame.systems.index) == ["brief", "details"] and set(frame.systems["n_summaries"]) == {2}

    for again in (_evaluate(Dataset.from_list(RECORDS), tmp_path / "store"), _evaluate(RECORDS, tmp_path / "store")):
        assert again.run_dir == frame.run_dir and again.outcome.requests_sent == 0  # the same records: the same run
        pd.testing.assert_frame_equal(again.summaries, frame.summaries)


def test_intervals_are_over_documents_and_hold_the_mean(tmp_path):
    result = _evaluate(RECORDS, tmp_path / "store")
    fps = result.intervals[result.intervals["metric"] == "fps"].set_index("system")
    assert set(fps.index) == {"brief", "details"} and set(fps["documents"]) == {2}
    assert ((fps["low"] <= fps["mean"]) & (fps["mean"] <= fps["high"])).all()
    assert fps.loc["brief", "mean"] == pytest.approx(result.systems.loc["brief", "fps"])  # every document paired
    assert "brief" in result._repr_html_() and str(result.run_dir) in repr(result)
    rankings = result.rankings.set_index("ranked_by")
    assert rankings.loc["grounded pairwise", "order"].startswith("brief ")  # it keeps the main facts details misses
    assert rankings.loc["fps", "order"] == "brief 1.000 > details 0.000"
    assert rankings.loc["fps", "kendall_tau_with_grounded"] == 1.0


def test_a_bad_record_is_named_and_skipped_and_the_rest_is_scored(tmp_path):
    frame = pd.DataFrame([*RECORDS, {"doc_id": "factory", "document": RECORDS[0]["document"], "system": "empty",
                                     "summary": None}])
    with pytest.warns(UserWarning, match=f"1 record\\(s\\) not scored.*record {len(RECORDS) + 1}"):
        result = _evaluate(frame, tmp_path / "store")
    assert len(result.summaries) == len(RECORDS)
    [issue] = [i for i in result.issues if i.severity == "error"]
    assert (issue.record, issue.field) == (len(RECORDS) + 1, "summary") and "record skipped" in issue.message


def test_data_that_cannot_be_scored_is_refused_with_the_reason(tmp_path):
    with pytest.raises(UsageError, match="not a str"):
        _evaluate("input.jsonl", tmp_path / "store")
    with pytest.raises(InputError, match="no usable records.*summary"):
        _evaluate([{"document": "A text.", "system": "a"}], tmp_path / "store")
    with pytest.raises(InputError, match="no usable records"):
        _evaluate(["not a record"], tmp_path / "store")


def test_a_notebook_hears_of_the_judge_check_on_a_judges_first_run_in_a_store_only(tmp_path):
    with pytest.warns(UserWarning, match="first run with judge responder in this store.*check-judge -m responder"):
        _evaluate(RECORDS, tmp_path / "store")
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        _evaluate(RECORDS, tmp_path / "store")
    assert not [w for w in heard if "first run with judge" in str(w.message)]
