"""Fitting the judge's context before anything is sent: counting prompt tokens as the judge's engine
will, and leaving out the documents whose requests cannot fit."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..backends import backend_class
from ..backends.tokens import TokenCounter, prompt_bytes, prompt_tokens_at_most
from ..data.inputs import Candidate, Document, InputIssue, LoadedInput
from ..records import Message
from .dispatch import ProgressFactory, no_progress
from .judge import Judge, PlannedRequest
from .long_documents import chunk, excerpt

if TYPE_CHECKING:
    from .config import ModelConfig


_SENTENCE_ENDS = re.compile(r"[.!?;:。！？…\n]")


@dataclass
class ContextFit:
    """What `Judge.fit_context` found: the input without the documents that cannot fit (a copy, its
    issues followed by the new ones), the new issues, and the skipped documents with the reason."""

    loaded: LoadedInput
    issues: list[InputIssue]
    skipped: dict[str, str]  # doc_id -> why


LONG_INPUT_CHARS = 100_000  # documents this long in all take seconds to count and split: progress is shown


def fit_context(judge: Judge, loaded: LoadedInput, counter: TokenCounter | None = None,
                extraction: bool = True, chunk_tokens: int | None = None,
                progress: ProgressFactory = no_progress) -> ContextFit:
    """Check, before any request is sent, that every request whose size the input alone decides fits
    the judge's context (prompt + max_tokens <= max_model_len):

    - a document whose extraction prompt cannot fit goes to chunked mode (long_documents.py): cut
      into chunks that each fit, its summaries' sentence checks and direct scores reading the
      passages relevant to them (`loaded.chunks`, `loaded.excerpts`), with a warning that says so.
      `chunk_tokens` forces the mode on every document longer than that many tokens. Where not even
      one sentence fits, the document is skipped, never sent and never truncated: its records leave
      the input and one error issue names it, with the token count and the limit;
    - a group's summaries read excerpts of its members' texts where a member is chunked or the
      members' texts together do not fit a judgment;
    - a summary whose faithfulness check or direct score cannot fit (a long summary of a long
      document) is warned about: it is still scored, and that judgment is recorded as
      context_overflow by the engine without being sent, its metrics undefined with that reason.

    Prompts are counted with the judge's tokenizer where it has one (`token_counter`), only when a byte bound does
    not already show that they fit; an estimate is labelled as one (and chunks by it). `extraction`: False where the
    scaffolds come from elsewhere (a file, another judge or run), so only the judgments are checked, nothing chunked."""
    check = _ContextCheck(judge, counter or token_counter(judge.config), loaded)
    records_of: dict[str, list[Candidate]] = {}
    for c in loaded.candidates:
        records_of.setdefault(c.doc_id, []).append(c)
    issues: list[InputIssue] = []
    skipped: dict[str, str] = {}
    chunks = dict(loaded.chunks)  # an earlier judge's (compare): the first judge's scaffolds are shared
    checked: dict[str, InputIssue | None] = {}  # a document in several groups is checked once

    def extraction_issue(doc_id: str, candidates: list[Candidate]) -> InputIssue | None:
        if extraction and doc_id not in checked:
            checked[doc_id] = check.document(loaded.documents[doc_id], candidates, chunk_tokens, chunks)
            issues.extend([checked[doc_id]] if checked[doc_id] else [])  # type: ignore[list-item]
        return checked.get(doc_id)

    excerpts: dict[str, Document] = {}

    def fit_one(doc_id: str, candidates: list[Candidate]) -> None:
        members = loaded.groups.get(doc_id, (doc_id,))  # a group's summaries need each member's scaffold
        errors = [(m, i) for m in members if (i := extraction_issue(m, candidates)) and i.severity == "error"]
        if errors:
            member, issue = errors[0]
            skipped[doc_id] = issue.message if member == doc_id else f"member {member}: {issue.message}"
            return
        source = loaded.source_of(doc_id)
        for c in candidates:
            fits = check.judgment_fits(c)
            # A long document, or a group too long to read whole: the passages relevant to this summary.
            if any(m in chunks for m in members) or (doc_id in loaded.groups and not fits(source.text)):
                sentences = judge.sentences(c.summary, judge.summary_language(source))
                # (narrowed from an earlier judge's excerpt, where there is one: it must fit every judge)
                excerpts[c.key] = excerpt(loaded.excerpts.get(c.key, source), sentences, fits)
            issues.extend(check.summary(excerpts.get(c.key, source), c))

    with _shown_if_long(loaded, progress)("fitting documents to the judge's context", len(records_of)) as advance:
        for doc_id, candidates in records_of.items():
            fit_one(doc_id, candidates)
            advance(1)
    return ContextFit(loaded=_without(loaded, skipped, chunks, excerpts, issues), issues=issues, skipped=skipped)


def _shown_if_long(loaded: LoadedInput, progress: ProgressFactory) -> ProgressFactory:
    """Counting and splitting a long input takes a while before anything is sent (200 KB: most of a minute): shown."""
    return progress if sum(len(d.text) for d in loaded.documents.values()) >= LONG_INPUT_CHARS else no_progress


def _without(loaded: LoadedInput, skipped: dict[str, str], chunks: dict[str, tuple[Document, ...]],
             excerpts: dict[str, Document], issues: list[InputIssue]) -> LoadedInput:
    """The input without the skipped documents' (and groups') records, with its chunks, excerpts and issues."""
    kept_candidates = [c for c in loaded.candidates if c.doc_id not in skipped]
    needed = {m for c in kept_candidates for m in loaded.groups.get(c.doc_id, (c.doc_id,))}
    return dataclasses.replace(loaded, candidates=kept_candidates,
                               documents={d: doc for d, doc in loaded.documents.items() if d in needed},
                               groups={g: m for g, m in loaded.groups.items() if g not in skipped},
                               chunks={d: parts for d, parts in chunks.items() if d in needed},
                               excerpts={k: e for k, e in excerpts.items() if k.rsplit("/", 1)[0] not in skipped},
                               issues=[*loaded.issues, *issues])


class _ContextCheck:
    """fit_context's two checks: a document's extraction prompts, a summary's judgment prompts."""

    def __init__(self, judge: Judge, counter: TokenCounter, loaded: LoadedInput):
        self.judge, self.counter, self.fields = judge, counter, loaded.fields
        self.limit = judge.config.max_model_len

    def measure(self, planned: PlannedRequest) -> tuple[int, bool] | None:
        """(prompt tokens, exact) when prompt + budget may not fit; None when it surely fits."""
        budget = planned.request.sampling.max_tokens
        if prompt_tokens_at_most(planned.request.messages) + budget <= self.limit:
            return None
        tokens = self.counter.count(planned.request.messages)
        return (tokens, self.counter.exact) if tokens + budget > self.limit else None

    def explain(self, planned: PlannedRequest, tokens: int, exact: bool) -> str:
        budget = planned.request.sampling.max_tokens
        return (f"{planned.task} prompt of {tokens:,} tokens + max_tokens {budget:,} = {tokens + budget:,} "
                f"{'exceeds' if exact else 'may exceed'} the judge's max_model_len {self.limit:,} ({self.counter.how})")

    def fits(self, planned: Sequence[PlannedRequest]) -> bool:
        return all(self.measure(p) is None for p in planned)

    def judgment_fits(self, c: Candidate) -> Callable[[str], bool]:
        """Whether a summary's sentence check and direct score fit with this text as their document."""
        return lambda text: self.fits(self.judge.plan(None, Document(doc_id=c.doc_id, text=text, sha256=""), c))

    def chunk_fits(self, doc_id: str, most_tokens: int | None) -> Callable[[str], bool]:
        """Whether this text, as a document, has extraction prompts that fit (and at most `most_tokens` tokens)."""
        def fits(text: str) -> bool:
            if most_tokens is not None and self.text_tokens(text) > most_tokens:
                return False
            return self.fits(self.judge.extraction.requests(Document(doc_id=doc_id, text=text, sha256="")))
        return fits

    def text_tokens(self, text: str) -> int:
        return self.counter.count((Message(role="user", content=text),))

    def document(self, document: Document, candidates: list[Candidate], chunk_tokens: int | None = None,
                 chunks: dict[str, tuple[Document, ...]] | None = None) -> InputIssue | None:
        """None when every extraction prompt fits; else a warning that the document goes to chunked
        mode (its chunks put in `chunks`), or an error (skip the document) where no chunk can fit."""
        too_long = next(((p, found) for p in self.judge.extraction.requests(document)
                         if (found := self.measure(p)) is not None), None)
        forced = chunk_tokens is not None and self.text_tokens(document.text) > chunk_tokens
        where = {"record": candidates[0].record, "field": self.fields.document, "doc_id": document.doc_id}
        if too_long is not None and not too_long[1][1] and not forced:  # an estimate: the server decides
            return InputIssue(**where, severity="warning", message=(
                f"document may not fit the judge's context: {self.explain(too_long[0], *too_long[1])}; sent "
                f"anyway: a refusal is recorded as context_overflow for its {len(candidates)} record(s) "
                "(--chunk-tokens N scores it in chunked mode)"))
        if too_long is None and not forced:
            return None
        why = (f"longer than --chunk-tokens {chunk_tokens}" if too_long is None else
               f"does not fit the judge's context: {self.explain(too_long[0], *too_long[1])}")
        parts = chunk(document, self.chunk_fits(document.doc_id, chunk_tokens))
        if parts is not None and chunks is not None:
            chunks[document.doc_id] = parts
            return InputIssue(**where, severity="warning", message=(
                f"document {why}; scored in chunked mode: {len(parts)} chunks on paragraph boundaries, each "
                "starting with the last paragraph of the one before; one scaffold merged from theirs and labelled "
                "for the whole document; each summary's sentence check and direct score read the passages "
                "relevant to it"))
        numbers = ", ".join(str(c.record) for c in candidates[:10]) + (", ..." if len(candidates) > 10 else "")
        return InputIssue(**where, severity="error", message=(
            f"document {why}; not even one of its sentences fits on its own, so chunked mode cannot help; not "
            f"sent, never truncated: its {len(candidates)} record(s) ({numbers}) are skipped (shorten the "
            "document, or use a judge with a longer context)"))

    def summary(self, document: Document, c: Candidate) -> list[InputIssue]:
        """Warnings for a summary's fact-check or direct-score prompt that cannot fit (still scored)."""
        judge, limit = self.judge, self.limit
        # A bound first, without splitting the summary: every sentence ends at one of these characters.
        n_most = len(_SENTENCE_ENDS.findall(c.summary)) + 1
        if (len(document.text.encode("utf-8")) + 2 * len(c.summary.encode("utf-8")) + 12 * n_most
                + _judgment_overhead(judge) + max(judge.config.budget.for_items(n_most), judge.config.budget.direct_score)
                <= limit):
            return []
        issues = []
        for planned in judge.plan(None, document, c):  # no scaffold: the requests that do not depend on one
            found = self.measure(planned)
            if found is not None:
                then = ("this judgment is recorded as context_overflow without being sent" if found[1] else
                        "a refusal of this judgment is recorded as context_overflow")
                issues.append(InputIssue(
                    record=c.record, field=self.fields.summary, severity="warning", doc_id=c.doc_id, system=c.system,
                    message=f"judgment {'does' if found[1] else 'may'} not fit the judge's context: "
                            f"{self.explain(planned, *found)}; still scored: {then}, and its metrics are undefined"))
        return issues


def token_counter(config: ModelConfig) -> TokenCounter:
    """How to count this judge's prompt tokens without starting its engine: as its backend says."""
    return backend_class(config.backend).token_counter(config)


def _judgment_overhead(judge: Judge) -> int:
    """Bytes of the faithfulness and direct-score prompts without document and summary (the larger),
    with the chat template's share."""
    if judge.judgment_overhead is None:
        empty = {"document": "", "summary": "", "sentences": [""], "check": 1}  # check: the sentence of a v5 request
        judge.judgment_overhead = max(prompt_bytes(judge.prompts[t].render(**empty))
                                      for t in ("check_faithfulness", "direct_score")) + prompt_tokens_at_most(())
    return judge.judgment_overhead
