"""How long a run will take, said before it starts: the input's summaries at the rates that the same judge's newest
run in this store measured on this machine (engine seconds, requests and tokens per summary)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import RunNotReadable
from ..method.text import counted
from .run import in_store

LONG_RUN_S = 60  # a run expected to take longer is announced with its estimate


@dataclass(frozen=True)
class Estimate:
    summaries: int
    requests: int
    tokens: int
    seconds: float
    basis: str  # the run whose rates it scales

    def describe(self) -> str:
        minutes = f"{self.seconds / 60:.0f} min" if self.seconds >= 90 else f"{self.seconds:.0f} s"
        return (f"estimate: about {minutes} for {counted(self.summaries, 'summary', 'summaries')} ({self.requests:,} "
                f"requests, {self.tokens:,} tokens), at the rates run {self.basis} measured on this machine with "
                "this judge; what the store holds already is not sent again, so it can take less")


def estimate(store: Path, judge: str, method_version: int, summaries: int) -> Estimate | None:
    """`summaries` at the rates of the newest run of `judge` under `method_version` in `store` that spent engine time;
    None where there is none."""
    newest = None
    for run in in_store(store):
        if isinstance(run, RunNotReadable):
            continue
        try:
            spec, usage = run.spec, run.usage
        except (RunNotReadable, OSError, ValueError):  # a run's usage unreadable: nothing to scale
            continue
        judged = spec.counts.get("candidates") or 0
        if (spec.judge.get("name") != judge or spec.method_version != method_version or not judged
                or not usage.engine_seconds):
            continue
        if newest is None or (spec.created_at or "") > newest[0]:
            newest = (spec.created_at or "", run.dir.name, judged, usage, usage.engine_seconds)
    if newest is None:
        return None
    _, name, judged, usage, seconds = newest
    stages = (usage.extraction, usage.judgments)
    per_summary = summaries / judged
    return Estimate(summaries, round(sum(s.requests for s in stages) * per_summary),
                    round(sum(s.prompt_tokens + s.completion_tokens for s in stages) * per_summary),
                    seconds * per_summary, name)
