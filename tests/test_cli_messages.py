"""Help and errors in one style: every command's help at 80 columns keeps its bracketed defaults and
shows no type column; completion is offered by the root only; every usage error is `error:` with a
`hint:`, exit 2, and nothing written."""

from __future__ import annotations

import json
import re

import pytest
import typer
from typer.testing import CliRunner

from scaffold_local.cli import app
from scaffold_local.cli.app import COMMANDS, LazyCommands

from .helpers import RESPONDER_CONFIG

runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.split())


def _help(*args: str) -> str:
    result = runner.invoke(app, [*args, "--help"], terminal_width=80, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
    return result.output


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_commands_help_keeps_its_brackets_and_shows_no_types(command):
    shown = _help(command)
    click_command = LazyCommands(name="scaffold-local").get_command(None, command)
    bracketed = [b for p in click_command.params for b in re.findall(r"\[[^\]]+\]", getattr(p, "help", None) or "")]
    for text in bracketed:  # e.g. "[default: the config's requests_per_call]": rich markup would have eaten it
        assert "".join(text.split()) in "".join(shown.split()), f"{command}: {text} missing from its help"
    assert "<bool>" not in shown and "install-completion" not in shown
    for param in click_command.params:  # every option is named in full (none cut to fit a column)
        for name in getattr(param, "opts", []):
            if name.startswith("--"):
                assert name in shown, f"{command}: {name} cut from its help"


def test_root_help_offers_completion_and_the_model_default_is_shown():
    assert "--install-completion" in _help()
    assert "[default: qwen2.5-coder-1.5b-llama-cpp]" in _flat(_help("score"))
    assert "[default: qwen2.5-coder-1.5b-vllm-cpu]" in _flat(_help("serve"))


def _refused(args: list[str], *expected: str) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("error: ") and any(line.startswith("hint: ") for line in lines), result.output
    for text in expected:
        assert text in _flat(result.output), result.output
    assert "Traceback" not in result.output and "╭" not in result.output and "Value error" not in result.output
    return result.output


def test_usage_errors_are_one_line_with_a_hint_and_write_nothing(small_input, tmp_path):
    store = tmp_path / "store"
    _refused(["shw"], "no command 'shw': did you mean 'show'?")
    _refused(["score", str(small_input), "--bogus"], "no such option: --bogus", "score --help` lists its options")
    _refused(["show"], "missing argument")
    _refused(["score", str(small_input), "--default-label", "main", "--store", str(store)],
             "'main' is not one of 'main point', 'supporting detail', 'other'")
    _refused(["score", str(small_input), "--ds-scale", "x", "--store", str(store)], "not a valid integer")

    renamed = tmp_path / "renamed.jsonl"
    rows = [json.loads(line) for line in small_input.read_text().splitlines()]
    renamed.write_text("".join(json.dumps({"text" if k == "document" else k: v for k, v in r.items()}) + "\n"
                               for r in rows))
    output = _refused(["score", str(renamed), "-m", str(RESPONDER_CONFIG), "--store", str(store)],
                      "has the field 'document'", "--document-field")
    assert output.count("error:") == 1  # said once, not once per record
    assert not store.exists()


def test_report_checks_every_argument_before_writing(small_input, tmp_path):
    store = tmp_path / "store"
    assert runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store)]).exit_code == 0
    (run_dir,) = (store / "runs").iterdir()
    out = tmp_path / "report"
    _refused(["report", str(run_dir), str(run_dir), "--out", str(out)], "given twice")
    _refused(["report", str(run_dir), "--individual", str(tmp_path / "nowhere"), "--out", str(out)])
    assert not out.exists()


def test_a_command_app_is_plain():
    from scaffold_local.cli.output import command_app

    made = command_app()
    assert isinstance(made, typer.Typer)
    assert made.rich_markup_mode is None
