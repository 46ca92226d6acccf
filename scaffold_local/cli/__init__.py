"""Command line: one module per command, each a thin typer layer over the Python API, imported only
when its command runs (`app.py` lists them). Errors reach the user through `errors.py`'s hierarchy:
one line, a hint and the class's exit code."""

from .app import app, main
from .output import console, err

__all__ = ["app", "console", "err", "main"]
