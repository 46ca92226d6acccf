"""What a run's input becomes before anything is scored, decided once for every front end: the records whose requests
fit the judge's context, those left out and why, the one-line summary of the run, and the notes its user should read."""

from __future__ import annotations

from dataclasses import dataclass

from ..data.inputs import InputIssue, LoadedInput
from ..judging.context_fit import fit_context
from ..judging.dispatch import ProgressFactory, no_progress
from ..judging.judge import Judge
from ..method.text import counted
from ..records import describe_decision


@dataclass(frozen=True)
class Prepared:
    """The input as the judge will score it, and what every front end tells its user before scoring:
    `Pipeline.prepare` decides it once; `score`, `extract`, `evaluate()` and the Inspect scorer render it."""

    loaded: LoadedInput  # the records whose requests fit the judge's context
    issues: list[InputIssue]  # the records left out (and the long documents read in chunks), each with why
    summary: str  # documents, summaries, systems, the judge, the method version, the verdict rule, the scaffolds
    notes: list[str]  # what the user should know: thresholds of another version, documents not in English

    @property
    def nothing_fits(self) -> bool:
        return not self.loaded.candidates


def prepare_for(judge: Judge, scaffolds: str, loaded: LoadedInput, extracting: bool,
                chunk_tokens: int | None = None, progress: ProgressFactory = no_progress) -> Prepared:
    """`Pipeline.prepare` for one judge (`scaffolds`: where the run's scaffolds come from, in words)."""
    fit = fit_context(judge, loaded, extraction=extracting, chunk_tokens=chunk_tokens, progress=progress)
    fitted, config, method = fit.loaded, judge.config, judge.method
    groups = f" in {counted(len(fitted.groups), 'group')}" if fitted.groups else ""
    decision = describe_decision(judge.thresholds, method.reads_verdicts, method.prior_free_kinds)
    summary = (f"{counted(len(fitted.documents), 'document')}{groups}, "
               f"{counted(len(fitted.candidates), 'summary', 'summaries')} from {counted(len(fitted.systems), 'system')}; "
               f"judge: {config.name} ({config.backend}); method version "
               f"{method.number}; {decision}; scaffolds: {scaffolds}")
    notes = []
    if config.thresholds and not judge.thresholds:
        calibrated = ", ".join(map(str, sorted(config.thresholds)))
        rule = "the judge finds likelier" if method.reads_verdicts else "it writes them"
        notes.append(f"the thresholds of {config.name} were calibrated under method version {calibrated}; under "
                     f"version {method.number} its verdicts count as {rule}"
                     + (" (or, where read against a prior, three times likelier)" if method.prior_free_kinds else ""))
    if extracting and (language := judge.extraction.language_note(fitted.documents.values())):
        notes.append(language)
    return Prepared(fitted, fit.issues, summary, notes)
