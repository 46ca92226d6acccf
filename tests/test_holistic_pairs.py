"""The holistic pairwise baseline: each pair read in both orders, the position-swap accounting worked out
by hand, its cost said before a run, and its ranking beside the grounded one (the test double computes
each preference from the request, with a fixed lift for the summary shown first)."""

from __future__ import annotations

import json
import math

import pytest

from scaffold_local.analysis.rankings import HOLISTIC, rankings_of
from scaffold_local.backends.protocol import Result
from scaffold_local.backends.responder_rules import PAIR_POSITION_BIAS, PAIR_TIE, pair_preference
from scaffold_local.data.loading import load_input
from scaffold_local.errors import UsageError
from scaffold_local.judging.judge import Judge
from scaffold_local.judging.pair_readings import pair_requests
from scaffold_local.runs import load as load_run
from scaffold_local.runs.holistic_pairs import HolisticPair, Pairing, cost, plan_pairs, position_bias, read_pairs
from scaffold_local.runs.pipeline import Pipeline


def test_the_two_orders_are_averaged_and_a_position_swap_is_counted_by_hand():
    # a shown first: A .7, B .2, tie .1; b shown first: A .6 (b), B .3 (a), tie .1
    pair = HolisticPair("d1", "a", "b", {"A": 0.7, "B": 0.2, "tie": 0.1}, {"A": 0.6, "B": 0.3, "tie": 0.1})
    assert pair.p_a == pytest.approx((0.7 + 0.3) / 2)
    assert pair.p_tie == pytest.approx(0.1)
    assert pair.value == pytest.approx(0.5 + 0.1 / 2)
    assert pair.p_first == pytest.approx((0.7 + 0.6) / 2)
    assert not pair.consistent  # "the first is better" both times: a, then b
    steady = HolisticPair("d1", "a", "b", {"A": 0.7, "B": 0.2, "tie": 0.1}, {"A": 0.3, "B": 0.6, "tie": 0.1})
    assert steady.consistent and steady.p_a == pytest.approx(0.65)
    both_tie = HolisticPair("d1", "a", "b", {"A": 0.2, "B": 0.2, "tie": 0.6}, {"A": 0.1, "B": 0.3, "tie": 0.6})
    assert both_tie.consistent
    failed = HolisticPair("d1", "a", "c", None, {"A": 0.5, "B": 0.4, "tie": 0.1}, "validation")
    bias = position_bias([pair, steady, failed])
    assert bias is not None and (bias.pairs, bias.consistent) == (2, 1)
    assert bias.p_first == pytest.approx(((0.7 + 0.6) / 2 + (0.7 + 0.3) / 2) / 2)
    assert bias.p_second == pytest.approx(1 - bias.p_first - 0.1)


def test_pairings_every_pair_or_each_system_against_one():
    systems = ["a", "b", "c"]
    assert Pairing().pairs(systems) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert Pairing("b").pairs(systems) == [("b", "a"), ("b", "c")]
    assert Pairing("b").pairs(["a", "c"]) == []  # a document without the reference system has no pair
    assert Pairing.parse("all", systems) == Pairing()
    with pytest.raises(UsageError, match="no such system.*a, b, c"):
        Pairing.parse("d", systems)


def test_each_pair_is_asked_in_both_orders_and_read_under_a_version_that_writes_verdicts(responder_config, small_input):
    judge = Judge(responder_config)
    assert not judge.method.reads_verdicts  # the default version writes its verdicts; pairs are read all the same
    loaded = load_input(small_input)
    document = loaded.source_of(loaded.candidates[0].doc_id)
    a, b = [c for c in loaded.candidates if c.doc_id == document.doc_id][:2]
    first, second = pair_requests(judge, document, a, b)
    assert first.cache_key != second.cache_key and first.request.sampling.max_tokens == 0
    assert first.request.messages[-1].content == '{"better": "'
    assert f"Summary A:\n\"\"\"\n{a.summary}" in first.request.messages[1].content
    assert f"Summary A:\n\"\"\"\n{b.summary}" in second.request.messages[1].content
    # the instructions and the document are one part, shared by every pair of the document
    index, offset = first.request.parts[1]
    assert first.request.messages[index].content[:offset] == second.request.messages[index].content[:offset]
    assert document.text in first.request.messages[index].content[:offset]


def test_a_pair_whose_reading_failed_is_left_out_with_why(responder_config, small_input):
    judge = Judge(responder_config)
    loaded = load_input(small_input)
    planned = plan_pairs(judge, {d: loaded.source_of(d) for d in loaded.documents}, loaded.candidates, Pairing())
    first = planned[0]
    answered = judge.record(first.a_first, Result(id="r", text="", finish_reason="stop", next_token={
        "A": math.log(0.5), "B": math.log(0.4), "tie": math.log(0.1)}))
    no_answer = judge.record(first.b_first, Result(id="s", text="", finish_reason="stop", next_token={
        "The": math.log(0.9), "Here": math.log(0.1)}))  # the judge began a sentence, not the answer
    records = {first.a_first.cache_key: answered, first.b_first.cache_key: no_answer}
    read = read_pairs([first], records)[0]
    assert read.a_first == pytest.approx({"A": 0.5, "B": 0.4, "tie": 0.1}) and read.b_first is None
    assert read.failure is not None and "none of the answers is among the judge's likeliest next tokens" in read.failure


