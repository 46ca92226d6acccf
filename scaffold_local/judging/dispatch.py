"""Sending planned requests to the engine: started on first need, fed in batches of whole documents,
each result checked against the batch-first protocol and turned into a record. An output cut off
at max_tokens is sent once more with twice the budget before it is recorded as truncated."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from .. import faults
from ..backends import Backend, Result
from ..records import Record
from .config import ModelConfig
from .judge import Judge
from .pace import Pace
from .planned import PlannedRequest


class Advance(Protocol):
    def __call__(self, n: int, detail: str = "") -> None:
        """n more requests done; `detail` says what is happening inside the current engine call."""


# progress(label, total) -> context manager yielding advance(n, detail="")
ProgressFactory = Callable[[str, int], contextlib.AbstractContextManager[Advance]]


@contextlib.contextmanager
def no_progress(label: str, total: int) -> Iterator[Advance]:
    yield lambda n, detail="": None


class Dispatcher:
    def __init__(self, config: ModelConfig, judge: Judge, backend_factory: Callable[[ModelConfig], Backend],
                 batch_requests: int, progress: ProgressFactory = no_progress, pace: Pace | None = None):
        self.config = config
        self.judge = judge
        self.batch_requests = batch_requests
        self.progress = progress
        self.pace = pace or Pace(None, config.name, judge.method.number, None)
        self._backend_factory = backend_factory
        self._backend: Backend | None = None
        self.engine_description: dict[str, Any] | None = None  # set once the engine has started
        self.engine_seconds = 0.0  # wall time inside the engine's generate calls
        # Attempts a backend sent again within a call (HTTP 429, 5xx, timeouts, dropped connections), by the
        # failure class of the attempt that failed (`Backend.retries`).
        self.retries: Counter[str] = Counter()

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = self._backend_factory(self.config)
            self.engine_description = self._backend.describe()
        return self._backend

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def send(self, planned: Sequence[PlannedRequest], label: str, on_batch: Callable[[list[Record]], None]) -> None:
        """Send requests in batches and hand their records on: each as its engine reports it finished, the
        rest (and a truncated output's retry) when the call returns."""
        if not planned:
            return
        self.pace.before(label, planned)
        with self.progress(label, len(planned)) as advance:
            for batch in batches(planned, self.batch_requests):
                started = self.engine_seconds
                handed: dict[int, Result] = {}  # the results handed on before the call returned

                def arrived(index: int, result: Result, batch: list[PlannedRequest] = batch,
                            handed: dict[int, Result] = handed) -> None:
                    record = self.judge.record(batch[index], result)
                    if record.failure != "truncated":  # a truncated output waits for its retry
                        on_batch([record])
                        handed[index] = result
                        advance(1)

                results = self._generate(batch, advance, arrived)
                records = {i: self.judge.record(p, r) for i, (p, r) in enumerate(zip(batch, results))
                           if handed.get(i) != r}  # the call's own result is the last word
                truncated = [i for i, r in records.items() if r.failure == "truncated"]
                if truncated:
                    retries = [batch[i].with_budget(2 * batch[i].request.sampling.max_tokens) for i in truncated]
                    for i, retry, result in zip(truncated, retries, self._generate(retries, advance)):
                        if result.failure != "context_overflow":  # a budget the context cannot hold: keep the first
                            records[i] = self.judge.record(retry, result, attempts=2)
                on_batch(list(records.values()))
                advance(len(batch) - len(handed))
                self.pace.measured(batch, self.engine_seconds - started)

    def _generate(self, batch: Sequence[PlannedRequest], advance: Advance,
                  arrived: Callable[[int, Result], None] | None = None) -> list[Result]:
        backend = self.backend  # started (and its start-up not timed) before the clock runs
        backend.on_result = arrived
        if backend.reports_steps:  # engines that can say how far a long call has got
            backend.on_step = lambda done, rows, tokens, most: advance(
                0, f"engine call: {done}/{rows} done, {tokens} tokens of at most {most}")
        faults.point("engine_call", keys=[p.cache_key for p in batch])
        counted = Counter(backend.retries)
        started = time.perf_counter()
        results = backend.generate([p.request for p in batch])
        self.engine_seconds += time.perf_counter() - started
        self.retries += backend.retries - counted
        faults.point("engine_done")
        if len(results) != len(batch) or any(r.id != p.request.id for r, p in zip(results, batch)):
            raise RuntimeError(f"backend {self.config.backend!r} broke the protocol: results out of order")
        return results


def prefix_order(planned: PlannedRequest) -> tuple[str, str, str]:
    """Sort key for sending: all summaries of a scaffold adjacent, then the same task together, so
    that requests sharing a prompt prefix (instructions, document or scaffold) follow each other.
    Readings (method version 7) share the instructions, then the summary, across tasks: one summary's
    readings together, task by task."""
    if planned.reading is not None:
        return planned.doc_id, planned.system or "", planned.task
    return planned.doc_id, planned.task, planned.system or ""


def batches(planned: Sequence[PlannedRequest], size: int) -> Iterator[list[PlannedRequest]]:
    """Batches of at most `size`, cut between documents when possible so that all requests of one
    scaffold travel together (a document larger than `size` is split), and never inside a group of readings
    computed together (a larger group is a batch of its own)."""
    batch: list[PlannedRequest] = []
    for _, members in itertools.groupby(planned, key=lambda p: p.doc_id):
        group = list(members)
        if batch and len(batch) + len(group) > size:
            yield batch
            batch = []
        for together, unit in itertools.groupby(group, key=lambda p: p.request.together or id(p)):
            for request in unit:
                if len(batch) >= size and not (request.request.together and batch[-1].request.together == together):
                    yield batch
                    batch = []
                batch.append(request)
    if batch:
        yield batch
