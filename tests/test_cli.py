"""The command line over the responder backend, and the promise that start-up stays light."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from scaffold_local.cli import app
from scaffold_local.method.versions import METHOD_VERSIONS

from .helpers import RESPONDER_CONFIG, write_jsonl

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("wide_console")


def test_score_then_show_table_and_evidence(small_input, tmp_path):
    store = tmp_path / "store"
    result = runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert "FPS" in result.output and "brief" in result.output and "details" in result.output
    run_dir = next((store / "runs").iterdir())
    systems = json.loads((run_dir / "systems.json").read_text())
    assert {s["system"] for s in systems} == {"brief", "details"}

    again = runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store)])
    assert again.exit_code == 0 and "20 reused" in again.output and "0 sent" in again.output

    table = runner.invoke(app, ["show", str(run_dir)])
    assert table.exit_code == 0 and "Fact Focus" in table.output

    evidence = runner.invoke(app, ["show", str(run_dir), "--summary", "factory/details"])
    assert evidence.exit_code == 0, evidence.output
    lines = evidence.output.splitlines()
    f2 = next(line for line in lines if "│ F2 " in line)  # the missed main fact, with the judge's justification
    assert "main point" in f2 and "missed" in f2 and "no sentence matches" in f2
    f1 = next(line for line in lines if "│ F1 " in line)
    assert "kept" in f1 and "│ 1 " in f1 and "matched sentences [1]" in f1

    unknown = runner.invoke(app, ["show", str(run_dir), "--summary", "factory/nobody"])
    assert unknown.exit_code == 2 and "no summary 'factory/nobody'" in unknown.output


def test_extract_prints_scaffold_counts(small_input, tmp_path):
    result = runner.invoke(app, ["extract", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(tmp_path)],
                           terminal_width=200)
    assert result.exit_code == 0, result.output
    factory_row = next(line for line in result.output.splitlines() if "factory" in line)
    assert "2/2/1" in factory_row  # facts: main/supporting/other


def test_clear_errors_for_bad_arguments(tmp_path):
    missing = runner.invoke(app, ["score", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "input not found" in missing.output
    (tmp_path / "in.jsonl").write_text('{"document": "a.", "summary": "b.", "system": "s"}\n')
    bad_model = runner.invoke(app, ["score", str(tmp_path / "in.jsonl"), "-m", "no-such-model"])
    assert bad_model.exit_code == 2 and "model config 'no-such-model' not found" in bad_model.output


def test_score_and_show_under_the_one_item_per_request_version(small_input, tmp_path):
    """The command as a user runs it under method v5 (the CPU judge's version): the up-front context
    check renders v5's per-sentence template too, and the run says how verdicts were decided."""
    store = tmp_path / "store"
    result = runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store),
                                 "--method-version", "5"])
    assert result.exit_code == 0, result.output
    assert "method version 5; verdicts: the judge's word" in result.output.replace("\n", "")
    run_dir = next((store / "runs").iterdir())
    shown = runner.invoke(app, ["show", str(run_dir)])
    assert shown.exit_code == 0 and "method version 5;" in shown.output


def test_models_lists_the_embedded_default():
    result = runner.invoke(app, ["models"])
    assert result.exit_code == 0 and "qwen2.5-coder-1.5b-llama-cpp (default)" in result.output


def test_import_and_help_do_not_load_engines():
    code = (
        "import sys, scaffold_local, scaffold_local.cli, scaffold_local.runs.pipeline;"
        "heavy = [m for m in ('torch', 'transformers', 'outlines', 'vllm', 'httpx', 'openai') if m in sys.modules];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_method_versions_share_a_store_and_show_names_the_version(small_input, tmp_path):
    store = tmp_path / "store"
    args = ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store)]
    v1 = runner.invoke(app, [*args, "--method-version", "1"])
    v2 = runner.invoke(app, args)
    assert v1.exit_code == 0 and v2.exit_code == 0, v1.output + v2.output
    assert "method version 1" in v1.output and "method version 2" in v2.output
    assert "scaffolds: 2 extracted, 0 reused" in v2.output  # v2 prompts and schemas: new scaffolds; v1's stay
    runs = {json.loads((d / "spec.json").read_text())["method"]["number"]: d for d in (store / "runs").iterdir()}
    assert sorted(runs) == [1, 2]
    for number, run_dir in runs.items():
        shown = runner.invoke(app, ["show", str(run_dir)])
        assert shown.exit_code == 0 and f"method version {number};" in shown.output

    # A run written before method versions were recorded reads as version 1.
    spec_path = runs[1] / "spec.json"
    spec = json.loads(spec_path.read_text())
    del spec["method"]
    spec_path.write_text(json.dumps(spec))
    assert "method version 1;" in runner.invoke(app, ["show", str(runs[1])]).output

    newest = max(METHOD_VERSIONS)
    unknown = runner.invoke(app, [*args, "--method-version", str(newest + 1)])
    known = ", ".join(map(str, METHOD_VERSIONS))  # 11 was never offered (docs, "tried on dev documents")
    assert unknown.exit_code == 2 and f"unknown method version {newest + 1} (known: {known})" in unknown.output


