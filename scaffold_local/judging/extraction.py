"""Stage 1, extraction: the requests that extract a document's scaffold, its content address, the
scaffold assembled from their records, and chunked mode's labelling pass over a merged scaffold. A judge holds its
`Extraction` (`judge.extraction`), bound to its setup once."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..backends.tokens import prompt_tokens_at_most
from ..data.inputs import Document
from ..method.language import detect, trusted
from ..method.language import name as language_name
from ..method.scaffold import Scaffold
from ..method.schemas import ASSEMBLY_VERSION
from ..method.views import labelling
from ..records import Record
from .judge_setup import JudgeSetup
from .planned import PlannedRequest


class Extraction:
    """A judge's extraction: its requests, the scaffold's content address and assembly, and the labelling pass."""

    def __init__(self, judge: JudgeSetup):
        self.judge = judge

    def requests(self, document: Document) -> list[PlannedRequest]:
        """One request per view: its items extracted from the document under the view's schema."""
        judge = self.judge
        limits = judge.config.limits
        planned = []
        for name, spec in judge.views.items():
            fewest, most = spec.item_counts(limits)
            variables = {"document": document.text, "min_items": fewest, "max_items": most,
                         "max_attributes": limits.max_attributes_per_entity, "entity_kinds": judge.method.entity_kinds}
            if judge.method.in_document_language:
                variables["language"] = judge.document_language(document)
            planned.append(judge.request(f"{document.doc_id}/extract/{name}", spec.extract_task,
                                         spec.extraction_model(limits, judge.method), judge.config.budget.extraction,
                                         document.doc_id, None, variables))
        return planned

    def scaffold_key(self, document: Document) -> str:
        """Content address: the extraction requests (document, prompts, schemas, sampling, judge)."""
        keys = [p.cache_key for p in self.requests(document)]
        return hashlib.sha256(json.dumps([str(self.judge.method.number), *keys]).encode()).hexdigest()

    def build_scaffold(self, document: Document, records: Mapping[str, Record]) -> Scaffold:
        """Assemble a scaffold from the extraction records (keyed by view), assigning ids. A view
        whose output failed is None, with the reason in `failures`."""
        judge = self.judge
        views: dict[str, Any] = {}
        failures: dict[str, str] = {}
        notes = []
        for name, spec in judge.views.items():
            record = records[name]
            if record.parsed is None:
                views[name] = None
                failures[name] = record.validation_error or record.error or "no output"
                continue
            views[name], view_notes = spec.assemble(record.parsed)
            notes.extend(view_notes)
        language = detect(document.text) if judge.method.in_document_language else None
        return Scaffold(key=self.scaffold_key(document), doc_id=document.doc_id, document_sha256=document.sha256,
                        views=views, failures=failures, notes=tuple(notes), assembly=ASSEMBLY_VERSION,
                        language=language and language.code, language_probability=language and language.probability)

    def language_note(self, documents: Iterable[Document]) -> str | None:
        """Under a method version that writes every scaffold in English: the documents in other
        languages, and the version that writes theirs in their own."""
        judge = self.judge
        if judge.method.in_document_language:
            return None
        found = Counter(language_name(code) for doc in documents if not doc.text.isascii()
                        and (code := trusted(doc.text)) not in (None, "en"))
        if not found:
            return None
        return (f"{sum(found.values())} documents are not in English ({', '.join(f'{n} {k}' for k, n in found.items())}): "
                f"under method version {judge.method.number} their scaffolds are written in English and summaries "
                "are split by English rules; --method-version 6 writes each scaffold in its document's language")

    def label_requests(self, scaffold: Scaffold, document: Document) -> list[PlannedRequest]:
        """Chunked mode's labelling pass over a merged scaffold: every judged item, one label each for
        the whole document. One request, or where the list is too long for one, consecutive parts
        that each surely fit."""
        judge = self.judge
        items = tuple(i for spec, view in scaffold.each_view() if view for i in spec.judged(view))
        if not items:
            return []
        title = document.text.split("\n", 1)[0][:200]

        def ask(part: tuple[Any, ...], kind: str) -> PlannedRequest:
            model = labelling.label_model(tuple(i.id for i in part))
            budget = judge.config.budget.base + labelling.TOKENS_PER_ITEM * len(part)
            return judge.request(f"{document.doc_id}/{kind}", labelling.TASK, model, budget, document.doc_id, None,
                                 {"items": labelling.prompt_items(part), "title": title})

        parts = fitting_parts(judge, items, ask)
        return [ask(part, "label_items" if len(parts) == 1 else f"label_items/{k}") for k, part in enumerate(parts, 1)]


def surely_fits(judge: JudgeSetup, planned: PlannedRequest) -> bool:
    """Prompt + max_tokens within the context by a bound that needs no tokenizer (every token is
    at least one byte)."""
    tokens = prompt_tokens_at_most(planned.request.messages) + planned.request.sampling.max_tokens
    return tokens <= judge.config.max_model_len


def fitting_parts(judge: JudgeSetup, items: tuple[Any, ...],
                  ask: Callable[[tuple[Any, ...], str], PlannedRequest]) -> list[tuple[Any, ...]]:
    """The items in consecutive parts, halved until each part's request surely fits (or holds one item)."""
    if len(items) == 1 or surely_fits(judge, ask(items, "part")):
        return [items]
    half = len(items) // 2
    return [*fitting_parts(judge, items[:half], ask), *fitting_parts(judge, items[half:], ask)]
