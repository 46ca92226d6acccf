"""The labelling pass of chunked mode (long_documents.py): the items extracted part by part from a
long document, labelled main / supporting / other for the whole document in one request. (Method version 19 reads
each item's importance instead: `MAIN_TASK`, judging/main_points.py.)

Not a view and not part of any method version's prompt set: it is asked only for documents longer
than the judge's context, which every earlier version refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from ..schemas import Label, strict_model
from .assembly import rewritten
from .judged import JudgedItem

TASK = "label_items"
MAIN_TASK = "main_point"  # method version 19: each fact's and question's importance read, one item per reading
TOKENS_PER_ITEM = 12  # '"F12":"supporting detail",' is about 10 tokens


@lru_cache(maxsize=64)
def label_model(item_ids: tuple[str, ...]) -> type[BaseModel]:
    """One label per item id, in order: the grammar forces exactly one label for every item."""
    return strict_model("ItemLabels", **{i: (Label, ...) for i in item_ids})


def prompt_items(judged: Sequence[JudgedItem]) -> list[dict[str, str]]:
    return [{"id": i.id, "label": i.label, "text": f"{i.owner}: {i.text}" if i.owner else i.text} for i in judged]


def relabelled(item: Any, labels: Mapping[str, str]) -> Any:
    """The item with the labels given for it or for anything nested in it (an entity's attributes)."""
    return rewritten(item, lambda d: {**d, "label": labels[d["id"]]} if d.get("id") in labels and "label" in d else d)
