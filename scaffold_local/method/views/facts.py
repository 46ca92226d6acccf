"""The facts view: atomic facts of the source, each inferred or not from the summary (FPS, FC,
Main FC, Supp FC, Fact Focus)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..schemas import Label, SchemaLimits, cited_alignment_model, list_of, statement, strict_model
from ..versions import MethodVersion
from .assembly import unique
from .scoring import SCORED_LABELS, Scores, by_label, failed_ids, ratio
from .spec import AssembledView, JudgedItem, ReadingRules, ViewSpec, ViewVerdicts, read_cited


class Fact(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    text: str
    label: Label


@cache
def fact_extraction_model(limits: SchemaLimits, method: MethodVersion) -> type[BaseModel]:
    item = strict_model("ExtractedFact", fact=(statement(limits), ...), label=(Label, ...))
    return list_of("FactExtraction", "facts", item, limits.max_facts)


def fact_alignment_model(fact_ids: tuple[str, ...], n_sentences: int, limits: SchemaLimits,
                         method: MethodVersion) -> type[BaseModel]:
    return cited_alignment_model("FactAlignment", "inferred", fact_ids, n_sentences, limits, method)


def assemble_facts(parsed: Mapping[str, Any]) -> AssembledView:
    items, notes = unique(parsed["facts"], "fact", "facts", lambda i: f"F{i}", "fact")
    return tuple(Fact(id=f"F{i}", text=f["fact"], label=f["label"]) for i, f in enumerate(items, 1)), notes


def fact_metrics(out: Scores, judged: Sequence[JudgedItem], verdicts: ViewVerdicts, n_sentences: int) -> None:
    main, supp = by_label(judged, verdicts)
    out.preference("fps", main, supp, "fact", "scaffold has no main facts")
    out.share("fc", [*main, *supp], "fact", "scaffold has no main or supporting facts")
    out.share("main_fc", main, "main fact", "scaffold has no main facts")
    out.share("supp_fc", supp, "supporting fact", "scaffold has no supporting facts")
    _fact_focus(out, judged, verdicts, n_sentences, failed_ids([*main, *supp]))


def _fact_focus(out: Scores, judged: Sequence[JudgedItem], verdicts: ViewVerdicts, n_sentences: int,
                failed: list[str]) -> None:
    """Sentences aligned to a kept main or supporting fact / all sentences: a sentence that conveys only
    "other" facts is not aligned (other facts never affect a score; EPS is the one exception). Not a
    share of facts: a failed fact, or a kept one whose citation was not read, could align a sentence no other
    fact aligns, so with one the value is exact only where the others already align every sentence, and
    undefined otherwise."""
    scored = [i for i in judged if i.label in SCORED_LABELS]
    aligned = {s for i in scored if verdicts.kept.get(i.id, 0) >= 0.5 for s in verdicts.cited.get(i.id, ())}
    uncited = [i.id for i in scored if i.id in verdicts.uncited]
    unknown = "; ".join([*([f"no valid verdict for {', '.join(failed)}"] if failed else []),
                         *([f"no citation read for {', '.join(uncited)}"] if uncited else [])])
    if not scored:
        out.set("fact_focus", None, "scaffold has no main or supporting facts")
    elif unknown and len(aligned) < n_sentences:
        out.set("fact_focus", None, f"{unknown}, which could align a sentence no judged fact aligns")
    else:
        out.set("fact_focus", ratio(len(aligned), n_sentences), "summary has no sentences")
        if unknown:
            counted = len(scored) - len(failed) - len(uncited)
            out.notes["fact_focus"] = (f"Fact Focus from {counted} of {len(scored)} facts ({unknown}): exact, as "
                                       "they align every sentence")


FACTS = ViewSpec(
    name="facts", noun="fact", title="Facts", item_model=Fact,
    extraction_model=fact_extraction_model,
    item_counts=lambda limits: (limits.min_facts, limits.max_facts),
    assemble=assemble_facts,
    judged=lambda facts: [JudgedItem(f.id, f.label, f.text) for f in facts],
    prompt_items=lambda facts: [{"id": f.id, "text": f.text, "label": f.label} for f in facts],
    alignment_model=lambda facts, n, limits, method: fact_alignment_model(
        tuple(f.id for f in facts), n, limits, method),
    read=read_cited("inferred"),
    metrics={"fps": "FPS", "fc": "FC", "main_fc": "Main FC", "supp_fc": "Supp FC", "fact_focus": "Fact Focus"},
    score=fact_metrics,
    verdict_field="inferred",
    reading=ReadingRules("inferred", lambda facts: [{"id": f.id, "text": f.text, "label": f.label} for f in facts
                                                    if f.label in SCORED_LABELS], evidence=True),
)
