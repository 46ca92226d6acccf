"""`report` and `compare`: the analysis tables on disk, judge comparisons and self-consistency over
the responder, and the HTML report of a real run rendered in headless Chromium."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold_local import runs
from scaffold_local.analysis.items import item_verdicts
from scaffold_local.cli import app

from .helpers import EXAMPLES, FACTORY, LIBRARY, RESPONDER_CONFIG, failure_message, write_jsonl

runner = CliRunner()
HOSTILE_SYSTEM = "<script>alert('system')</script>"
HOSTILE_SUMMARY = "<script>document.title='pwned'</script> The factory employs 200 local workers."


def _second_judge(tmp_path: Path) -> Path:
    path = tmp_path / "responder-b.toml"
    path.write_text(f'extends = "{RESPONDER_CONFIG}"\nname = "responder-b"\ntemperature = 0.5\nseed = 11\n', encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    from scaffold_local import cli

    monkeypatch.setattr(cli.console, "width", 220)
    monkeypatch.setattr(cli.err, "width", 220)


def test_report_writes_every_table_as_json_csv_and_parquet(small_input, tmp_path):
    store = tmp_path / "store"
    assert runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store)]).exit_code == 0
    run_dir = next((store / "runs").iterdir())
    result = runner.invoke(app, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    out = run_dir / "report"
    tables = json.loads((out / "analysis.json").read_text())
    for name in ("system_means", "pair_differences", "rank_stability", "resolving_power", "metric_correlations",
                 "leaders", "missed_items", "length_correlation", "length_by_system", "rankings"):
        assert (out / f"{name}.csv").is_file() and (out / f"{name}.parquet").is_file(), name
    fps = {r["system"]: r for r in tables["system_means"] if r["metric"] == "fps"}
    assert fps["brief"]["paired_mean"] == pytest.approx(1.0) and fps["details"]["paired_mean"] == pytest.approx(0.0)
    assert fps["brief"]["documents"] == 2 and fps["brief"]["documents_left_out"] == 0
    # brief keeps every main fact and details none, on both documents: too few to call separated
    fps_pairs = [r for r in tables["pair_differences"] if r["metric"] == "fps" and {r["a"], r["b"]} == {"brief", "details"}]
    assert fps_pairs and abs(fps_pairs[0]["difference"]) == pytest.approx(1.0)
    assert not fps_pairs[0]["separated"] and fps_pairs[0]["not_assessed"].startswith("fewer than 6 documents: ")
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/svg+xml;base64,') >= 4 and "<script" not in page and "http" not in page.split("<body>")[1]
    assert "Not assessed: fewer than 6 documents: " in page and "No pair of systems can be tested" in page
    assert "Holm-adjusted over the" not in page  # no table of pairs that are all "not assessed"
    takeaway = page.split('<div class="takeaway"')[1].split("</div>")[0]
    assert "brief leads on FPS (1.000, details next at 0.000): not assessed: 2 documents" in takeaway
    assert "2 documents; FPS and Main FC rest on" in takeaway  # the caveat
    ranked = page.split('<table class="ranked">')[1].split("</table>")[0]
    assert ranked.index(">brief</a>") < ranked.index(">details</a>")  # best first
    assert '<th>documents left out</th>' not in ranked  # no column of zeros
    # Supp FC is a diagnostic: no best marked on it; the takeaway's bests are goal metrics only; two documents
    # are too few to tell systems apart, so no interval is drawn
    rows = {row.split("</td>")[0]: row for row in ranked.split("<tr><td>")[1:]}
    assert "*</b>" in rows["FPS"] and "*</b>" not in rows["Supp FC"]
    best = takeaway.split("Best per goal metric: ")[1].split("</p>")[0]
    assert best.startswith("FPS brief;") and not any(name in best for name in ("Supp FC", "Main FC", "Fact Focus", "ROUGE"))
    assert '<span class="note">[' not in ranked and "Intervals are left out where fewer than 6 documents" in page
    # brief is preferred to details on both documents (it keeps the main facts details misses)
    grounded = next(r for r in tables["rankings"] if r["ranked_by"] == "grounded pairwise")
    assert grounded["order"].startswith("brief") and grounded["not_assessed"] == "fewer than 6 documents"
    assert "Rankings side by side: grounded pairwise" in page

    unfinished = tmp_path / "store" / "runs" / "nothing"
    unfinished.mkdir()
    refused = runner.invoke(app, ["report", str(unfinished)])
    assert refused.exit_code == 2 and "not a run folder" in refused.output


def test_compare_two_judges_on_a_shared_scaffold_and_on_their_own(small_input, tmp_path):
    judge_b = _second_judge(tmp_path)
    args = ["compare", str(small_input), "-m", str(RESPONDER_CONFIG), "-m", str(judge_b), "--store", str(tmp_path / "store")]
    shared = runner.invoke(app, [*args, "--out", str(tmp_path / "shared")])
    assert shared.exit_code == 0, shared.output
    tables = json.loads((tmp_path / "shared" / "analysis.json").read_text())
    agreement = {(r["view"], r["label"]): r for r in tables["judge_agreement"]}
    assert set(agreement) >= {("facts", "main point"), ("facts", "supporting detail"), ("questions", "main point")}
    # judge B samples at temperature 0.5: its fact and question verdicts flip about one in four times
    disagreements = tables["judge_disagreements"]
    flipped = {(r["doc_id"], r["system"], r["item_id"]) for r in disagreements}
    assert disagreements and all(r["view"] in ("facts", "questions") for r in disagreements)
    facts = agreement["facts", "main point"]
    assert facts["percent"] < 1 and facts["items"] == 8  # 2 main facts x 4 summaries, judged by both
    run_a, run_b = (runs.load(line.split("run: ", 1)[1].strip()) for line in shared.output.splitlines()
                    if line.startswith("run: "))
    assert run_b.spec.scaffold_source.kind == "run" and run_b.spec.scaffold_keys == run_a.spec.scaffold_keys
    by_a = {(i.doc_id, s, i.item_id): k for i in item_verdicts(run_a) for s, k in i.kept.items()}
    by_b = {(i.doc_id, s, i.item_id): k for i in item_verdicts(run_b) for s, k in i.kept.items()}
    assert flipped == {key for key in by_a if by_a[key] != by_b[key]}  # exactly the items that differ
    costs = {r["judge"]: r for r in tables["judge_cost"]}
    assert set(costs) == {"responder", "responder-b"} and costs["responder"]["summaries"] == 4

    own = runner.invoke(app, [*args, "--own-scaffolds", "--out", str(tmp_path / "own")])
    assert own.exit_code == 0, own.output
    own_tables = json.loads((tmp_path / "own" / "analysis.json").read_text())
    assert "judge_agreement" in own_tables and own_tables["judge_agreement"] == []  # no shared items
    assert {r["metric"] for r in own_tables["judge_ranking_tau"]} >= {"fps", "qc"}
    page = (tmp_path / "own" / "report.html").read_text()
    assert "each judge used its own scaffolds" in page


def test_self_consistency_of_one_judge_over_seeds(small_input, tmp_path):
    result = runner.invoke(app, ["compare", str(small_input), "-m", str(RESPONDER_CONFIG), "--seeds", "3",
                                 "--temperature", "0.7", "--store", str(tmp_path / "store"), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    run_dirs = [line.split("run: ", 1)[1].strip() for line in result.output.splitlines() if line.startswith("run: ")]
    assert len(run_dirs) == 3
    tables = json.loads((tmp_path / "r" / "analysis.json").read_text())
    flips = {r["view"]: r["flip_rate"] for r in tables["self_consistency_flips"]}
    verdicts = [{(i.doc_id, s, i.view, i.item_id): k for i in item_verdicts(runs.load(d)) for s, k in i.kept.items()}
                for d in run_dirs]
    for view in ("facts", "questions"):
        keys = [k for k in verdicts[0] if k[2] == view]
        expected = sum(len({v[k] for v in verdicts}) > 1 for k in keys) / len(keys)
        assert flips[view] == pytest.approx(expected) and expected > 0
    assert flips["entities"] == 0.0  # the responder's noise touches facts and questions only
    spreads = [r for r in tables["self_consistency_spread"] if r["metric"] == "fc"]
    assert len(spreads) == 2 and any(r["spread_of_mean"] > 0 for r in spreads)


def test_compare_needs_two_judges_or_seeds(small_input, tmp_path):
    one = runner.invoke(app, ["compare", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(tmp_path)])
    assert one.exit_code == 2 and "two or more --model judges" in one.output
    greedy = runner.invoke(app, ["compare", str(small_input), "-m", str(RESPONDER_CONFIG), "--seeds", "2",
                                 "--temperature", "0", "--store", str(tmp_path)])
    assert greedy.exit_code == 2 and "temperature above 0" in greedy.output


# ---------------------------------------------------------------- the page in a real browser


def render(page: Path, screenshot: Path) -> dict:
    """Open the page in headless Chromium (Debian's), offline; what a reader would see."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--no-first-run", "--disable-sync"])
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            messages: list[str] = []
            tab.on("console", lambda m: messages.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
            tab.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
            requests: list[str] = []
            tab.on("request", lambda r: requests.append(r.url))
            tab.goto(page.as_uri())
            tab.screenshot(path=str(screenshot), full_page=True)
            return {
                # what the first screen (1280 x 900) shows without scrolling
                "first_screen": tab.evaluate("""['.takeaway', 'table.ranked'].map(s => {
                    const e = document.querySelector(s); return e !== null && e.getBoundingClientRect().top < 900; })"""),
                "console": messages,
                "requests": [u for u in requests if not u.startswith(("file:", "data:"))],
                "images": tab.evaluate("Array.from(document.images).map(i => [i.id, i.complete && i.naturalWidth > 0])"),
                "scripts": tab.evaluate("document.scripts.length"),
                "title": tab.title(),
                "text": tab.inner_text("body"),
            }
        finally:
            browser.close()


@pytest.mark.real_model
def test_report_of_a_real_run_renders_offline_in_chromium(tmp_path):
    """The embedded model on two documents of the example data, plus a system whose name and summary
    carry script tags (two documents, so that every interval and plot has something to show)."""
    rows = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
    first_two = list(dict.fromkeys(r["doc_id"] for r in rows))[:2]
    rows = [r for r in rows if r["doc_id"] in first_two]
    rows += [{**next(r for r in rows if r["doc_id"] == d), "system": HOSTILE_SYSTEM, "summary": HOSTILE_SUMMARY}
             for d in first_two]
    data = write_jsonl(tmp_path / "news-hostile.jsonl", rows)
    store = tmp_path / "store"
    scored = subprocess.run([sys.executable, "-m", "scaffold_local.cli", "score", str(data), "-m", "smollm2-135m-llama-cpp",
                             "--store", str(store), "--allow-partial"],
                            capture_output=True, text=True, timeout=1200, env={**os.environ})
    assert scored.returncode == 0, failure_message(scored.stderr)
    run_dir = next((store / "runs").iterdir())
    result = runner.invoke(app, ["report", str(run_dir), "--out", str(tmp_path / "report")])
    assert result.exit_code == 0, result.output
    shown = render(tmp_path / "report" / "report.html", tmp_path / "report.png")
    assert shown["console"] == [] and shown["requests"] == []
    assert dict(shown["images"]) == {"plot-means": True, "plot-spread": True, "plot-heatmap": True, "plot-length": True}
    assert shown["scripts"] == 0 and shown["title"].startswith("scaffold_local report")  # nothing injected ran
    assert HOSTILE_SYSTEM in shown["text"]  # shown as text, escaped
    assert (tmp_path / "report.png").stat().st_size > 50_000


def test_the_reports_first_screen_shows_the_takeaway_and_the_ranked_table(small_input, tmp_path):
    store = tmp_path / "store"
    assert runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store)]).exit_code == 0
    run_dir = next((store / "runs").iterdir())
    assert runner.invoke(app, ["report", str(run_dir), "--out", str(tmp_path / "report")]).exit_code == 0
    shown = render(tmp_path / "report" / "report.html", tmp_path / "report.png")
    assert shown["first_screen"] == [True, True] and shown["console"] == [] and shown["requests"] == []
    assert "brief leads on FPS" in shown["text"].split("Systems ranked by FPS")[0]


