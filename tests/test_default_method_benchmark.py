"""The rules of decisions 0001, 0002, 0003 and 0005's sentence checks (benchmarks/default_method.py) worked out by hand: balanced accuracy over the
references of each item, per stratum where a set asks for it, a paired difference on the items both versions
decided, and the decision's conditions; each decision's draws leave out what earlier ones drew."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import default_method
from benchmarks.default_method import DECISIONS, Unit, agreement, compare, decide


def _units(decisions: list[int | None], references: list[int], stratum: str = "all") -> dict:
    return {(f"d{i // 2}", i): Unit(f"d{i // 2}", stratum, [r], d, None, r) for i, (d, r) in enumerate(zip(decisions, references))}


def test_balanced_accuracy_over_references_and_by_stratum():
    # an item with two references counts twice: positives 2 of 3 found, negatives 2 of 2 rejected
    units = [Unit("a", "x", [1, 1], 1, None, 0), Unit("a", "x", [1], 0, None, 0), Unit("b", "y", [0], 0, None, 0),
             Unit("b", "y", [0], 0, None, 0)]
    assert agreement(units, lambda u: u.decision, False) == pytest.approx((2 / 3 + 1) / 2)
    # by stratum: x has positives only (undefined, left out of the mean), y negatives only: no value at all
    assert agreement(units, lambda u: u.decision, True) is None


def test_the_paired_difference_leaves_out_items_either_version_failed():
    old = _units([1, 0, 0, None], [1, 1, 0, 0])  # the failed fourth item is left out of both
    new = _units([1, 1, 0, 0], [1, 1, 0, 0])
    row = compare({"version 9": old, "version 15": new}, False, seed=0)
    assert row["items"] == 3 and row["failed"] == {"version 9": 1, "version 15": 0}
    assert row["version 9"]["value"] == pytest.approx(0.75) and row["version 15"]["value"] == 1.0
    assert row["difference"]["value"] == pytest.approx(0.25)


def _row(difference: float, failed: int = 0, uncited: int = 0, spread: float = 0.0) -> dict:
    """A set's comparison; its bootstrap draws run `spread` either side of the difference."""
    draws = list(difference + np.linspace(-spread, spread, 11))
    return {"difference": {"value": difference, "_draws": draws},
            **{key: {f"version {v}": n for v in (15, 16, 17, 20)}
               for key, n in (("failed", failed), ("of", 100), ("uncited", uncited), ("kept", 50))}}


def test_the_rule_mean_at_least_zero_none_below_the_margin_few_failures():
    assert decide({"A": _row(0.10), "B": _row(-0.02)}, "version 9", "version 15")["moves"]
    fallen = decide({"A": _row(0.10), "B": _row(-0.04)}, "version 9", "version 15")
    assert not fallen["moves"] and fallen["sets below the margin"] == ["B"]
    assert not decide({"A": _row(0.01), "B": _row(-0.02)}, "version 9", "version 15")["moves"]  # mean below 0
    failing = decide({"A": _row(0.10, failed=3), "B": _row(0.0)}, "version 9", "version 15")
    assert not failing["moves"] and failing["sets with too many failed items"] == ["A"]
    # a kept fact whose citation failed keeps its verdict, but over 2% of the kept facts uncited stops the move
    assert decide({"A": _row(0.10, uncited=1), "B": _row(0.0)}, "version 9", "version 16", True)["moves"]
    assert not decide({"A": _row(0.10, uncited=2), "B": _row(0.0)}, "version 9", "version 16", True)["moves"]
    assert decide({"A": _row(0.10, uncited=2), "B": _row(0.0)}, "version 9", "version 15")["moves"]  # 0001's rule


def test_decision_0003_asks_for_no_worse_on_the_first_of_decision_0002s_documents(monkeypatch):
    """Version 17 computes version 16's requests otherwise: it moves if the mean difference's lower bound is at least
    -0.01 and no set falls below -0.02, on the first documents of 0002's draws."""
    def rule(a: float, b: float) -> bool:
        return decide({"A": _row(a), "B": _row(b)}, "version 16", "version 17", True,
                      no_worse=DECISIONS[3].no_worse)["moves"]

    assert rule(-0.005, -0.005) and rule(-0.015, 0.0)
    assert not rule(-0.025, 0.01)  # one set below -0.02
    assert not rule(-0.015, -0.015)  # the mean's bound below -0.01
    drawn = {name: [{"doc_id": f"{name}{i}"} for i in range(30)] for name in ("REALSumm", "FRANK", "SummEdits")}
    monkeypatch.setattr(default_method, "draws", lambda data, decision: drawn if decision.number == 2 else {})
    chosen = default_method.decision_documents(None, DECISIONS[3])
    assert {name: len(docs) for name, docs in chosen.items()} == {"REALSumm": 16, "FRANK": 25, "SummEdits": 18}
    assert chosen["FRANK"][0]["doc_id"] == "FRANK0" and chosen["FRANK"][-1]["doc_id"] == "FRANK24"


