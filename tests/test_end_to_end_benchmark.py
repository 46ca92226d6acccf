"""Decision 0005's end-to-end condition (benchmarks/end_to_end.py) worked out by hand: each document's Spearman of
FC with people's LitePyramid recall, and the no-worse rule on its paired difference."""

from __future__ import annotations

import pytest

from benchmarks.end_to_end import no_worse, per_document_spearman


def test_each_documents_spearman_over_its_own_summaries():
    rows = [{"doc_id": "a", "judge_fc": fc, "human_litepyramid": h} for fc, h in ((0.1, 0.2), (0.5, 0.4), (0.9, 0.3))]
    rows += [{"doc_id": "b", "judge_fc": fc, "human_litepyramid": h} for fc, h in ((0.2, 0.1), (None, 0.5), (0.4, 0.3))]
    by_document = per_document_spearman(rows)
    assert by_document["a"] == pytest.approx(0.5)  # ranks (1, 2, 3) against (1, 3, 2): 1 - 6 * 2 / 24
    assert by_document["b"] is None  # two summaries with an FC: no correlation


def test_no_worse_needs_the_lower_bound_few_failures_and_a_narrow_interval():
    assert no_worse((0.02, -0.04, 0.08), failed_share=0.0) == "holds"
    assert no_worse((0.0, -0.06, 0.06), failed_share=0.0) == "fails"  # lower bound below -0.05
    assert no_worse((0.05, -0.02, 0.12), failed_share=0.03) == "fails"  # over 2% of the summaries without FC
    assert no_worse((0.05, -0.04, 0.14), failed_share=0.0) == "undecided"  # 0.09 either side: wider than 0.08
    assert no_worse((0.05, -0.12, 0.22), failed_share=0.0) == "undecided"  # 0.17 either side: the draw is extended