def test_both_means_are_named_where_they_differ_and_the_page_prints_its_seed(tmp_path):
    """System a has no FC on the library document (its judgments there are invalid): over all
    summaries b leads FC (0.625 > 0.5), over the one document both have a leads (0.5 > 0.25). Every
    place that prints a mean names which one it is, and systems.csv says why a summary was left out."""
    rows = [
        {"doc_id": "factory", "document": FACTORY, "system": "a",  # F1, F2 of 4 scored facts
         "summary": "Alpha Corp opened a factory in Denton on Monday. The factory employs 200 local workers."},
        {"doc_id": "factory", "document": FACTORY, "system": "b", "summary": "The plant cost 50 million dollars to build."},
        {"doc_id": "library", "document": LIBRARY, "system": "a",
         "summary": "[[responder:invalid]] The Oakvale library now lends bicycles to members."},
        {"doc_id": "library", "document": LIBRARY, "system": "b",  # all 3 scored facts
         "summary": "The Oakvale library now lends bicycles to members. Each member may borrow a bicycle for seven days. "
                    "The bicycles were donated by Oakvale Cycling Club."},
    ]
    store = tmp_path / "store"
    scored = runner.invoke(app, ["score", str(write_jsonl(tmp_path / "in.jsonl", rows)), "-m", str(RESPONDER_CONFIG),
                                 "--store", str(store)])
    assert scored.exit_code == 3 and "partial run: " in scored.output, scored.output  # a validation failure
    run_dir = next((store / "runs").iterdir())
    shown = runner.invoke(app, ["show", str(run_dir)])
    for output in (scored.output, shown.output):
        fc_all = next(line for line in output.splitlines() if "│ FC: mean over all summaries" in line)
        fc_paired = next(line for line in output.splitlines() if "│ FC: paired mean over 1 document" in line)
        assert "0.500 (1 excl.)" in fc_all and "0.625" in fc_all
        assert "0.500" in fc_paired and "0.250" in fc_paired

    with (run_dir / "systems.csv").open(encoding="utf-8") as handle:
        systems = {row["system"]: row for row in csv.DictReader(handle)}
    assert float(systems["a"]["fc"]) == 0.5 and float(systems["b"]["fc"]) == 0.625
    assert float(systems["a"]["fc_paired"]) == 0.5 and float(systems["b"]["fc_paired"]) == 0.25
    assert systems["a"]["fc_paired_documents"] == "1" and systems["a"]["fc_excluded"] == "1"
    (reason, count), = json.loads(systems["a"]["fc_excluded_reasons"]).items()
    assert reason.startswith("fact alignment failed: not valid JSON") and count == 1
    (reason, count), = json.loads(systems["b"]["fc_paired_left_out"]).items()
    assert reason.startswith("no value for a (fact alignment failed: not valid JSON") and count == 1
    assert json.loads(systems["b"]["fc_excluded_reasons"]) == {} and json.loads(systems["a"]["fc_paired_left_out"]) == {}
    saved = {s["system"]: s["metrics"]["fc"] for s in json.loads((run_dir / "systems.json").read_text())}
    assert saved["b"]["paired_mean"] == 0.25 and saved["b"]["mean"] == 0.625

    reported = runner.invoke(app, ["report", str(run_dir), "--seed", "7"])
    assert reported.exit_code == 0, reported.output
    page = (run_dir / "report" / "report.html").read_text()
    assert "seed 7" in page and "seed 0" not in page
    assert "paired mean over the 1 document every system has a value for" in " ".join(page.split())
    assert "mean over all summaries 0.625" in page
    tables = json.loads((run_dir / "report" / "analysis.json").read_text())
    fc = {r["system"]: r for r in tables["system_means"] if r["metric"] == "fc"}
    assert (fc["a"]["paired_mean"], fc["b"]["paired_mean"]) == (0.5, 0.25)  # the numbers systems.csv holds
    assert (fc["a"]["mean_over_all_summaries"], fc["b"]["mean_over_all_summaries"]) == (0.5, 0.625)