def test_decision_0005_checks_the_sentences_no_worse_on_every_document_of_decision_0002s_draws(monkeypatch):
    """Version 20 against 17 on FRANK and SummEdits: the mean difference's lower bound at least -0.03, no set below
    -0.02 (REALSumm's part is end to end, outside this script)."""
    def rule(a: float, b: float) -> bool:
        return decide({"FRANK": _row(a), "SummEdits": _row(b)}, "version 17", "version 20",
                      no_worse=DECISIONS[5].no_worse)["moves"]

    assert rule(-0.015, -0.015) and not rule(-0.025, 0.02) and not rule(-0.03, -0.01)
    # no set below -0.02, but the mean's draws reach down to -0.05: its lower bound is below -0.03
    spread = decide({"FRANK": _row(-0.01, spread=0.04), "SummEdits": _row(-0.01, spread=0.04)}, "version 17",
                    "version 20", no_worse=DECISIONS[5].no_worse)
    assert spread["low95"] < -0.03 and not spread["moves"] and not spread["sets below the margin"]
    drawn = {name: [{"doc_id": f"{name}{i}"} for i in range(30)] for name in ("REALSumm", "FRANK", "SummEdits")}
    monkeypatch.setattr(default_method, "draws", lambda data, decision: drawn if decision.number == 2 else {})
    chosen = default_method.decision_documents(None, DECISIONS[5])
    assert {name: len(docs) for name, docs in chosen.items()} == {"FRANK": 30, "SummEdits": 30}


def test_a_decisions_draws_ignore_its_own_and_later_results_and_leave_out_earlier_decisions(tmp_path, monkeypatch):
    """Decision 1's draws do not change when its results land; decision 2 draws nothing decision 1 drew."""
    monkeypatch.setattr(default_method, "RESULTS", tmp_path)
    for name in ("earlier", DECISIONS[1].out, DECISIONS[2].out):
        (tmp_path / f"{name}.json").write_text("{}")
    assert [p.name for p in default_method._earlier_results(DECISIONS[1])] == ["earlier.json"]
    assert [p.name for p in default_method._earlier_results(DECISIONS[2])] == [f"{DECISIONS[1].out}.json", "earlier.json"]
    docs = [{"doc_id": "d", "summaries": [{"system": f"s{i}", "summary": f"text {i}"} for i in range(8)]}]
    first = default_method._fresh_summaries(docs, set(), 5, DECISIONS[1].seed)
    second = default_method._fresh_summaries(docs, default_method._taken([first]), 5, DECISIONS[2].seed)
    assert len(first[0]["summaries"]) == 5 and len(second[0]["summaries"]) == 3
    assert not {s["system"] for s in first[0]["summaries"]} & {s["system"] for s in second[0]["summaries"]}


def test_the_readmes_validation_table_states_each_sets_numbers_for_the_chosen_version():
    """Each set's row from the newest results that compare the version, else the version whose requests it sends."""
    from benchmarks.validation_table import validation_table

    entry = {"value": 0.8, "low95": 0.75, "high95": 0.85}
    newer = {"versions": ["version 9", "version 16"], "table": {
        "REALSumm": {"documents": 47, "items": 2565, "version 9": {"value": 0.79, "low95": None}, "version 16": entry,
                     "word overlap": {"value": 0.7431, "low95": 0.7, "high95": 0.78}, "human ceiling": {"value": 0.9}}}}
    older = {"versions": ["version 9", "version 15"], "table": {
        "REALSumm": {"documents": 40, "items": 2000, "version 9": entry, "version 15": entry, "word overlap": entry},
        "SummEdits": {"documents": 60, "items": 353, "version 9": entry, "version 15": {"value": None},
                      "word overlap": entry}}}
    assert validation_table([newer, older], 16, 15).splitlines()[2:] == [
        "| a key fact is in the summary (REALSumm) | 47 documents, 2565 key facts | 0.800 [0.750, 0.850] | "
        "0.743 [0.700, 0.780] | 0.900 |",
        "| the summary is inconsistent (SummEdits; mean of its domains) | 60 documents, 353 summaries (version 15's "
        "run: the same requests) | - | 0.800 [0.750, 0.850] | - |"]
    assert "| 0.790 |" in validation_table([newer, older], 9)
    with pytest.raises(SystemExit, match="no results compare version 7"):
        validation_table([newer, older], 7)


def test_the_readme_states_the_validation_table_of_the_default_judges_default_version():
    """The README's numbers against people are generated, not retyped: they are what validation_table.py prints from
    the committed results for the method version the default judge runs."""
    from pathlib import Path

    from benchmarks.validation_table import default_version, read_results, validation_table

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert validation_table(read_results(), *default_version()) in readme


def test_every_shipped_config_runs_the_default_its_decision_chose():
    """Decision 0003 moved every shipped config, GPU ones included, to method version 17
    (benchmarks/decisions/0003-readings-together.md); a config that names no version runs the package default."""
    from scaffold_local.judging.config import available_configs
    from scaffold_local.method.versions import DEFAULT_METHOD_VERSION, method_version

    assert DEFAULT_METHOD_VERSION == 17
    defaults = {config.name: method_version(config.method_version).number for config in available_configs()}
    assert len(defaults) >= 14 and set(defaults.values()) == {17}, defaults