def test_direct_scores_on_the_papers_0_1_scale(small_input, tmp_path):
    args = ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(tmp_path)]
    tens, ones = runner.invoke(app, args), runner.invoke(app, [*args, "--ds-scale", "1"])
    ds_row = lambda output: next(line for line in output.splitlines() if re.match(r"│ DS( /10)? +│", line))  # noqa: E731
    assert "9.50" in ds_row(tens.output)  # brief: (10 + 10 + 8 + 10) / 4
    assert "DS /10" in ds_row(ones.output) and "0.950" in ds_row(ones.output)
    assert runner.invoke(app, [*args, "--ds-scale", "5"]).exit_code == 2


def test_a_run_with_failures_is_partial_names_them_and_exits_3(tmp_path):
    """Failures change the status and the exit code: the run is `partial` in its spec and in `show`, lists every
    failure (document, system, kind, item, class, reason) in failures.jsonl, names the first few on the console and
    exits 3; --allow-partial exits 0; a rerun sends again only what a passing cause failed."""
    from .helpers import FACTORY

    rows = [{"doc_id": "factory", "document": FACTORY, "system": "bad", "summary": "A factory. [[responder:invalid]]"},
            {"doc_id": "factory", "document": FACTORY, "system": "down", "summary": "A factory. [[responder:error]]"},
            {"doc_id": "factory", "document": FACTORY, "system": "good", "summary": "Alpha Corp opened a factory."}]
    args = ["score", str(write_jsonl(tmp_path / "in.jsonl", rows)), "-m", str(RESPONDER_CONFIG), "--store", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 3, result.output
    assert "failed judgments (kept with their raw text, never counted): engine_crash 5, validation 5." in result.output
    assert "Sent again on the next run: engine_crash;" in result.output
    said = result.output.replace("\n", " ")
    assert "partial run: 10 failures (status partial); the first: factory/bad: facts: validation" in said
    run_dir = next((tmp_path / "runs").iterdir())
    listed = [json.loads(line) for line in (run_dir / "failures.jsonl").read_text().splitlines()]
    assert {(r["system"], r["kind"], r["failure"]) for r in listed} == {
        ("bad", kind, "validation") for kind in ("facts", "questions", "entities", "faithfulness", "direct_score")} | {
        ("down", kind, "engine_crash") for kind in ("facts", "questions", "entities", "faithfulness", "direct_score")}
    assert json.loads((run_dir / "spec.json").read_text())["status"] == "partial"
    assert "status: partial" in runner.invoke(app, ["show", str(run_dir)]).output
    again = runner.invoke(app, [*args, "--allow-partial"])
    assert again.exit_code == 0 and "judgments: 5 sent, 10 reused" in again.output  # the crashed ones only


def test_score_completes_on_japanese_documents(tmp_path):
    """Japanese has no capitalised names and no spaces: the responder still builds entities with
    attributes (a run of Han characters is a word) and aligns by characters, so the run completes
    with the values a reader expects."""
    document = "東京都は月曜日に新しい図書館を開いた。図書館には三万冊の本がある。入館は無料である。"
    rows = [{"doc_id": "tokyo", "document": document, "system": "first", "summary": "東京都は月曜日に新しい図書館を開いた。"},
            {"doc_id": "tokyo", "document": document, "system": "rest",
             "summary": "図書館には三万冊の本がある。入館は無料である。"},
            {"doc_id": "mixed", "document": "The Oakvale library opened. 図書館は無料である。", "system": "first",
             "summary": "The Oakvale library opened."}]
    path = tmp_path / "ja.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    result = runner.invoke(app, ["score", str(path), "-m", str(RESPONDER_CONFIG), "--store", str(tmp_path / "store")])
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "store" / "runs").iterdir())
    scores = {(s["doc_id"], s["system"]): s for s in map(json.loads, (run_dir / "summaries.jsonl").read_text().splitlines())}
    first, rest = scores["tokyo", "first"]["values"], scores["tokyo", "rest"]["values"]
    # facts: F1, F2 main, F3 supporting; "first" keeps F1, "rest" keeps F2 and F3; every sentence is in the document
    assert (first["main_fc"], first["supp_fc"], first["fps"], first["f"], first["fact_focus"]) == (0.5, 0.0, 0.5, 1.0, 1.0)
    assert (rest["main_fc"], rest["supp_fc"], rest["fps"], rest["f"], rest["fact_focus"]) == (0.5, 1.0, 0.0, 1.0, 1.0)
    assert first["eps"] == 1.0 and rest["eps"] == 0.0  # the entity 東京都 (one attribute) is named by "first" only


