"""The views: one module each (facts, questions, entities; the sentence check and the direct score,
which need no scaffold), found through one registry.

A method version names the scaffold views it uses (`MethodVersion.views`), so adding a view to the
registry changes no earlier version: neither its requests nor its scaffold keys. `register()` adds a
view from outside the package (a test registers one); `METRICS` is every metric column in display
order: each view's headline score, F, each view's other metrics, the direct score, ROUGE-L. It is
updated in place, so every module that imported it sees views registered later.
"""

from __future__ import annotations

from ...errors import UsageError
from ..versions import MethodVersion
from . import direct_score, labelling, sentences
from .entities import ENTITIES
from .facts import FACTS
from .questions import QUESTIONS
from .spec import JudgedItem, ReadingRules, ViewSpec, ViewVerdicts

__all__ = ["JudgedItem", "METRICS", "ReadingRules", "VIEW_SPECS", "ViewSpec", "ViewVerdicts",
           "judgment_kind", "register", "tasks_of", "unregister", "verdict_field", "views_of"]

VIEW_SPECS: dict[str, ViewSpec] = {}
METRICS: dict[str, str] = {}  # machine-readable key -> display name, in display order


def _order_metrics() -> None:
    headlines = {k: v for spec in VIEW_SPECS.values() for k, v in list(spec.metrics.items())[:1]}
    details = {k: v for spec in VIEW_SPECS.values() for k, v in list(spec.metrics.items())[1:]}
    METRICS.clear()
    METRICS.update({**headlines, **sentences.METRICS, **details, **direct_score.METRICS, "rouge_l": "ROUGE-L"})


def register(spec: ViewSpec) -> None:
    """Add a view. Its metric keys must be new: two views never write one column."""
    taken = set(METRICS) - {k for name, s in VIEW_SPECS.items() if name == spec.name for k in s.metrics}
    if clash := sorted(taken & set(spec.metrics)):
        raise UsageError(f"view {spec.name!r}: metric {', '.join(clash)} already belongs to another view")
    VIEW_SPECS[spec.name] = spec
    _order_metrics()


def unregister(name: str) -> None:
    VIEW_SPECS.pop(name, None)
    _order_metrics()


def views_of(method: MethodVersion) -> dict[str, ViewSpec]:
    """The scaffold views a method version uses, in its order."""
    unknown = [name for name in method.views if name not in VIEW_SPECS]
    if unknown:
        raise UsageError(f"method version {method.number} uses views not registered: {', '.join(unknown)}")
    return {name: VIEW_SPECS[name] for name in method.views}


def tasks_of(method: MethodVersion) -> tuple[str, ...]:
    """Every task a method version's judge has a template for: extraction for each of its views, reading main
    points where it does, alignment for each view, then the sentence check and the direct score."""
    views = views_of(method).values()
    main = (labelling.MAIN_TASK,) if method.reads_main else ()
    return (*(s.extract_task for s in views), *main, *(s.align_task for s in views), sentences.TASK, direct_score.TASK)


def judgment_kind(task: str) -> str | None:
    """What a judgment task's records are about: a view's name, "faithfulness" or "direct_score";
    None for extraction and unknown tasks."""
    if task in (sentences.TASK, direct_score.TASK):
        return sentences.KIND if task == sentences.TASK else direct_score.KIND
    return next((name for name, spec in VIEW_SPECS.items() if spec.align_task == task), None)


def verdict_field(task: str) -> str | None:
    """The verdict word whose probability is P(kept) in a task's output ("inferred"), or None."""
    return next((spec.verdict_field for spec in VIEW_SPECS.values() if spec.align_task == task), None)


for _spec in (FACTS, QUESTIONS, ENTITIES):
    register(_spec)
