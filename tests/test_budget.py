"""A word budget: words counted in any script, compliance per system, every metric within and over
the budget (worked out by hand), in `score`, `show`, `report` and `evaluate`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from scaffold_local import evaluate, runs
from scaffold_local.analysis.budget import OVER, WITHIN, budget_compliance
from scaffold_local.analysis.scores import ScoreTable
from scaffold_local.cli import app
from scaffold_local.errors import UsageError
from scaffold_local.method.text import count_words

from .helpers import RESPONDER_CONFIG, SUMMARIES

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("wide_console")


@pytest.mark.parametrize("text, words", [
    ("The U.S. rose 4.5% on Monday.", 6),  # as str.split counts: English counts as it always did
    ("費用は十億円である。", 9),  # each Han character and kana is a word; the full stop is not
    ("iPhone 15を発売した。", 7),  # "iPhone", then "15" and five characters
    ("أعلن المجلس عن جسر جديد.", 5),
    ("Совет одобрил новый мост.", 4),
    ("", 0),
])
def test_words_are_counted_in_every_script(text, words):
    assert count_words(text) == words


def test_compliance_and_the_means_within_and_over_the_budget_by_hand():
    """2 documents x 2 systems, budget 10. System a: 5 and 12 words, FPS 0.5 and 0.9: within 0.5 (n=1),
    over 0.9 (n=1). System b: 8 and 20 words, FPS 0.4 and undefined: within 0.4, over nothing."""
    table = ScoreTable(["d1", "d2"], ["a", "b"], {"fps": np.array([[0.5, 0.4], [0.9, np.nan]])},
                       words=np.array([[5.0, 8.0], [12.0, 20.0]]))
    budget = budget_compliance(table, 10, ["fps"])
    a, b = budget.systems
    assert (a.within, a.summaries, a.rate, a.mean_words, a.max_words) == (1, 2, 0.5, 8.5, 12)
    assert (b.within, b.summaries, b.rate, b.max_words) == (1, 2, 0.5, 20)
    assert budget.means["fps"]["a"] == {WITHIN: (0.5, 1), OVER: (0.9, 1)}
    assert budget.means["fps"]["b"] == {WITHIN: (0.4, 1), OVER: (None, 0)}
    with pytest.raises(UsageError, match="positive number of words"):
        budget_compliance(table, 0, ["fps"])


def test_score_show_and_report_with_a_word_budget(small_input, tmp_path):
    """Budget 16: brief has 15 words on factory (within) and 17 on library (over); details 30 (over)
    and 8 (within)."""
    assert [count_words(s[3]) for s in SUMMARIES] == [15, 30, 17, 8]
    store = tmp_path / "store"
    result = runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store),
                                 "--word-budget", "16"])
    assert result.exit_code == 0, result.output
    run_dir = next((store / "runs").iterdir())
    fps = {(s.doc_id, s.system): s.values["fps"] for s in runs.load(run_dir).summaries}
    lines = result.output.splitlines()
    assert "word budget: 16 words" in result.output
    assert "1 of 2" in next(line for line in lines if line.startswith("│ within budget"))
    fps_row = next(line for line in lines if line.startswith("│ FPS ") and " / " in line)
    # brief: within = factory, over = library; details: within = library, over = factory
    assert f"{fps['factory', 'brief']:.3f} / {fps['library', 'brief']:.3f}" in fps_row
    assert f"{fps['library', 'details']:.3f} / {fps['factory', 'details']:.3f}" in fps_row

    shown = runner.invoke(app, ["show", str(run_dir)])
    assert shown.exit_code == 0 and "word budget: 16 words" in shown.output

    report = runner.invoke(app, ["report", str(run_dir), "--out", str(tmp_path / "report"), "--word-budget", "20"])
    assert report.exit_code == 0 and "word budget: 20 words" in report.output, report.output
    compliance = json.loads((tmp_path / "report" / "analysis.json").read_text())["budget_compliance"]
    assert {(r["system"], r["within_budget"], r["word_budget"]) for r in compliance} == {("brief", 2, 20), ("details", 1, 20)}
    assert "Word budget: 20 words" in (tmp_path / "report" / "report.html").read_text()


def test_a_run_without_a_budget_shows_none(small_input, tmp_path):
    result = runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(tmp_path)])
    assert result.exit_code == 0 and "word budget" not in result.output


def test_evaluate_returns_the_budget_table(tmp_path):
    records = [{"doc_id": d, "document": text, "system": s, "summary": summary} for d, text, s, summary in SUMMARIES]
    result = evaluate(records, judge=str(RESPONDER_CONFIG), store=tmp_path, word_budget=16, progress=False)
    assert result.budget is not None
    fps = result.budget.set_index(["metric", "system"]).loc["fps"]
    by_summary = result.summaries.set_index(["doc_id", "system"])["fps"]
    assert fps.loc["brief", "within_budget"] == pytest.approx(by_summary["factory", "brief"])
    assert fps.loc["details", "over_budget"] == pytest.approx(by_summary["factory", "details"])
    assert fps.loc["brief", "compliance_rate"] == 0.5
    assert evaluate(records, judge=str(RESPONDER_CONFIG), store=tmp_path, progress=False).budget is None
    assert not math.isnan(fps.loc["details", "within_budget"])
    with pytest.raises(UsageError, match="positive number of words, not 0"):
        evaluate(records, judge=str(RESPONDER_CONFIG), store=tmp_path / "other", word_budget=0, progress=False)
    assert not (tmp_path / "other").exists()  # refused before anything was scored
