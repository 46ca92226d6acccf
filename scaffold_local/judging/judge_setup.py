"""A judge's setup: a model config bound to a method version, its views, its prompt set and its
thresholds; builds one request from a task's prompt. Everything that plans or reads a judgment starts
from it (judge.py gathers them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..backends.protocol import Request, Sampling
from ..data.inputs import Document
from ..method.language import name as language_name
from ..method.language import trusted
from ..method.schemas import json_schema, schema_text
from ..method.text import split_sentences, splitter_version
from ..method.versions import MethodVersion, method_version
from ..method.views import tasks_of, verdict_field, views_of
from .confidence import CONFIDENCE_ALTERNATIVES
from .config import ModelConfig
from .planned import PlannedRequest
from .prompts import PromptTemplate, load_prompts


class JudgeSetup:
    """A model config, a method version and its prompt set, bound together."""

    def __init__(self, config: ModelConfig, method: MethodVersion | None = None,
                 prompts: Mapping[str, PromptTemplate] | None = None):
        self.config = config
        self.method = method or method_version(config.method_version)  # the config's own, else the default
        self.views = views_of(self.method)  # the scaffold views this method version uses
        self.prompts = prompts or load_prompts(version=self.method.number, tasks=tasks_of(self.method),
                                               pins=dict(self.method.prompt_pins))
        self.fingerprint = config.fingerprint()
        # A config's thresholds hold for the method version they were calibrated under only (or one that sends
        # that version's judgment requests).
        self.thresholds: dict[str, float] = dict(
            config.thresholds.get(self.method.number) or config.thresholds.get(self.method.judges_like or 0) or {})
        self.known_sentences: dict[str, list[str]] = {}  # filled from the store (JudgmentCache.sentences)
        self.judgment_overhead: int | None = None  # bytes around document and summary (context_fit.py)

    @property
    def decision_threshold(self) -> float | None:
        """Versions 3-6: the one threshold of facts and questions (their run specs hold it)."""
        return None if self.method.reads_verdicts else self.thresholds.get("facts")

    def template(self, task: str) -> PromptTemplate:
        """The prompt of a task: the method version's, or (chunked mode's labelling pass, the holistic pairwise
        baseline: tasks outside every version's prompt set) the newest of its own up to the version, so that a later
        template of such a task never changes an earlier version's requests. "<purpose>:<task>" (a justification
        asked for on demand, explain.py) is written on <task>'s prompt."""
        task = task.split(":", 1)[-1]
        if task not in self.prompts:
            self.prompts = {**self.prompts, **load_prompts(tasks=(task,), version=self.method.number)}
        return self.prompts[task]

    def sentences(self, summary: str, language: str | None = None) -> list[str]:
        """The summary's numbered sentences under this method version's splitter (version 6: by the
        rules of `language`, its document's; see `summary_language`)."""
        known = self.known_sentences.get(summary)
        return list(known) if known is not None else split_sentences(summary, self.method.splitter, language)

    def summary_language(self, document: Document) -> str | None:
        """Under a version that splits by language: the document's language where its detection is
        trusted, by whose rules its summaries are split (a short summary is a poor sample of its own
        language). None otherwise."""
        return trusted(document.text) if self.method.splitter == "pysbd-language" else None

    @property
    def splitter_version(self) -> str:
        return splitter_version(self.method.splitter)

    @staticmethod
    def document_language(document: Document) -> str:
        """The document's language as the extraction prompts name it ("German"), or "the document's own
        language" where detection is not trusted."""
        language = trusted(document.text)
        return language_name(language) if language else "the document's own language"

    def request(self, request_id: str, task: str, model: type[BaseModel], max_tokens: int,
                doc_id: str, system: str | None, variables: dict[str, Any]) -> PlannedRequest:
        """One request. The template variables double as the request's context (what the prompt was
        rendered from), which test doubles answer from and traces keep."""
        c = self.config
        alternatives = CONFIDENCE_ALTERNATIVES if c.verdict_confidence and verdict_field(task) else 0
        request = Request(
            id=request_id,
            prefix_group=doc_id,
            messages=self.template(task).render(**variables),
            json_schema=json_schema(model),
            sampling=Sampling(max_tokens=max_tokens, temperature=c.temperature, top_p=c.top_p, seed=c.seed,
                              top_logprobs=alternatives),
            context={"task": task, **variables},
        )
        return PlannedRequest(request, request.cache_key(self.fingerprint, schema_text(model)), task, doc_id, system,
                              model)
