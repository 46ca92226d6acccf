"""Item drill-down: the verdict on every scaffold item for every summary, the main facts, main
questions and entity attributes each system misses that others keep, and the items every system
misses (often a scaffold problem rather than a system one)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..runs import Run
from ..views import VIEW_SPECS


@dataclass
class ItemVerdicts:
    doc_id: str
    view: str
    item_id: str
    label: str
    text: str
    kept: dict[str, bool] = field(default_factory=dict)  # system -> kept (systems with a verdict)
    justification: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.doc_id, self.view, self.item_id


def item_verdicts(run: Run) -> list[ItemVerdicts]:
    """Every judged item of the run's scaffolds with each system's verdict, in scaffold order."""
    items: dict[tuple[str, str, str], ItemVerdicts] = {}
    scaffolds = {}
    for candidate in run.candidates:
        key = candidate.get("scaffold_key")
        if not key or candidate.get("failed"):
            continue
        if key not in scaffolds:
            scaffolds[key] = run.scaffold(key)
        scaffold = scaffolds[key]
        if scaffold is None:
            continue
        records = run.records_for(candidate["doc_id"], candidate["system"])
        for spec, view in scaffold.each_view():
            name = spec.name
            record = records.get(name)
            verdicts = spec.read_record(record) if record is not None else None
            if verdicts is None or view is None:
                continue
            for judged in spec.judged(view):
                if verdicts.failure(judged.id):
                    continue  # no valid verdict: neither kept nor missed
                entry = items.setdefault((candidate["doc_id"], name, judged.id), ItemVerdicts(
                    candidate["doc_id"], name, judged.id, judged.label,
                    f"{judged.owner}: {judged.text}" if judged.owner else judged.text))
                entry.kept[candidate["system"]] = bool(verdicts.kept.get(judged.id))
                reason = verdicts.justification.get(judged.id) or verdicts.justification.get(judged.id.split(".")[0], "")
                entry.justification[candidate["system"]] = reason
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
