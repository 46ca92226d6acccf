"""Item drill-down: the verdict on every scaffold item for every summary, the main facts, main
questions and entity attributes each system misses that others keep, and the items every system
misses (often a scaffold problem rather than a system one)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..method.views import VIEW_SPECS
from ..runs.run import Run
from .counted import summary_evidence


@dataclass
class ItemVerdicts:
    doc_id: str
    view: str
    item_id: str
    label: str
    text: str
    kept: dict[str, bool] = field(default_factory=dict)  # system -> kept (systems with a verdict)
    justification: dict[str, str] = field(default_factory=dict)
    p: dict[str, float | None] = field(default_factory=dict)  # system -> P(kept), where recorded
    threshold: float | None = None  # the P counted as kept, where one applies

    @property
    def key(self) -> tuple[str, str, str]:
        return self.doc_id, self.view, self.item_id


def item_verdicts(run: Run) -> list[ItemVerdicts]:
    """Every counted item of the run's scaffolds with each system's verdict as the metrics counted it
    (thresholds applied), in scaffold order; items without a valid verdict are left out."""
    items: dict[tuple[str, str, str], ItemVerdicts] = {}
    for candidate in run.candidates:
        if not candidate.get("scaffold_key") or candidate.get("failed"):
            continue
        for item in summary_evidence(run, candidate).items:
            if item.status not in ("kept", "missed"):
                continue  # failed, or labelled so that no metric counts it
            entry = items.setdefault((candidate["doc_id"], item.view, item.id), ItemVerdicts(
                candidate["doc_id"], item.view, item.id, item.label, item.text))
            entry.kept[candidate["system"]] = item.status == "kept"
            entry.justification[candidate["system"]] = item.justification
            entry.p[candidate["system"]] = item.p
            entry.threshold = item.threshold if item.threshold is not None else entry.threshold
    return list(items.values())


@dataclass
class Miss:
    item: ItemVerdicts
    kept_by_others: int  # how many other systems keep it
    others: int


@dataclass
class ItemDrillDown:
    missed_by_system: dict[str, list[Miss]]  # most telling first: items others keep
    missed_by_all: list[ItemVerdicts]


def drill_down(items: list[ItemVerdicts], systems: list[str], per_system: int = 10) -> ItemDrillDown:
    # Items worth listing when missed, as each view says (main facts and questions, every attribute).
    relevant = [i for i in items if i.label in VIEW_SPECS[i.view].drill_labels]
    missed: dict[str, list[Miss]] = {s: [] for s in systems}
    for item in relevant:
        for system, kept in item.kept.items():
            if not kept:
                others = [k for s, k in item.kept.items() if s != system]
                missed[system].append(Miss(item, sum(others), len(others)))
    for system in missed:
        missed[system].sort(key=lambda m: (-m.kept_by_others, m.item.doc_id, m.item.item_id))
        missed[system] = missed[system][:per_system]
    everyone = [i for i in relevant if len(i.kept) >= 2 and not any(i.kept.values())]
    return ItemDrillDown(missed, everyone)
