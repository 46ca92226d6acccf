"""What a verdict is about (`JudgedItem`) and one summary's verdicts on a view (`ViewVerdicts`):
the two shapes the metrics, the report and the judge share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class JudgedItem:
    """One thing a verdict is about: a fact, a question, or an entity attribute."""

    id: str
    label: str
    text: str
    owner: str | None = None  # the entity an attribute belongs to


@dataclass(frozen=True)
class ViewVerdicts:
    """One summary's verdicts for one view, by judged item id."""

    kept: Mapping[str, float]  # inferred / answered / preserved: 1 or 0, or P(kept) with weighted verdicts
    cited: Mapping[str, Sequence[int]] = field(default_factory=dict)  # summary sentence ids
    justification: Mapping[str, str] = field(default_factory=dict)
    # Output ids (a fact, a question, an entity) whose verdict failed, with why: neither kept nor missed.
    failed: Mapping[str, str] = field(default_factory=dict)
    # Kept items whose cited sentences are unknown (their citation reading failed), with why: the verdict stands.
    uncited: Mapping[str, str] = field(default_factory=dict)

    def failure(self, item_id: str) -> str | None:
        """Why this item has no valid verdict (an attribute: its entity's verdict), or None."""
        return self.failed.get(item_id) or self.failed.get(item_id.split(".")[0])