def test_every_public_error_is_one_class_of_errors_py_under_one_root():
    import importlib
    import inspect
    import pkgutil

    import scaffold_local
    from scaffold_local import errors

    heavy = {"scaffold_local.backends.vllm", "scaffold_local.backends.transformers", "scaffold_local.backends.ray_data"}
    found = {}
    for module_info in pkgutil.walk_packages(scaffold_local.__path__, "scaffold_local."):
        if module_info.name in heavy or module_info.name.endswith("__main__"):
            continue
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and not name.startswith("_"):
                found[name] = value
    ours = {name: cls for name, cls in found.items() if cls.__module__.startswith("scaffold_local")}
    assert {cls.__module__ for cls in ours.values()} == {"scaffold_local.errors"}
    assert all(issubclass(cls, errors.ScaffoldLocalError) and cls.exit_code in (1, 2) for cls in ours.values())
    assert {"BackendError", "ConfigError", "InputError", "RunNotReadable", "StoreError"} <= set(ours)


def test_errors_end_a_command_with_their_message_hint_and_exit_code(small_input, tmp_path):
    missing = runner.invoke(app, ["score", str(small_input), "-m", "no-such-judge", "--store", str(tmp_path)])
    assert missing.exit_code == 2
    assert "error: model config 'no-such-judge' not found" in missing.output
    assert "hint: `scaffold-local models` lists the judges" in missing.output
    not_a_run = runner.invoke(app, ["show", str(tmp_path)])
    assert not_a_run.exit_code == 2 and "is not a run folder" in not_a_run.output
    assert "hint: `score` prints each run's folder" in not_a_run.output
    nowhere = runner.invoke(app, ["show", str(tmp_path / "nowhere")])
    assert nowhere.exit_code == 2 and f"no run folder at {tmp_path / 'nowhere'}" in nowhere.output
    typo = runner.invoke(app, ["score", str(small_input), "-m", "qwen2.5-coder-1.5b-llamacpp", "--store", str(tmp_path)])
    assert typo.exit_code == 2 and "did you mean 'qwen2.5-coder-1.5b-llama-cpp'?" in typo.output
    engine = tmp_path / "broken.toml"  # an engine that cannot start: exit 1, its own hint
    engine.write_text('backend = "llama-cpp"\nmodel = "/nowhere/model.gguf"\nstructured_outputs = "gbnf"\n')
    failed = runner.invoke(app, ["score", str(small_input), "-m", str(engine), "--store", str(tmp_path / "s")])
    assert failed.exit_code == 1 and "error:" in failed.output and "hint: " in failed.output, failed.output


