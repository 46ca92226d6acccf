"""What every command prints with: rich consoles (results to stdout, everything else to stderr),
progress bars, input issues, and the one way an error ends a command."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from typer.core import TyperCommand

from ..errors import ScaffoldLocalError

if TYPE_CHECKING:
    from ..runs import InputIssue

console = Console()
err = Console(stderr=True)

SHOWN_ISSUES = 50  # more go to the run folder's input_issues.jsonl, not the screen


class NamedValues(TyperCommand):
    """A command whose help names each value by what it is (`--model MODEL`, `INPUT_PATH`), not by its type
    (`<str>`, `<int range>`, `{input_path}`)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.metavar is None and not getattr(param, "is_flag", False):
                param.metavar = (param.name or "").upper()
            if isinstance(param, typer.core.TyperArgument):
                _plain_argument(param)


def _plain_argument(param: Any) -> None:
    """An argument shown by its name alone: typer writes its type after the name and braces around it."""
    usage = param.metavar if param.required else f"[{param.metavar}]"
    param.display_type_rich = lambda ctx: ""
    param._usage_display_name = lambda: usage


class CommandApp(typer.Typer):
    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", NamedValues)
        return super().command(*args, **kwargs)


def command_app() -> typer.Typer:
    """The app of one command: click's plain help (brackets in help texts are text, not rich markup; no
    type column; options never cut), values named, -h beside --help, and shell completion offered by the root
    command only."""
    return CommandApp(add_completion=False, rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]})


def fail(error: ScaffoldLocalError | str, code: int | None = None) -> NoReturn:
    """Print an error (and its hint) and exit with its code. The text is printed verbatim and unwrapped
    (one line per line, for logs and grep): messages quote TOML tables ([engine]) that rich would
    otherwise take for markup."""
    err.print(f"[red]error:[/red] {escape(str(error))}", soft_wrap=True)
    hint = getattr(error, "hint", "")
    if hint:
        err.print(f"hint: {escape(hint)}", soft_wrap=True, highlight=False)
    raise typer.Exit(code if code is not None else getattr(error, "exit_code", 2))


@contextlib.contextmanager
def rich_progress(label: str, total: int) -> Iterator[Callable[..., None]]:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task(label, total=total)
        yield lambda n, detail="": progress.update(task, advance=n, description=f"{label} ({detail})" if detail else label)


def print_issues(issues: list[InputIssue], prefix: str = "") -> None:
    from ..runs import most_common_issue

    for issue in issues[:SHOWN_ISSUES]:
        err.print(f"[{'red' if issue.severity == 'error' else 'yellow'}]{escape(prefix + str(issue))}[/]", highlight=False)
    if len(issues) > SHOWN_ISSUES:
        err.print(f"[yellow]... and {len(issues) - SHOWN_ISSUES:,} more input issues (all of them in the run "
                  f"folder's input_issues.jsonl){escape(most_common_issue(issues))}[/yellow]", highlight=False)


def announce(text: str) -> None:
    """What the user should know before a long step starts (its estimate), one unwrapped line for logs."""
    err.print(escape(text), highlight=False, soft_wrap=True)


def print_notes(notes: list[str]) -> None:
    for note in notes:
        err.print(f"[yellow]note: {escape(note)}[/yellow]", highlight=False)


def print_breakdowns(run_dir: Path, ds_scale: int) -> None:
    """A run's word-budget table, where it was scored with a budget, and its coverage of each group and
    member document, where its input has groups."""
    from .. import runs
    from ..analysis.budget import of_run
    from ..analysis.groups import member_coverage
    from ..report import budget_table, member_table

    run = runs.load(run_dir)
    if (budget := of_run(run)) is not None:
        console.print(budget_table(budget, ds_scale))
    if (coverage := member_coverage(run)) is not None:
        console.print(member_table(coverage))