def test_two_judges_compared_on_the_same_summaries_in_jsonl_and_in_csv(small_input, tmp_path):
    """Runs are compared by what they scored, the (document, system, summary) triples, not by the file's bytes:
    the same summaries as JSONL and as CSV compare; a run over other summaries does not."""
    rows = [json.loads(line) for line in small_input.read_text(encoding="utf-8").splitlines()]
    as_csv = tmp_path / "small.csv"
    with as_csv.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    other = write_jsonl(tmp_path / "other.jsonl", [{**rows[0], "summary": "Another summary entirely."}])
    store = tmp_path / "store"
    run_dirs = []
    for path, judge in ((small_input, RESPONDER_CONFIG), (as_csv, _second_judge(tmp_path)), (other, RESPONDER_CONFIG)):
        scored = runner.invoke(app, ["score", str(path), "-m", str(judge), "--store", str(store), "--json"])
        assert scored.exit_code == 0, scored.output
        run_dirs.append(max((store / "runs").iterdir(), key=lambda d: d.stat().st_mtime_ns))
    same = runner.invoke(app, ["report", str(run_dirs[0]), str(run_dirs[1]), "--out", str(tmp_path / "same")])
    assert same.exit_code == 0 and "score different summaries" not in same.output, same.output
    tables = json.loads((tmp_path / "same" / "analysis.json").read_text())
    assert {r["judge"] for r in tables["judge_cost"]} == {"responder", "responder-b"}
    different = runner.invoke(app, ["report", str(run_dirs[0]), str(run_dirs[2]), "--out", str(tmp_path / "other")])
    assert different.exit_code == 0, different.output
    assert "the runs score different summaries" in (tmp_path / "other" / "report.html").read_text(encoding="utf-8")
    assert "score different summaries" not in (tmp_path / "same" / "report.html").read_text(encoding="utf-8")
