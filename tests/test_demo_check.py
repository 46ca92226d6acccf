"""The demo check's judgment (tests/test_demo.py) on a run folder written here: a cell equal to the README's passes,
one that a verdict near its threshold explains is accepted with a warning, any other fails on the README's llama.cpp
build and is listed, not failed, on another build."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from . import test_demo
from .test_demo import README_BUILD, check, readme_table


def _run(tmp_path: Path, cells: dict[tuple[str, str], str], build: str, near_tie: str | None = None) -> Path:
    """A run folder printing `cells` (the README's, changed where asked); `near_tie`: a system with a fact verdict
    whose P(kept) lies 0.01 from the facts' threshold."""
    systems: dict[str, dict] = {}
    for (key, system), value in cells.items():
        systems.setdefault(system, {})[key] = {"mean": None if value == "-" else float(value)}
    (tmp_path / "systems.json").write_text(json.dumps([{"system": s, "metrics": m} for s, m in systems.items()]))
    (tmp_path / "spec.json").write_text(json.dumps({"thresholds": {"facts": 0.5}, "engines": [{"build": build}]}))
    records = [{"task": "align_facts", "system": near_tie, "confidence": {"F1": 0.51}}] if near_tie else []
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path


def test_the_demo_check_fails_only_what_no_cpu_difference_explains(tmp_path):
    _, cells = readme_table()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check(_run(tmp_path, cells, README_BUILD)) is None  # the README's table: nothing said
    fps_concise = {**cells, ("fps", "concise"): "0.999"}
    failed = check(_run(tmp_path, fps_concise, README_BUILD))
    assert failed is not None and "FPS concise: README" in failed and "this run 0.999" in failed
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert check(_run(tmp_path, fps_concise, README_BUILD, near_tie="concise")) is None
        assert check(_run(tmp_path, fps_concise, "CPU : AVX2 = 1 |")) is None  # another build: listed
    assert f"within {test_demo.NEAR_TIE} of its threshold" in str(said[0].message)
    assert "built otherwise" in str(said[1].message) and "FPS concise" in str(said[1].message)
