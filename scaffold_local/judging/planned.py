"""One planned request: what is sent, under which cache key, and what it is about."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pydantic import BaseModel

from ..backends.protocol import Request
from .readings import Reading


@dataclass(frozen=True)
class PlannedRequest:
    request: Request
    cache_key: str
    task: str
    doc_id: str
    system: str | None
    model: type[BaseModel]  # what its output is read into
    reading: Reading | None = None  # a reading: what it asks (method version 7)

    def with_budget(self, max_tokens: int) -> PlannedRequest:
        """The same request with another token budget, recorded under the planned cache key (a
        truncated output's one retry)."""
        sampling = self.request.sampling.model_copy(update={"max_tokens": max_tokens})
        return dataclasses.replace(self, request=self.request.model_copy(update={"sampling": sampling}))
