"""Test helpers and small hand-written inputs. No test reads ../shared/eval-data."""

from __future__ import annotations

import json
import os
from pathlib import Path


TESTS = Path(__file__).parent
SNAPSHOTS = TESTS / "snapshots"
RESPONDER_CONFIG = TESTS / "configs" / "responder.toml"


def assert_snapshot(name: str, text: str) -> None:
    """Compare with tests/snapshots/<name>; UPDATE_SNAPSHOTS=1 rewrites it (then review the diff and
    bump the prompt version when a template changed)."""
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing snapshot {path}; run with UPDATE_SNAPSHOTS=1 once and review it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; if intended, rerun with UPDATE_SNAPSHOTS=1"


# Two documents written for the tests. With the responder's rules (backends/responder.py):
#   factory: F1, F2 main; F3, F4 supporting; F5 "other" (starts with "Published").
#   library: F1, F2 main; F3 supporting; F4 "other" (starts with "Posted").
FACTORY = (
    "Alpha Corp opened a factory in Denton on Monday. The factory employs 200 local workers. "
    "It builds solar panels for homes and schools. The plant cost 50 million dollars to build. "
    "Published by the Denton Daily."
)
LIBRARY = (
    "The Oakvale library now lends bicycles to members. Each member may borrow a bicycle for seven days. "
    "The bicycles were donated by Oakvale Cycling Club. Posted in Town News."
)
SUMMARIES = [
    # factory/brief: both main facts, no supporting fact.
    ("factory", FACTORY, "brief", "Alpha Corp opened a factory in Denton on Monday. The factory employs 200 local workers."),
    # factory/details: one main fact, both supporting facts; the last sentence has an invented number.
    ("factory", FACTORY, "details",
     "Alpha Corp opened a factory in Denton on Monday. It builds solar panels for homes and schools. "
     "The plant cost 50 million dollars to build. It will export 900 panels."),
    # library/brief: both main facts.
    ("library", LIBRARY, "brief",
     "The Oakvale library now lends bicycles to members. Each member may borrow a bicycle for seven days."),
    # library/details: the supporting fact only.
    ("library", LIBRARY, "details", "The bicycles were donated by Oakvale Cycling Club."),
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
