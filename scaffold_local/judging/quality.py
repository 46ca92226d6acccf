"""Scaffold quality checks (the paper's open problem: is the fixed reference any good?).

Without the judge: exact and near-duplicate items within a view (word-set Jaccard similarity of
at least `NEAR_DUPLICATE`), the main / supporting / other balance, and items whose text is exactly
as long as the schema allows (probably cut off). With the judge (`check-scaffolds`): the facts it
finds unsupported by the source, asked as a sentence check of the facts against the document.
Where human key facts exist, `human_coverage` gives the share of them some extracted fact covers
by word overlap.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..data.inputs import Candidate, Document
from ..method.scaffold import Scaffold
from ..method.schemas import SchemaLimits
from ..method.text import content_words, overlap
from ..method.views import sentences as sentence_check

NEAR_DUPLICATE = 0.8


@dataclass
class ScaffoldQuality:
    doc_id: str
    key: str
    near_duplicates: list[tuple[str, str, float]] = field(default_factory=list)  # (id, id, Jaccard)
    labels: dict[str, dict[str, int]] = field(default_factory=dict)  # view -> label -> count
    at_length_bound: list[str] = field(default_factory=list)  # item ids whose text hits statement_chars
    unsupported: list[str] | None = None  # fact ids the judge finds unsupported (None: not checked)
    unsupported_reasons: dict[str, str] = field(default_factory=dict)

    def problems(self) -> int:
        return len(self.near_duplicates) + len(self.at_length_bound) + len(self.unsupported or [])

    def describe(self) -> str:
        parts = [f"{view} " + "/".join(str(c.get(label, 0)) for label in ("main point", "supporting detail", "other"))
                 for view, c in self.labels.items()]
        text = f"{self.doc_id}: main/supporting/other {', '.join(parts)}"
        if self.near_duplicates:
            text += "; near-duplicates " + ", ".join(f"{a}~{b} ({s:.2f})" for a, b, s in self.near_duplicates)
        if self.at_length_bound:
            text += "; at the length bound (likely cut) " + ", ".join(self.at_length_bound)
        if self.unsupported is not None:
            text += "; unsupported by the source: " + (", ".join(self.unsupported) or "none")
        return text


def _jaccard(a: str, b: str) -> float:
    x, y = content_words(a), content_words(b)
    return len(x & y) / len(x | y) if x | y else 1.0


def inspect(scaffold: Scaffold, limits: SchemaLimits) -> ScaffoldQuality:
    """The checks that need no judge."""
    quality = ScaffoldQuality(scaffold.doc_id, scaffold.key)
    for spec, items in scaffold.each_view():
        if items is None:
            continue
        judged = spec.judged(items)
        quality.labels[spec.name] = dict(Counter(i.label for i in judged))
        for a, b in itertools.combinations(judged, 2):
            if a.owner != b.owner:  # two entities may share a fact; one entity should not repeat it
                continue
            similarity = _jaccard(a.text, b.text)
            if similarity >= NEAR_DUPLICATE:
                quality.near_duplicates.append((a.id, b.id, round(similarity, 3)))
        quality.at_length_bound += [i.id for i in judged if len(i.text) >= limits.statement_chars]
    return quality


def human_coverage(scaffold: Scaffold, human_facts: list[str], threshold: float = 0.5) -> float | None:
    """Share of human key facts that some extracted fact covers by word overlap."""
    ours = [f.text for f in scaffold.items("facts")]
    if not human_facts or not ours:
        return None
    return sum(max(overlap(h, o) for o in ours) >= threshold for h in human_facts) / len(human_facts)


def support_requests(judge: Any, scaffold: Scaffold, document: Document) -> list[Any]:
    """The facts, one per line, as a summary whose sentences the judge checks against the document
    (no requests when the splitter would not keep one fact per sentence)."""
    facts = [f.text for f in scaffold.items("facts")]
    candidate = Candidate(record=0, doc_id=document.doc_id, system="scaffold facts", summary="\n".join(facts))
    if len(judge.sentences(candidate.summary)) != len(facts):
        return []
    return judge.plan(None, document, candidate, task="check_faithfulness")


def read_support(quality: ScaffoldQuality, scaffold: Scaffold, record: Any, judge: Any) -> None:
    """The facts the judge's sentence check finds unsupported by the source, as its metrics would decide."""
    if record is None or record.parsed is None:
        return
    facts = scaffold.items("facts")
    quality.unsupported = []
    for i, (fact, supported) in enumerate(zip(facts, judge.sentence_verdicts(record, len(facts))), 1):
        if supported is None or supported >= 0.5:
            continue  # supported, or this fact's check failed: neither supported nor unsupported
        verdict = record.parsed.get(f"S{i}", {})
        category = judge.strategies[sentence_check.KIND].category(verdict)
        quality.unsupported.append(fact.id)
        quality.unsupported_reasons[fact.id] = f"{category}: {verdict.get('reason', '')}".rstrip(": ")


def quality_path(scaffold_path: Any) -> Any:
    """Where a scaffold's judge check is kept: beside the scaffold file."""
    return scaffold_path.with_name(scaffold_path.name.removesuffix(".json") + ".quality.json")


def save_support(path: Any, quality: ScaffoldQuality) -> None:
    import json

    path.write_text(json.dumps({"unsupported": quality.unsupported, "reasons": quality.unsupported_reasons}),
                    encoding="utf-8")


def load_support(path: Any, quality: ScaffoldQuality) -> None:
    import json

    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        quality.unsupported, quality.unsupported_reasons = saved["unsupported"], saved["reasons"]
