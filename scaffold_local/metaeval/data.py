"""The shared evaluation data: one JSON object per source document, in one normalized shape
({"doc_id", "document", "keyfacts"?, "summaries": [{"system", "summary", "human": {...}}]}),
and seeded sampling by document so a CPU run finishes in minutes."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from ..errors import EvalDataError

FILES = {
    "realsumm": "realsumm/realsumm.jsonl",
    "frank": "frank/frank_sentence_level.jsonl",
    "summeval": "summeval/summeval.jsonl",
}


SPLITS = ("all", "dev", "test")


def split_of(doc_id: str) -> str:
    """A document's fixed half: "dev" (where formats and thresholds are chosen) or "test" (where they
    are checked), decided by a hash of its id, so the halves never share a document whatever the
    sample size or seed."""
    return "dev" if hashlib.sha256(f"scaffold-local split:{doc_id}".encode()).digest()[0] < 128 else "test"


def load(data_dir: Path, dataset: str, limit: int | None = None, seed: int = 0, split: str = "all",
         per_document: int | None = None) -> list[dict[str, Any]]:
    """The dataset's documents (of one split, or all): all of them, or `limit` drawn at random
    (seeded) by document; with `per_document`, that many of each document's summaries, drawn at
    random (seeded), so that a CPU run can cover more documents."""
    if split not in SPLITS:
        raise EvalDataError(f"unknown split {split!r} (known: {', '.join(SPLITS)})")
    path = data_dir / FILES[dataset]
    if not path.is_file():
        raise EvalDataError(f"{path} not found: point --data at the evaluation-data folder (it holds {FILES[dataset]})")
    documents = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                documents.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise EvalDataError(f"{path}, line {number}: not JSON ({exc.msg})") from None
    if split != "all":
        documents = [d for d in documents if split_of(str(d["doc_id"])) == split]
    if limit is not None and limit < len(documents):
        documents = random.Random(seed).sample(documents, limit)
    if per_document is not None:
        documents = [{**d, "summaries": _sample(d["summaries"], per_document, f"{seed}:{d['doc_id']}")}
                     for d in documents]
    return documents


def _sample(summaries: list[dict[str, Any]], n: int, seed: str) -> list[dict[str, Any]]:
    """n summaries in their original order (all when there are no more)."""
    if n >= len(summaries):
        return summaries
    keep = set(random.Random(seed).sample(range(len(summaries)), n))
    return [s for i, s in enumerate(summaries) if i in keep]
