"""Fitting the judge's context before anything is sent: counting prompt tokens as the judge's engine
will, and leaving out the documents whose requests cannot fit."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..backends import backend_class
from ..backends.tokens import TokenCounter, prompt_bytes, prompt_tokens_at_most
from ..data import Candidate, Document, InputIssue, LoadedInput
from .judge import Judge, PlannedRequest

if TYPE_CHECKING:
    from ..config import ModelConfig


_SENTENCE_ENDS = re.compile(r"[.!?;:。！？…\n]")


@dataclass
class ContextFit:
    """What `Judge.fit_context` found: the input without the documents that cannot fit (a copy, its
    issues followed by the new ones), the new issues, and the skipped documents with the reason."""

    loaded: LoadedInput
    issues: list[InputIssue]
    skipped: dict[str, str]  # doc_id -> why


def fit_context(judge: Judge, loaded: LoadedInput, counter: TokenCounter | None = None,
                extraction: bool = True) -> ContextFit:
    """Check, before any request is sent, that every request whose size the input alone decides fits
    the judge's context (prompt + max_tokens <= max_model_len):

    - a document whose extraction prompt cannot fit is skipped, never sent and never truncated: its
      records leave the input and one error issue names it, with the token count and the limit;
    - a summary whose faithfulness check or direct score cannot fit (a long summary of a long
      document) is warned about: it is still scored, and that judgment is recorded as
      context_overflow by the engine without being sent, its metrics undefined with that reason.

    Prompts are counted with the judge's tokenizer where it has one (`token_counter`), only when a
    byte bound does not already show that they fit; an estimate is labelled as one, and skips
    nothing (the server decides). `extraction`: False where the scaffolds come from elsewhere (a
    file, another judge or run), so only the judgments are checked."""
    check = _ContextCheck(judge, counter or token_counter(judge.config), loaded)
    records_of: dict[str, list[Candidate]] = {}
    for c in loaded.candidates:
        records_of.setdefault(c.doc_id, []).append(c)
    issues: list[InputIssue] = []
    skipped: dict[str, str] = {}
    for doc_id, candidates in records_of.items():
        document = loaded.documents[doc_id]
        issue = check.document(document, candidates) if extraction else None
        if issue is not None:
            issues.append(issue)
            if issue.severity == "error":
                skipped[doc_id] = issue.message
                continue
        issues.extend(i for c in candidates for i in check.summary(document, c))
    kept = dataclasses.replace(loaded, candidates=[c for c in loaded.candidates if c.doc_id not in skipped],
                               documents={d: doc for d, doc in loaded.documents.items() if d not in skipped},
                               issues=[*loaded.issues, *issues])
    return ContextFit(loaded=kept, issues=issues, skipped=skipped)


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

    def document(self, document: Document, candidates: list[Candidate]) -> InputIssue | None:
        """An error (skip the document) or a warning (an estimate only) for its first extraction
        prompt that cannot fit; None when all fit."""
        for planned in self.judge.extraction_requests(document):
            found = self.measure(planned)
            if found is None:
                continue
            tokens, exact = found
            numbers = ", ".join(str(c.record) for c in candidates[:10]) + (", ..." if len(candidates) > 10 else "")
            where = {"record": candidates[0].record, "field": self.fields.document, "doc_id": document.doc_id}
            if exact:
                why = f"document does not fit the judge's context: {self.explain(planned, tokens, exact)}"
                return InputIssue(**where, severity="error", message=(
                    f"{why}; not sent, never truncated: its {len(candidates)} record(s) ({numbers}) are "
                    f"skipped (shorten or split the document, or use a judge with a longer context)"))
            return InputIssue(**where, severity="warning", message=(
                f"document may not fit the judge's context: {self.explain(planned, tokens, exact)}; sent "
                f"anyway: a refusal is recorded as context_overflow for its {len(candidates)} record(s)"))
        return None

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
