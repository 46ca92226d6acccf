"""The shared evaluation data: one JSON object per source document, in one normalized shape
({"doc_id", "document", "keyfacts"?, "summaries": [{"system", "summary", "human": {...}}]}),
and seeded sampling by document so a CPU run finishes in minutes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

FILES = {
    "realsumm": "realsumm/realsumm.jsonl",
    "frank": "frank/frank_sentence_level.jsonl",
    "summeval": "summeval/summeval.jsonl",
}


class EvalDataError(FileNotFoundError):
    pass


def load(data_dir: Path, dataset: str, limit: int | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """The dataset's documents: all of them, or `limit` drawn at random (seeded) by document."""
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
    if limit is not None and limit < len(documents):
        documents = random.Random(seed).sample(documents, limit)
    return documents
