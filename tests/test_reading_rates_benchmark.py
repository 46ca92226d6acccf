"""benchmarks/reading_rates.py's bookkeeping on the responder: each version scored in a store of its own, the same
readings and tokens counted under both, and the table's ratio against the first version."""

from __future__ import annotations

from benchmarks import reading_rates

from .helpers import RESPONDER_CONFIG


def test_each_version_is_scored_from_an_empty_store_and_the_table_compares_them(tmp_path):
    rows = [reading_rates.score(str(RESPONDER_CONFIG), version, tmp_path / f"v{version}") for version in (16, 17)]
    assert [r["readings"] for r in rows] == [502, 502] and [r["failures"] for r in rows] == [{}, {}]
    assert rows[0]["computed_tokens"] == rows[1]["computed_tokens"] > 0
    assert rows[0]["systems"]["contradicts"]["f"] == rows[1]["systems"]["contradicts"]["f"]
    table = reading_rates.markdown({"command": "c", "summaries": 15, "machine": "m", "cores": 2, "judge": "j",
                                    "versions": rows}).splitlines()
    assert table[-2].startswith("| 16 | 502 |") and "| 1.00x |" in table[-2]
    assert table[-1].startswith("| 17 | 502 |") and f"| {rows[1]['wall_s'] / rows[0]['wall_s']:.2f}x |" in table[-1]
