"""Document groups: a summary of several documents is aligned against the union of their scaffolds.

Each member is extracted once, like any document, and its stored scaffold is reused by every group
it is in, so the same documents can be grouped many ways at no extraction cost. The union keeps the
members' items and labels in member order, numbered afresh (F1.. across the group) so the judge
sees ids shaped as in any scaffold, and records each item's member document (`item_sources`): a
group summary's coverage can then be read per member as well as for the group.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from .metrics import SummaryScores, SummaryVerdicts, score_summary
from .scaffold import Scaffold
from .views.assembly import rewritten

_NUMBERED = re.compile(r"(\D*)\d+")


def union_scaffold(group: str, document_sha256: str, members: Sequence[Scaffold]) -> Scaffold:
    """The group's scaffold: every member's items, renumbered, each with its member document. A view
    that failed for any member fails for the group (its coverage would be the other members' only)."""
    views: dict[str, tuple[Any, ...] | None] = {}
    failures: dict[str, str] = {}
    sources: dict[str, str] = {}
    for name in dict.fromkeys(n for m in members for n in m.views):
        broken = [f"{m.doc_id}: {m.failures.get(name, 'view not given')}" for m in members if m.view(name) is None]
        if broken:
            views[name], failures[name] = None, "; ".join(broken)
            continue
        items: list[Any] = []
        for member in members:
            for item in member.items(name):
                renamed = _renumbered(item, len(items) + 1)
                sources[renamed.id] = member.doc_id
                items.append(renamed)
        views[name] = tuple(items)
    languages = {m.language for m in members}
    key = hashlib.sha256(json.dumps(["group", *(m.key for m in members)]).encode()).hexdigest()
    return Scaffold(key=key, doc_id=group, document_sha256=document_sha256, views=views, failures=failures,
                    assembly=max(m.assembly for m in members),
                    origin="user" if any(m.origin == "user" for m in members) else "extracted",
                    language=languages.pop() if len(languages) == 1 else None,
                    members=tuple(m.doc_id for m in members), item_sources=sources)


def _renumbered(item: Any, number: int) -> Any:
    """The item under the id `<its letters><number>`; ids nested under it ("E1.A2") follow."""
    old = item.id
    match = _NUMBERED.fullmatch(old)
    new = f"{match.group(1) if match else old + '-'}{number}"

    def rename(d: dict[str, Any]) -> dict[str, Any]:
        own = d.get("id")
        if isinstance(own, str) and (own == old or own.startswith(old + ".")):
            return {**d, "id": new + own[len(old):]}
        return d

    return rewritten(item, rename)


def member_scaffold(scaffold: Scaffold, member: str) -> Scaffold:
    """A group's scaffold narrowed to the items of one member document."""
    views = {name: None if items is None else tuple(i for i in items if scaffold.item_sources.get(i.id) == member)
             for name, items in scaffold.views.items()}
    return scaffold.model_copy(update={"views": views, "doc_id": member})


def member_scores(scaffold: Scaffold, verdicts: SummaryVerdicts, system: str, n_sentences: int) -> list[SummaryScores]:
    """A group summary's coverage of each member document: every view metric over that member's items
    (FPS, FC, Main/Supp FC, Fact Focus: the share of sentences given to its facts, QPS, QC, EPS). F,
    the direct score and ROUGE-L judge the summary as a whole and are left out."""
    per_member = SummaryVerdicts(views=verdicts.views, failures=verdicts.failures)
    kept = {key for spec, _ in scaffold.each_view() for key in spec.metrics}
    rows = []
    for member in scaffold.members:
        scores = score_summary(member_scaffold(scaffold, member), per_member, system=system, n_sentences=n_sentences)
        rows.append(scores.model_copy(update={
            "values": {k: v for k, v in scores.values.items() if k in kept},
            "undefined": {k: v for k, v in scores.undefined.items() if k in kept}}))
    return rows
