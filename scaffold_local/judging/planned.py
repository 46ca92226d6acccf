"""One planned request: what is sent, under which cache key, and what it is about."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from ..backends.protocol import Request
from ..method.schemas import schema_text
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


def read_together(planned: Sequence[PlannedRequest], fingerprint: str) -> list[PlannedRequest]:
    """The readings among `planned` marked to be computed together, one group per owner (a summary's readings; a
    document's prior readings, which no summary owns): each names its group (a digest of every member's cache key, so
    a stored result is reused only for the same group) and is keyed with it."""
    owners: dict[str | None, list[str]] = {}
    for p in planned:
        if p.reading is not None:
            owners.setdefault(p.system, []).append(p.cache_key)
    groups = {owner: hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:32]
              for owner, keys in owners.items() if len(keys) >= 2}
    out = []
    for p in planned:
        if p.reading is not None and p.system in groups:
            request = p.request.model_copy(update={"together": groups[p.system]})
            p = dataclasses.replace(p, request=request, cache_key=request.cache_key(fingerprint, schema_text(p.model)))
        out.append(p)
    return out
