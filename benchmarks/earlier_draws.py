"""The documents earlier measurements drew, read from their result files (every list of ids under a "documents"
key), so that a test report can draw documents no earlier measurement touched."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def documents_in(result_files: Sequence[Path]) -> set[str]:
    found: set[str] = set()

    def walk(value: Any, under_documents: bool) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, under_documents or key == "documents")
        elif isinstance(value, list) and under_documents and all(isinstance(v, str) for v in value):
            found.update(value)

    for path in result_files:
        walk(json.loads(path.read_text()), False)
    return found


def fresh(docs: Sequence[dict[str, Any]], used: set[str], limit: int, seed: int) -> list[dict[str, Any]]:
    """`limit` of the documents no earlier draw used, at random (seeded), in their order."""
    left = [d for d in docs if d["doc_id"] not in used]
    chosen = np.random.default_rng(seed).permutation(len(left))[:limit]
    return [left[i] for i in sorted(chosen)]
