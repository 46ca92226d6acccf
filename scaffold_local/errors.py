"""Every error scaffold_local raises on purpose, under one root. The command line turns each into
`error: <message>`, `hint: <hint>` and the class's exit code: 2 when the input, the options or a
config are at fault; 1 when an engine, an installed model or the package itself is. Each class also
derives from the built-in exception it replaces, so `except ValueError` in callers keeps working.
Imports nothing: every layer may raise these."""

from __future__ import annotations

__all__ = ["BackendError", "ConfigError", "EmbeddedModelError", "EvalDataError", "InputError", "MissingExtraError",
           "ModelFolderError", "OutputError", "PromptError", "RunNameError", "RunNotReadable", "ScaffoldLocalError",
           "SpecMismatch", "StoreError", "SummaryNotFound", "UsageError"]


class ScaffoldLocalError(Exception):
    """The root: catch this to catch every error scaffold_local raises on purpose."""

    exit_code = 2
    hint = ""  # what to do about it, printed under the message

    def __init__(self, message: str = "", *, hint: str | None = None):
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    def __str__(self) -> str:  # KeyError and OSError would quote or decorate a one-argument message
        return str(self.args[0]) if self.args else ""


class UsageError(ScaffoldLocalError, ValueError):
    """Options that cannot be used, or not together (e.g. --seeds with two judges)."""


class ConfigError(ScaffoldLocalError, ValueError):
    """A model config that cannot be found or read."""

    hint = "`scaffold-local models` lists the configs; --model also takes a path to a .toml"


class InputError(ScaffoldLocalError, ValueError):
    """The input as a whole cannot be read (missing file, unknown format, missing column)."""


class OutputError(ScaffoldLocalError, ValueError):
    """Model output that is not valid JSON for its schema, or that breaks a rule a schema cannot state.
    Recorded per item with its raw text; it never stops a run."""


class StoreError(ScaffoldLocalError, RuntimeError):
    """A store that cannot be used safely (e.g. one on a network filesystem)."""


class SpecMismatch(ScaffoldLocalError, RuntimeError):
    """A run folder that holds a different run than the one asked for."""


class RunNameError(ScaffoldLocalError, ValueError):
    """A run name that would not be one plain folder under <store>/runs/ (it could leave the store)."""


class RunNotReadable(ScaffoldLocalError, FileNotFoundError):
    """Not a run folder, a run this version cannot read, or a run with no scores yet."""

    hint = "`score` prints each run's folder (<store>/runs/<name>); `scaffold-local runs <store>` lists them"


class SummaryNotFound(ScaffoldLocalError, LookupError):
    """A DOC_ID/SYSTEM key that names no summary of the run."""

    hint = "keys are DOC_ID/SYSTEM, as in the run's summaries.csv"


class EvalDataError(ScaffoldLocalError, FileNotFoundError):
    """The human-labelled evaluation data is missing or unreadable."""


class PromptError(ScaffoldLocalError, FileNotFoundError):
    """A prompt template the method version needs is missing or incomplete: the installation is broken."""

    exit_code = 1


class BackendError(ScaffoldLocalError, RuntimeError):
    """A backend that cannot start or serve at all (as opposed to one failed request)."""

    exit_code = 1

    def __init__(self, message: str, *, backend: str, hint: str = "", retryable: bool = False):
        super().__init__(f"[{backend}] {message}", hint=hint)
        self.backend = backend
        self.retryable = retryable


class MissingExtraError(ScaffoldLocalError, ImportError):
    """An optional integration (Inspect AI, MLflow) used without its extra installed."""

    exit_code = 2

    def __init__(self, extra: str, package: str):
        super().__init__(f"this needs {package}, which is not installed",
                         hint=f"pip install 'scaffold-local[{extra}]'")


class EmbeddedModelError(ScaffoldLocalError, FileNotFoundError):
    """An embedded model that is not installed, installed at another version, or whose bytes are not
    the pinned ones."""

    exit_code = 1


class ModelFolderError(ScaffoldLocalError, FileNotFoundError):
    """A config's `model` that is no local folder or file of weights (nothing is ever downloaded)."""

    exit_code = 1
    hint = "scaffold_local loads weights from local paths only (air-gapped use): point `model` in the config at them"