def test_a_run_reads_its_pairs_in_both_orders_and_ranks_them(responder_config, small_input, tmp_path):
    pipeline = Pipeline(responder_config, tmp_path / "store")
    loaded = load_input(small_input)
    systems = loaded.systems
    said = cost(pipeline.judge, loaded, Pairing(systems[0]))
    n_documents = len(loaded.documents)
    every = n_documents * len(systems) * (len(systems) - 1) // 2
    assert f"{2 * (len(systems) - 1) * n_documents} readings" in said and f"every pair would be {2 * every}" in said
    outcome = pipeline.score(loaded, pairing=Pairing())
    pipeline.close()
    assert len(outcome.holistic_pairs) == every
    summaries = {(c.doc_id, c.system): c.summary for c in loaded.candidates}
    for pair in outcome.holistic_pairs:  # the test double's rule, asked in both orders and averaged
        document = loaded.source_of(pair.doc_id).text
        a_first = pair_preference(document, summaries[pair.doc_id, pair.a], summaries[pair.doc_id, pair.b])
        b_first = pair_preference(document, summaries[pair.doc_id, pair.b], summaries[pair.doc_id, pair.a])
        assert pair.failure is None
        assert pair.p_a == pytest.approx((a_first["A"] + b_first["B"]) / 2, abs=1e-6)
        assert pair.p_tie == pytest.approx(PAIR_TIE, abs=1e-6)
    # the position bias the rule adds shows before averaging: the first shown wins more often
    bias = position_bias(outcome.holistic_pairs)
    lift = (1 - PAIR_TIE) * (1 / (1 + math.exp(-PAIR_POSITION_BIAS)))  # P(first) of two summaries of equal worth
    assert bias is not None and bias.p_first > bias.p_second and bias.p_first <= lift + 1e-9
    # its prompt is part of the run's identity, said first or not
    assert json.loads((outcome.run_dir / "spec.json").read_text())["prompts"]["compare_pair"]["ref"] == "compare_pair.v1"
    stored = json.loads((outcome.run_dir / "holistic_pairs.json").read_text())
    assert stored["pairing"] == "every pair of systems" and stored["prompt"] == "compare_pair.v1"
    assert len(stored["prompt_sha256"]) == 64
    run = load_run(outcome.run_dir)
    assert run.holistic_pairs == outcome.holistic_pairs
    rows = {row.name: row for row in rankings_of(run)}
    holistic = rows[HOLISTIC]
    assert set(holistic.order) == set(systems) and holistic.note and "position-consistent on" in holistic.note
    # asked again, every reading comes from the store
    again = Pipeline(responder_config, tmp_path / "store")
    assert again.score(loaded, pairing=Pairing()).requests_sent == 0
    again.close()


def test_score_says_the_cost_first_and_prints_the_holistic_ranking(responder_config, small_input, tmp_path):
    from typer.testing import CliRunner

    from scaffold_local.cli import app
    from tests.helpers import RESPONDER_CONFIG

    store = tmp_path / "store"
    args = ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store)]
    result = CliRunner().invoke(app, [*args, "--pairwise", "all"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.output.index("holistic pairwise (every pair of systems)") < result.output.index("Rankings side by side")
    assert "holistic pairwise" in result.output.split("Rankings side by side")[1]
    wrong = CliRunner().invoke(app, [*args, "--pairwise", "nobody"], env={"COLUMNS": "200"})
    assert wrong.exit_code != 0 and "no such system" in wrong.output


def test_evaluate_adds_the_holistic_ranking(small_input, tmp_path):
    from scaffold_local import evaluate
    from tests.helpers import RESPONDER_CONFIG

    rows = [json.loads(line) for line in small_input.read_text().splitlines()]
    with pytest.warns(UserWarning, match="holistic pairwise"):
        result = evaluate(rows, str(RESPONDER_CONFIG), tmp_path / "store", pairwise="all", progress=False)
    assert HOLISTIC in set(result.rankings["ranked_by"])


def test_compare_reads_the_pairs_for_each_judge_into_its_report(small_input, tmp_path):
    from typer.testing import CliRunner

    from scaffold_local.cli import app
    from tests.helpers import RESPONDER_CONFIG

    result = CliRunner().invoke(app, ["compare", str(small_input), "-m", str(RESPONDER_CONFIG), "--seeds", "2",
                                      "--temperature", "0.7", "--store", str(tmp_path / "store"),
                                      "--out", str(tmp_path / "r"), "--pairwise", "all"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "each judge: holistic pairwise (every pair of systems)" in result.output
    tables = json.loads((tmp_path / "r" / "analysis.json").read_text())
    holistic = [r for r in tables["rankings"] if r["ranked_by"] == HOLISTIC]
    assert len(holistic) == 2 and all("position-consistent on" in r["note"] for r in holistic)
    assert "holistic pairwise: position-consistent on" in (tmp_path / "r" / "report.html").read_text()
