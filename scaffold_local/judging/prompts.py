"""Prompt templates: versioned Jinja files in prompts/, one per task, named `<task>.v<N>.jinja` (a
view registered from outside the package may keep its own in its `templates` folder).

Each file defines two blocks, `system` and `user` (and, for a reading, optionally `answer`: how the
judge's JSON answer opens). Every judgment prompt is ordered fixed
instructions -> source or scaffold -> candidate summary last, so that all summaries of one document
share a long prompt prefix (prefix caching). From method version 7 the item asked about comes after
the summary, and `{{ part }}` marks where a part that other prompts share ends (the summary, the
document): an engine that computes prompts part by part (llama.cpp) cuts there (`Request.parts`).
The newest version of each task is used unless a version is pinned; the template hash goes into
every run spec and every cache key (through the rendered messages), so editing a template can never
silently reuse old results.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from ..errors import PromptError
from ..method.versions import method_version
from ..method.views import VIEW_SPECS, tasks_of
from ..records import Message
from .config import resource_dir

_FILE = re.compile(r"^(?P<task>[a-z_]+)\.v(?P<version>\d+)\.jinja$")
PART_MARK = "\ue000"  # `{{ part }}` in a template (a private-use character: never whitespace, never in a prompt)


@dataclass(frozen=True)
class PromptTemplate:
    task: str
    version: int
    source: str
    path: Path
    # The templates it extends (`{% extends "align.v7.jinja" %}`: name -> source, from its folder), part of its hash.
    bases: tuple[tuple[str, str], ...] = ()

    @property
    def sha256(self) -> str:
        text = self.source + "".join(f"\0{name}\0{source}" for name, source in self.bases)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @property
    def ref(self) -> str:
        return f"{self.task}.v{self.version}"

    def render(self, **variables: Any) -> tuple[Message, ...]:
        return self.render_parts(**variables)[0]

    def answer_opening(self, **variables: Any) -> str:
        """How the judge's JSON answer begins before the verdict's fields (a reading continues it): the
        template's `answer` block where it has one (`{"F2": {` for an answer under the item's id), else `{`."""
        context = _inherited(self, _compiled(self.source, self.bases), {"part": "", **variables})
        if "answer" not in context.blocks:
            return "{"
        return "".join(context.blocks["answer"][0](context))

    def render_parts(self, **variables: Any) -> tuple[tuple[Message, ...], tuple[tuple[int, int], ...]]:
        """The messages, and where each part after the first starts (message index, offset): at every
        message after the first, and at each `{{ part }}` mark (which the text does not keep)."""
        template = _compiled(self.source, self.bases)
        plain, marked = (_inherited(self, template, {"part": mark, **variables}) for mark in ("", PART_MARK))
        messages, parts = [], []
        for index, role in enumerate(("system", "user")):
            if role not in plain.blocks:
                raise PromptError(f"{self.path}: missing {{% block {role} %}}")
            content = "".join(plain.blocks[role][0](plain)).strip()
            messages.append(Message(role=role, content=content))
            if index:
                parts.append((index, 0))
            if PART_MARK in content:  # the mark in the text itself: this message stays one part
                continue
            text = "".join(marked.blocks[role][0](marked)).strip()
            if text.endswith(PART_MARK):  # a mark at the very end: after the text as it is unmarked
                text = text.removesuffix(PART_MARK).rstrip() + PART_MARK
            pieces = text.split(PART_MARK)
            offsets = [sum(len(piece) for piece in pieces[:k]) for k in range(1, len(pieces))]
            parts += [(index, offset) for offset in offsets if 0 < offset <= len(content)]
        return tuple(messages), tuple(parts)


def _inherited(prompt: PromptTemplate, template: jinja2.Template, variables: dict[str, Any]) -> Any:
    """A render context whose blocks are the template's own, then those of the templates it extends (as
    Jinja resolves them when it renders a whole template), so that each block renders on its own."""
    context = template.new_context(variables)
    source, bases = prompt.source, dict(prompt.bases)
    while (parent := _EXTENDS.search(source)) is not None:
        source = bases[parent[1]]
        for name, block in template.environment.get_template(parent[1]).blocks.items():
            context.blocks.setdefault(name, []).append(block)
    return context


@lru_cache(maxsize=64)
def _compiled(source: str, bases: tuple[tuple[str, str], ...] = ()) -> jinja2.Template:
    """Compiling a template costs milliseconds; rendering one, microseconds: compile each source once."""
    return _environment(bases).from_string(source)


@lru_cache(maxsize=16)
def _environment(bases: tuple[tuple[str, str], ...] = ()) -> jinja2.Environment:
    # StrictUndefined: a missing variable is an error, never an empty string in a prompt. The loader holds
    # only the templates a template extends, read when it was loaded (so its hash covers them).
    environment = jinja2.Environment(
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, autoescape=False,
        loader=jinja2.DictLoader(dict(bases)),
    )
    environment.filters["quoted"] = quoted
    return environment


_SUMMARY_TAG = re.compile(r"<(/?)(\s*summary\s*)>", re.IGNORECASE)


def quoted(text: str) -> str:
    """A summary's text inside `<summary>` ... `</summary>` (method version 19): a tag of its own is defanged (`</
    summary>`), so that the summary cannot close its quotation and speak as the prompt."""
    return _SUMMARY_TAG.sub(lambda m: f"<{m[1]} {m[2].strip()}>", text)


_EXTENDS = re.compile(r"""{%-?\s*extends\s+["']([\w.]+)["']""")


def _bases(path: Path, source: str) -> tuple[tuple[str, str], ...]:
    """The templates a template extends, transitively, from its own folder."""
    found: dict[str, str] = {}
    pending = _EXTENDS.findall(source)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        base = path.parent / name
        if not base.is_file():
            raise PromptError(f"{path}: extends {name!r}, which is not in {path.parent}")
        found[name] = base.read_text(encoding="utf-8")
        pending += _EXTENDS.findall(found[name])
    return tuple(sorted(found.items()))


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
        source = path.read_text(encoding="utf-8")
        prompts[task] = PromptTemplate(task, chosen, source, path, _bases(path, source))
    return prompts
