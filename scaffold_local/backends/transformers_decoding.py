"""What holds each row of a transformers batch to its own request: its grammar's logits processor, its token budget
and stop tokens (RowwiseConstraint), and a row caught repeating one block: stopped, and closed after its last
complete item where the schema allows (the caller's `repetition` check every REPETITION_CHECK_EVERY steps)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .base import validate_json
from .protocol import Request, Result, StepCallback, Usage


class RowwiseConstraint:
    """Applies each row's own outlines processor to that row's logits, and tracks per-row token
    budgets. A row that has emitted a stop token or spent its budget is left alone (transformers
    pads it), so no grammar engine ever sees tokens after its own end."""

    def __init__(self, processors: list[Any], prompt_width: int, budgets: list[int], stop_ids: set[int],
                 on_step: StepCallback | None = None):
        self.processors = processors
        self.prompt_width = prompt_width
        self.budgets = budgets
        self.stop_ids = stop_ids
        self.on_step = on_step
        self.finished = [False] * len(processors)
        self.repeating: dict[int, Repetition] = {}  # rows stopped as degenerate

    def _update_finished(self, input_ids: Any) -> None:
        produced = input_ids.shape[1] - self.prompt_width
        if produced == 0:
            return
        last = input_ids[:, -1].tolist()
        for i, token in enumerate(last):
            if token in self.stop_ids or produced >= self.budgets[i]:
                self.finished[i] = True
        if produced % REPETITION_CHECK_EVERY == 0:
            for i in range(len(last)):
                if not self.finished[i]:
                    found = repetition(input_ids[i, self.prompt_width:].tolist())
                    if found is not None:
                        self.repeating[i], self.finished[i] = found, True
        if self.on_step is not None:
            self.on_step(sum(self.finished), len(self.finished), produced, max(self.budgets))

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        self._update_finished(input_ids)
        for i, processor in enumerate(self.processors):
            if processor is not None and not self.finished[i]:
                scores[i : i + 1] = processor(input_ids[i : i + 1], scores[i : i + 1])
        return scores

    def budget_reached(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        """transformers StoppingCriteria: per-row bool tensor, true once a row spent its budget."""
        import torch

        produced = input_ids.shape[1] - self.prompt_width
        return torch.tensor([produced >= b or i in self.repeating for i, b in enumerate(self.budgets)],
                            device=input_ids.device)


def stopped_loop(request: Request, text: str, loop: Repetition, usage: Usage, elapsed: float) -> Result:
    """A row stopped in a loop: its output closed after the last complete list item when that is
    schema-valid (the repeated items are duplicates, which assembly drops and notes), else a
    validation failure keeping the raw text."""
    what = (f"degenerate output stopped after {loop.stopped_at} tokens: the same {loop.period}-token block "
            f"{loop.times} times in a row")
    import jsonschema

    closed = close_after_last_item(text)
    if closed is not None and request.json_schema is not None:
        try:
            validate_json(json.loads(closed), request.json_schema)
        except (ValueError, jsonschema.ValidationError):
            closed = None
    if closed is None:
        return Result(id=request.id, text=text, finish_reason="error", error=what, failure="validation", usage=usage,
                      latency_s=round(elapsed, 3))
    return Result(id=request.id, text=closed, finish_reason="stop", error=f"{what}; closed after its last complete item",
                  usage=usage, latency_s=round(elapsed, 3))


def close_after_last_item(text: str) -> str | None:
    """A JSON prefix cut after its last complete array element, its open brackets closed; None
    when no array element was completed."""
    stack: list[str] = []
    in_string = escaped = False
    last: tuple[int, tuple[str, ...]] | None = None
    for i, char in enumerate(text):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
            continue
        if char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}":
            if not stack:
                return None
            stack.pop()
            if char == "}" and stack and stack[-1] == "[":
                last = (i + 1, tuple(stack))
    if last is None:
        return None
    end, still_open = last
    return text[:end] + "".join("]" if c == "[" else "}" for c in reversed(still_open))


REPETITION_CHECK_EVERY = 16  # decoding steps between checks
REPETITION_TIMES = 4  # a block this many times in a row, at the end of the output, is a loop
REPETITION_PERIODS = range(4, 129)  # block lengths checked, in tokens


@dataclass(frozen=True)
class Repetition:
    period: int
    times: int
    stopped_at: int


def repetition(tokens: list[int]) -> Repetition | None:
    """The output ends in one block of tokens repeated REPETITION_TIMES times: a small model caught
    in a loop (the same fact or attribute over and over until the budget runs out, which on CPU
    holds the whole batch for minutes). A schema-valid output repeats its keys and punctuation but
    not whole items, so it never matches; duplicate items would be dropped in assembly anyway."""
    for period in REPETITION_PERIODS:
        span = period * REPETITION_TIMES
        if span > len(tokens):
            break
        block = tokens[-period:]
        if all(tokens[-(k + 1) * period : len(tokens) - k * period] == block for k in range(1, REPETITION_TIMES)):
            return Repetition(period, REPETITION_TIMES, len(tokens))
    return None
