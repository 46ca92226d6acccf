"""Prompt templates: versioned Jinja files in prompts/, one per task, named `<task>.v<N>.jinja` (a
view registered from outside the package may keep its own in its `templates` folder).

Each file defines two blocks, `system` and `user`. Every judgment prompt is ordered fixed
instructions -> source or scaffold -> candidate summary last, so that all summaries of one document
share a long prompt prefix (prefix caching). The newest version of each task is used unless a
version is pinned; the template hash goes into every run spec and every cache key (through the
rendered messages), so editing a template can never silently reuse old results.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from .config import resource_dir
from .errors import PromptError
from .method import method_version
from .records import Message
from .views import VIEW_SPECS, tasks_of

_FILE = re.compile(r"^(?P<task>[a-z_]+)\.v(?P<version>\d+)\.jinja$")


@dataclass(frozen=True)
class PromptTemplate:
    task: str
    version: int
    source: str
    path: Path

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()

    @property
    def ref(self) -> str:
        return f"{self.task}.v{self.version}"

    def render(self, **variables: Any) -> tuple[Message, ...]:
        template = _compiled(self.source)
        context = template.new_context(variables)
        parts = []
        for role in ("system", "user"):
            if role not in template.blocks:
                raise PromptError(f"{self.path}: missing {{% block {role} %}}")
            text = "".join(template.blocks[role](context)).strip()
            parts.append(Message(role=role, content=text))
        return tuple(parts)


@lru_cache(maxsize=64)
def _compiled(source: str) -> jinja2.Template:
    """Compiling a template costs milliseconds; rendering one, microseconds: compile each source once."""
    return _environment().from_string(source)


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    # StrictUndefined: a missing variable is an error, never an empty string in a prompt.
    return jinja2.Environment(
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, autoescape=False
    )


def load_prompts(directory: Path | None = None, pins: dict[str, int] | None = None,
                 version: int | None = None, tasks: tuple[str, ...] | None = None) -> dict[str, PromptTemplate]:
    """The template for every task (`tasks`, else every task of method `version`, else of the default
    one): the pinned version, else the newest version up to `version` (a method version changes only
    some tasks' templates and keeps the others), else the newest."""
    directory = directory or resource_dir("prompts")
    tasks = tasks or tasks_of(method_version(version))
    own = {spec.templates for spec in VIEW_SPECS.values() if spec.templates and set(spec.tasks) & set(tasks)}
    found: dict[str, dict[int, Path]] = {}
    for path in (p for folder in (directory, *own) for p in folder.glob("*.jinja")):
        match = _FILE.match(path.name)
        if match:
            found.setdefault(match["task"], {})[int(match["version"])] = path
    prompts = {}
    for task in tasks:
        versions = found.get(task)
        if not versions:
            raise PromptError(f"no template for task {task!r} in {directory}")
        pinned = (pins or {}).get(task)
        chosen = pinned or max((v for v in versions if version is None or v <= version), default=version or 0)
        if chosen not in versions:
            raise PromptError(f"{task}.v{chosen}.jinja not in {directory} (have {sorted(versions)})")
        path = versions[chosen]
        prompts[task] = PromptTemplate(task, chosen, path.read_text(encoding="utf-8"), path)
    return prompts
