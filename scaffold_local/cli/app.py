"""The root command: a group that imports a command's module only when that command runs (as
inspect_ai's CLI does), turns every scaffold_local error into a message, a hint and an exit code,
and sets up logging for diagnostics."""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import re
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ..backends.child_stderr import ENGINE_LOG_ENV
from ..errors import ScaffoldLocalError, UsageError
from .output import err, fail

# command -> module of this package that defines it (its `app` holds exactly that one command)
COMMANDS = {
    "score": "score",
    "extract": "extract",
    "show": "show",
    "runs": "list_runs",
    "report": "html_report",
    "compare": "compare",
    "check-judge": "check_judge",
    "meta-eval": "meta_eval",
    "calibrate": "calibrate",
    "serve": "serve",
    "models": "models",
    "doctor": "doctor",
}


class LazyCommands(TyperGroup):
    # Contexts and commands are typed Any: typer 0.12 builds on click, later versions on their own copy of it.
    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(f"{__package__}.{COMMANDS[cmd_name]}")
        return typer.main.get_command(module.app)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            close = difflib.get_close_matches(name, COMMANDS, n=1)
            raise UsageError(f"no command {name!r}" + (f": did you mean {close[0]!r}?" if close else ""),
                             hint=f"the commands: {', '.join(COMMANDS)} (`scaffold-local --help` says what each does)")
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """The root's own options and arguments: a mistake there ends as every other error does (`error:`, `hint:`)."""
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:
            if not _is_click_usage_error(exc):
                raise
            fail(UsageError(_plain(exc.format_message()), hint="`scaffold-local --help` lists the options and commands"),  # type: ignore[attr-defined]
                 getattr(exc, "exit_code", 2))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ScaffoldLocalError as exc:
            fail(exc)
        except Exception as exc:
            if not _is_click_usage_error(exc):
                raise
            # A command's options and arguments: the same `error:` and `hint:` as every other error.
            context = getattr(exc, "ctx", None)
            command = context.command_path if context is not None else "scaffold-local"
            fail(UsageError(_plain(exc.format_message()), hint=f"`{command} --help` lists its options"),  # type: ignore[attr-defined]
                 getattr(exc, "exit_code", 2))


def _is_click_usage_error(exc: Exception) -> bool:
    """Click's UsageError, or the same class of the copy of click that newer typers carry (typer._click)."""
    return any(cls.__name__ == "UsageError" and cls.__module__.endswith("click.exceptions") for cls in type(exc).__mro__)


def _plain(message: str) -> str:
    """Click's message in this package's voice: lower case first, no full stop after one clause, and no
    pydantic wording ("Value error, ") from typer's conversion of choices."""
    message = re.sub(r"Input should be a valid (\w+)(, [^.]*)?", r"not a valid \1", message.replace("Value error, ", ""))
    message = message.rstrip(".") if message.count(".") == 1 else message
    return message[:1].lower() + message[1:]


app = typer.Typer(
    cls=LazyCommands,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Semantic Scaffold summary evaluation with open-weight judges on local hardware.",
    no_args_is_help=True,
    rich_markup_mode=None,  # help in click's plain style, as every command's (output.command_app)
    pretty_exceptions_show_locals=False,
)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version  # the installed distribution's, as `pip show` says

        typer.echo(f"scaffold-local {version('scaffold-local')}")
        raise typer.Exit()


@app.callback()
def root(verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="log scaffold_local's diagnostics (INFO) to stderr, and show the engines' own "
                                "output there instead of in their log file")] = False,
         version: Annotated[bool, typer.Option(
             "--version", callback=_print_version, is_eager=True, help="the package's version, and exit")] = False,
         ) -> None:
    """Semantic Scaffold summary evaluation with open-weight judges on local hardware."""
    configure_logging(logging.INFO if verbose else logging.WARNING)
    if verbose:
        os.environ.setdefault(ENGINE_LOG_ENV, "-")


def configure_logging(level: int) -> None:
    """scaffold_local's loggers write to stderr through rich, once; engines' own logs are theirs."""
    from rich.logging import RichHandler

    package = logging.getLogger("scaffold_local")
    if not any(isinstance(h, RichHandler) for h in package.handlers):
        package.addHandler(RichHandler(console=err, show_time=False, show_path=False))
        package.propagate = False
    package.setLevel(level)


def main() -> None:  # pragma: no cover - console script entry
    app(prog_name="scaffold-local")
