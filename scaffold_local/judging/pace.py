"""How long sending will take, said before it starts: the requests' new prompt text at the rate the store measured for
this judge on this machine, and every engine call measured into that rate. Where no rate is known yet, the first
engine call measures one and the estimate follows it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..data.store.rates import EngineRates, Rate, Work
from ..method.text import counted
from .planned import PlannedRequest

SAID_FROM_S = 30  # an estimate below this is not worth a line


def _shared_prefix(a: str, b: str) -> int:
    """Length of the common prefix, found by halving (string slices compare in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def prompt_text(planned: PlannedRequest) -> str:
    return "\n".join(m.content for m in planned.request.messages)


def work_by_task(planned: Sequence[PlannedRequest], previous: str = "") -> dict[str, Work]:
    """Per task, the requests and the prompt characters each shares with none sent just before it (the first with
    `previous`), in sending order. A task has a rate of its own: its prompts share their parts alike (a key-fact reading
    shares all but the item, a sentence check all but the sentence), and readings cost differently from generations."""
    work: dict[str, Work] = {}
    for p in planned:
        text = prompt_text(p)
        work[p.task] = work.get(p.task, Work()) + Work(1, len(text) - _shared_prefix(previous, text))
        previous = text
    return work


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


class Pace:
    """The estimates of one judge's sends, and the measurements that keep its rates."""

    def __init__(self, rates: EngineRates | None, judge: str, method_version: int,
                 announce: Callable[[str], None] | None):
        self.rates, self.judge, self.method_version = rates, judge, method_version
        self.announce = announce
        self._unmeasured: tuple[str, dict[str, Work]] | None = None  # (label, work) awaiting its first rate
        self._last_sent = ""  # the prompt an engine computed last: its prefix is still cached
        self.said: list[str] = []  # every estimate given, for the results that record their cost

    def _say(self, text: str) -> None:
        self.said.append(text)
        if self.announce is not None:
            self.announce(text)

    def _rate(self, task: str) -> Rate | None:
        return self.rates.get(self.judge, self.method_version, task) if self.rates else None

    def _seconds(self, work: dict[str, Work]) -> float | None:
        rates = {task: self._rate(task) for task in work}
        if any(rate is None for rate in rates.values()):
            return None
        return sum(rate.seconds_for(work[task]) for task, rate in rates.items() if rate is not None)

    def before(self, label: str, planned: Sequence[PlannedRequest]) -> None:
        """Say how long these requests will take, where that is long or not known yet."""
        if not planned:
            return
        work = work_by_task(planned, self._last_sent)
        seconds = self._seconds(work)
        requests = counted(len(planned), "request")
        if seconds is None:
            self._unmeasured = (label, work)
            self._say(f"{label}: {requests} to send; no rate measured yet for judge {self.judge} on this machine, "
                      "so an estimate follows the first engine call")
        elif seconds >= SAID_FROM_S:
            self._say(f"{label}: {requests} to send, estimated {_duration(seconds)} at the rate this judge ran at "
                      "on this machine (what the store holds already is not counted)")

    def measured(self, batch: Sequence[PlannedRequest], seconds: float) -> None:
        """One engine call's seconds, shared among the tasks it computed by their new prompt characters; the
        estimate owed since `before` said where none was known, now that a rate is."""
        work = work_by_task(batch, self._last_sent)
        self._last_sent = prompt_text(batch[-1])
        total = sum(w.characters for w in work.values()) or 1
        if self.rates is not None and seconds > 0:
            self.rates.add(self.judge, self.method_version,
                           {task: (part, seconds * part.characters / total) for task, part in work.items()})
        if self._unmeasured is None or self.rates is None:
            return
        label, owed = self._unmeasured
        left = {task: Work(max(w.requests - work.get(task, Work()).requests, 0),
                           max(w.characters - work.get(task, Work()).characters, 0)) for task, w in owed.items()}
        self._unmeasured = (label, left)
        estimate = self._seconds(left)
        if estimate is not None:
            self._unmeasured = None
            if estimate >= SAID_FROM_S:
                self._say(f"{label}: estimated {_duration(estimate)} more, at the rate of the first engine call")

