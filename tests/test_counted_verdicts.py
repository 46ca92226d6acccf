"""What `show --summary` and the report print is what the metrics counted: with a threshold that
overrules some of the judge's own answers, every shown verdict recomputes the summary's scores."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from scaffold_local import runs
from scaffold_local.analysis.counted import summary_evidence
from scaffold_local.analysis.items import item_verdicts
from scaffold_local.cli import app

from .helpers import RESPONDER_CONFIG

pytestmark = pytest.mark.usefixtures("wide_console")
runner = CliRunner()


def _run_with_threshold(tmp_path, small_input, version: int, threshold: float):
    config = tmp_path / "thresholded.toml"
    config.write_text(RESPONDER_CONFIG.read_text(encoding="utf-8").replace(
        "method_version = 2", f"verdict_confidence = true\nmethod_version = {version}", 1)
        + f"\n[thresholds.{version}]\nfacts = {threshold}\nquestions = {threshold}\nentities = {threshold}\n"
          f"faithfulness = {threshold}\n", encoding="utf-8")
    result = runner.invoke(app, ["score", str(small_input), "-m", str(config), "--store", str(tmp_path / "store")])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "store" / "runs").iterdir()
    return runs.load(run_dir)


def _share(items, labels=("main point", "supporting detail")):
    counted = [i for i in items if i.label in labels]
    return sum(i.status == "kept" for i in counted) / len(counted) if counted else None


@pytest.mark.parametrize(("version", "threshold"), [(5, 0.995), (7, 0.95)])
def test_every_shown_verdict_is_the_one_the_metrics_counted(tmp_path, small_input, version, threshold):
    run = _run_with_threshold(tmp_path, small_input, version, threshold)
    scores = {(s.doc_id, s.system): s.values for s in run.summaries}
    overruled = written_overruled = 0
    for candidate in run.candidates:
        evidence = summary_evidence(run, candidate)
        said = [(i.id.split(".")[0], i.justification) for i in evidence.items if i.view == "entities" and i.justification]
        assert len(said) == len(set(said))  # an entity's one justification is shown once, not on every attribute
        for item in evidence.items:  # a missed item cites no sentence: what the judge wrote is said, P decides
            if item.status == "missed" and item.threshold is not None:
                assert not item.cited
                written_overruled += item.justification.startswith("the judge's written answer cited sentence")
        values = scores[candidate["doc_id"], candidate["system"]]
        by_view = {view: [i for i in evidence.items if i.view == view] for view in ("facts", "questions", "entities")}
        assert values["fc"] == pytest.approx(_share(by_view["facts"]))
        assert values["main_fc"] == pytest.approx(_share(by_view["facts"], ("main point",)))
        assert values["qc"] == pytest.approx(_share(by_view["questions"]))
        assert values["eps"] == pytest.approx(_share(by_view["entities"], ("main point", "supporting detail", "other")))
        supported = [s.status == "supported" for s in evidence.sentence_verdicts]
        assert values["f"] == pytest.approx(sum(supported) / len(supported))
        shown = [(i.status == "kept", i.p) for i in evidence.items if i.status in ("kept", "missed")]
        shown += [(s.status == "supported", s.p) for s in evidence.sentence_verdicts]
        for kept, p in shown:
            if p is not None:
                assert kept == (p >= threshold)  # the threshold decides, not the judge's word
                overruled += (p >= 0.5) != (p >= threshold)
    assert overruled > 0  # the threshold changed some verdicts, so a drill-down showing the judge's word would fail
    assert (written_overruled > 0) == (version == 5)  # version 7 reads its verdicts: nothing written to overrule

    # The report's item table counts the same way.
    shown = {(i.doc_id, i.view, i.item_id): i.kept for i in item_verdicts(run)}
    for candidate in run.candidates:
        for item in summary_evidence(run, candidate).items:
            if item.status in ("kept", "missed"):
                assert shown[candidate["doc_id"], item.view, item.id][candidate["system"]] == (item.status == "kept")


def test_show_prints_p_the_threshold_and_what_no_metric_counts(tmp_path, small_input):
    run = _run_with_threshold(tmp_path, small_input, 5, 0.995)
    candidate = run.candidates[0]
    key = f"{candidate['doc_id']}/{candidate['system']}"
    output = runner.invoke(app, ["show", str(run.dir), "--summary", key]).output
    evidence = summary_evidence(run, candidate)
    assert "Facts: kept where P(kept) >= 0.995" in output
    assert "every attribute counts in EPS" in output
    for item in evidence.items:
        row = next(line for line in output.splitlines() if line.startswith(f"│ {item.id} "))
        assert f" {item.status}" in row and (item.p is None or f"{item.p:.3f}" in row)
        if item.expected_answer:
            assert "expected: " in output
    assert "Sentence check (F)" in output and "rationale:" in output
    listing = runner.invoke(app, ["show", str(run.dir)]).output
    assert "documents: " in listing and candidate["doc_id"] in listing  # the ids --summary takes