def test_runs_lists_a_stores_runs_and_json_gives_the_systems_table_to_scripts(small_input, tmp_path):
    """`runs` lists each run of a store (name, judge, version, status, documents, summaries, date), newest first;
    `score --json` and `show --json` print the per-system table as JSON on stdout, the fields of systems.json, with
    everything else on stderr."""
    store = tmp_path / "store"
    scored = runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store), "--json"])
    assert scored.exit_code == 0, scored.output
    run_dir = next((store / "runs").iterdir())
    systems = json.loads((run_dir / "systems.json").read_text())
    assert json.loads(scored.stdout) == systems and "scaffolds:" in scored.stderr
    shown = runner.invoke(app, ["show", str(run_dir), "--json"])
    assert shown.exit_code == 0 and json.loads(shown.stdout) == systems
    runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store), "--run-name", "later"])
    listed = runner.invoke(app, ["runs", str(store), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [r["run"] for r in rows] == ["later", run_dir.name]
    assert rows[1] == {"run": run_dir.name, "judge": "responder", "method_version": 2, "status": "complete", "documents": 2,
                       "summaries": 4, "created": json.loads((run_dir / "spec.json").read_text())["created_at"],
                       "path": str(run_dir)}
    (store / "runs" / "half-copied").mkdir()  # a folder with no spec.json: said, not listed
    table = runner.invoke(app, ["runs", str(store)])
    assert table.exit_code == 0 and "later" in table.output and "complete" in table.output
    assert "skipped:" in table.stderr and "half-copied" in table.stderr and "(2)" in table.stdout
    missing = runner.invoke(app, ["runs", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "no store at" in missing.output


def test_version_short_help_and_one_error_style_at_every_level():
    """`--version`; `-h` wherever `--help` works; a mistake among the root's own options ends as a command's does
    (`error:` and `hint:`, exit 2), not in click's own words."""
    from scaffold_local import __version__

    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.output.strip() == f"scaffold-local {__version__}"
    assert runner.invoke(app, ["-h"]).output == runner.invoke(app, ["--help"]).output
    assert "runs [OPTIONS] [STORE]" in runner.invoke(app, ["runs", "-h"]).output
    root = runner.invoke(app, ["--bogus"])
    assert root.exit_code == 2 and "error: no such option: --bogus" in root.output and "hint:" in root.output
    assert "Error:" not in root.output


@pytest.mark.parametrize("command", ["score", "extract", "show", "runs", "report", "compare", "check-judge", "meta-eval",
                                     "calibrate", "serve", "models", "doctor"])
def test_help_names_values_and_speaks_of_the_method_not_of_its_history(command):
    """Help in the user's words: a value is named (`--model MODEL`, `INPUT_PATH`), never typed (`<str>`, `<int range>`,
    `{input_path}`); no option explains itself by method-version numbers; the root lists every command's description
    whole."""
    text = runner.invoke(app, [command, "--help"], terminal_width=100).output
    assert not re.search(r"<(str|int|float|path|list\[|int range|float range)|\{\w+\}", text), text
    assert not re.search(r"method versions? \d|under \d and \d", text), text
    listing = runner.invoke(app, ["--help"], terminal_width=80).output
    line = next(line for line in listing.splitlines() if line.strip().startswith(command + " "))
    assert not line.rstrip().endswith("...") and len(line.split(maxsplit=1)[1]) > 20


def test_a_long_run_is_announced_with_an_estimate_from_this_judges_last_run(small_input, tmp_path):
    """Before a run expected to take over a minute: its requests, tokens and minutes, at the rates the same judge's
    newest run in the store measured (here made slow: 120 engine seconds for its 4 summaries)."""
    args = ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(tmp_path / "store")]
    first = runner.invoke(app, args)
    assert first.exit_code == 0 and "estimate:" not in first.output  # no earlier run: nothing to scale
    (run_dir,) = (tmp_path / "store" / "runs").iterdir()
    usage = json.loads((run_dir / "usage.json").read_text())
    requests = usage["extraction"]["requests"] + usage["judgments"]["requests"]
    (run_dir / "usage.json").write_text(json.dumps({**usage, "engine_seconds": 120.0}))
    rows = [json.loads(line) for line in small_input.read_text().splitlines()]
    doubled = write_jsonl(tmp_path / "doubled.jsonl", rows + [{**r, "system": r["system"] + "-2"} for r in rows])
    second = runner.invoke(app, [*args[:1], str(doubled), *args[2:]])
    said = second.output.replace("\n", " ")
    assert second.exit_code == 0, second.output
    assert f"estimate: about 4 min for 8 summaries ({2 * requests:,} requests," in said
    assert f"at the rates run {run_dir.name} measured on this machine" in said


def test_ctrl_c_says_the_work_is_stored_and_how_to_resume_and_exits_130(small_input, tmp_path, monkeypatch):
    from scaffold_local.runs.pipeline import Pipeline

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Pipeline, "score", interrupted)
    store = tmp_path / "store"
    result = runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store)])
    said = result.output.replace("\n", " ")
    assert result.exit_code == 130, result.output
    assert f"interrupted: every judgment finished so far is stored in {store}; run the same command again to resume" in said
