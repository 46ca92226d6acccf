"""Method version 7: verdicts read from the judge's next-token distribution, nothing generated. The reading
rules worked out by hand, the records a reading becomes, the prompt parts, and the whole method on the
responder (whose readings follow the same lexical rules as its written verdicts, so the scaffold metrics
agree with version 6's and the grades are the rule's grade 0.8 and one below it 0.2)."""

from __future__ import annotations

import json
import math

import pytest

from scaffold_local.backends import Result
from scaffold_local.data.inputs import Candidate, Document
from scaffold_local.data.loading import load_input
from scaffold_local.judging.config import ModelConfig
from scaffold_local.judging.judge import Judge
from scaffold_local.judging.prompts import PART_MARK, load_prompts
from scaffold_local.judging.readings import Distribution, continued, distribution, expected, matching, resolved
from scaffold_local.method.scaffold import Scaffold
from scaffold_local.method.text import sha256_text
from scaffold_local.method.versions import method_version
from scaffold_local.method.views.facts import Fact
from scaffold_local.records import Record
from scaffold_local.runs.pipeline import Pipeline

from .helpers import FACTORY, RESPONDER_CONFIG

GRADES = tuple(str(g) for g in range(1, 11))
log = math.log


def test_a_token_counts_for_the_one_answer_it_begins_or_spells_out():
    assert matching(" true", ("true", "false")) == ["true"]  # JSON's whitespace before a value
    assert matching("t", ("true", "false")) == ["true"] and matching("false,", ("true", "false")) == ["false"]
    assert matching(' "', ("true", "false")) == []  # no answer: a string where a boolean goes
    assert matching(" ", ("true", "false")) == ["true", "false"]  # whitespace decides nothing yet
    assert matching("8", GRADES) == ["8"] and matching("10", GRADES) == ["10"]
    assert matching("1", GRADES) == ["1", "10"]  # undecided: the next position decides
    # after "1": the value ends (a comma, a brace, whitespace) or goes on with "0"
    assert matching(",", GRADES, after="1") == ["1"] and matching(" ", GRADES, after="1") == ["1"]
    assert matching("0", GRADES, after="1") == ["10"] and matching("0}", GRADES, after="1") == ["10"]
    assert matching(' "', GRADES, after="1") == []  # a string cannot follow a number
    errors = ("out-of-context error", "entity error", "other error")
    assert matching("entity", errors) == ["entity error"] and matching('entity error"', errors) == ["entity error"]
    assert matching("o", errors) == ["out-of-context error", "other error"]


def test_p_is_the_answers_share_of_the_mass_the_answers_hold():
    d = distribution({" true": log(0.6), " false": log(0.2), ' "': log(0.15), "true": log(0.05)}, ("true", "false"))
    assert d is not None and d.p["true"] == pytest.approx(0.65 / 0.85) and d.answer_mass == pytest.approx(0.85)
    assert d.width == 0 and d.best() == "true"
    assert distribution({' "': log(0.9), "{": log(0.1)}, ("true", "false")) is None  # a new answer, not this one


def test_a_grade_that_may_be_ten_is_read_on_after_its_one():
    """P(9) 0.2, P("1") 0.8 of which "0" follows 0.9 of the time: P(10) 0.72, P(1) 0.08; mean 9.08."""
    first = distribution({"9": log(0.2), "1": log(0.8)}, GRADES)
    assert first is not None and first.undecided == {"1": pytest.approx(0.8)}
    then = distribution({"0": log(0.9), ",": log(0.1)}, GRADES, after="1")
    assert then is not None
    grade = continued(first, "1", then)
    assert grade.p["10"] == pytest.approx(0.72) and grade.p["1"] == pytest.approx(0.08) and grade.width == 0
    assert expected(grade) == pytest.approx(9.08)
    stored = {"faithfulness": {"p": dict(first.p), "undecided": dict(first.undecided)},
              "faithfulness after 1": {"p": dict(then.p)}}
    assert expected(resolved(stored, "faithfulness")) == pytest.approx(9.08)
    assert expected(Distribution(p={"7": 0.5, "8": 0.5})) == 7.5


@pytest.fixture
def judge() -> Judge:
    return Judge(ModelConfig.load(str(RESPONDER_CONFIG)), method_version(7))


def _fact_reading(judge: Judge):
    document = Document(doc_id="factory", text=FACTORY, sha256=sha256_text(FACTORY))
    scaffold = Scaffold(key="k", doc_id="factory", document_sha256=document.sha256,
                        facts=(Fact(id="F1", text="Alpha Corp opened a factory.", label="main point"),
                               Fact(id="F2", text="Published by the Denton Daily.", label="other")),
                        questions=(), entities=())
    candidate = Candidate(record=1, doc_id="factory", system="a", summary="Alpha Corp opened a factory. It is big.")
    return judge.plan(scaffold, document, candidate, task="align_facts")


def test_a_reading_is_one_prompt_ending_where_the_answer_gives_its_value(judge):
    planned = _fact_reading(judge)
    # the "other" fact is never asked (no metric counts it); F1's verdict, and its sentences beside it
    assert [p.request.id for p in planned] == ["factory/a/facts/F1", "factory/a/facts/F1/evidence"]
    verdict, evidence = (p.request for p in planned)
    assert verdict.sampling.max_tokens == 0 and verdict.sampling.top_logprobs == 20 and verdict.json_schema is None
    assert verdict.messages[-1].role == "assistant" and verdict.messages[-1].content == '{"inferred":'
    assert evidence.messages[-1].content == '{"inferred": true, "sentence_ids": ['
    assert verdict.messages[:-1] == evidence.messages[:-1]
    system, user = verdict.messages[0].content, verdict.messages[1].content
    assert PART_MARK not in system + user
    # parts: the instructions, the summary, the task's question, the fact, the chat's turn, then the answer
    starts = [offset for message, offset in verdict.parts]
    assert [m for m, _ in verdict.parts] == [1, 1, 1, 1, 2] and starts[0] == starts[4] == 0
    assert user[starts[1]:starts[2]] == "Does the summary convey this key fact?\n"
    assert user[starts[2]:] == "Key fact (main point): Alpha Corp opened a factory."
    assert user[starts[3]:] == "" and user[:starts[1]].startswith("Summary sentences:\n[1] Alpha Corp opened a factory.")
    # the parts are part of the cache key: they shape the numbers an engine computes part by part
    assert verdict.cache_key("j") != verdict.model_copy(update={"parts": ()}).cache_key("j")


def test_a_reading_records_a_schema_valid_verdict_with_its_p_or_fails_for_its_item_alone(judge):
    verdict, evidence = _fact_reading(judge)
    record = judge.record(verdict, Result(id=verdict.request.id, text="", finish_reason="stop",
                                          next_token={" true": log(0.3), " false": log(0.6), "{": log(0.1)}))
    assert record.parsed == {"F1": {"inferred": False}} and record.confidence == {"F1": pytest.approx(1 / 3)}
    assert record.next_token is not None and record.failure is None
    cited = judge.record(evidence, Result(id=evidence.request.id, text="", finish_reason="stop",
                                          next_token={"2": log(0.7), "1": log(0.3)}))
    assert cited.parsed == {"F1": {"sentence_ids": {"p": {"1": pytest.approx(0.3), "2": pytest.approx(0.7)}}}}
    # undecided: most of the mass on whitespace, which writes no answer yet
    undecided = judge.record(verdict, Result(id=verdict.request.id, text="", finish_reason="stop",
                                             next_token={" ": log(0.5), " true": log(0.4), " false": log(0.1)}))
    assert undecided.parsed is None and undecided.failure == "validation" and "undecided" in undecided.failed_items["F1"]
    assert undecided.next_token == {" ": log(0.5), " true": log(0.4), " false": log(0.1)}  # the raw answer kept
    written = json.loads(undecided.model_dump_json())
    assert "next_token" in written and "next_token" not in json.loads(Record(
        request_id="r", cache_key="k", task="t", prompt="p", schema_sha256=None, doc_id="d", text="x",
        finish_reason="stop").model_dump_json())  # records without one are written as before
    # the judge's thresholds decide what counts: P 1/3 is kept at 0.3, not at 0.5
    joined = judge.by_kind([verdict, evidence], {verdict.cache_key: record, evidence.cache_key: cited})["facts"]
    assert judge.verdicts("facts", joined).kept == {"F1": 0.0}
    judge.thresholds = {"facts": 0.3}
    assert judge.verdicts("facts", joined).kept == {"F1": 1.0} and judge.verdicts("facts", joined).cited == {"F1": [2]}


def test_a_template_marks_its_parts_and_its_hash_covers_the_template_it_extends(tmp_path):
    for name, text in {
        "base.v1.jinja": '{% block system %}Rules.{% endblock %}{% block user %}Doc: {{ doc }}\n{{ part }}'
                         '{% block item %}{% endblock %}{% endblock %}',
        "align_facts.v1.jinja": '{% extends "base.v1.jinja" %}{% block item %}Item {{ item }}{{ part }}{% endblock %}',
    }.items():
        (tmp_path / name).write_text(text)
    prompt = load_prompts(tmp_path, tasks=("align_facts",))["align_facts"]
    messages, parts = prompt.render_parts(doc="the text", item=3)
    assert [m.content for m in messages] == ["Rules.", "Doc: the text\nItem 3"] and parts == ((1, 0), (1, 14), (1, 20))
    # a part mark that the text itself holds: the message stays one part, the text as given
    messages, parts = prompt.render_parts(doc=f"odd {PART_MARK} text", item=3)
    assert messages[1].content == f"Doc: odd {PART_MARK} text\nItem 3" and parts == ((1, 0),)
    before = prompt.sha256
    (tmp_path / "base.v1.jinja").write_text((tmp_path / "base.v1.jinja").read_text().replace("Rules.", "New rules."))
    assert load_prompts(tmp_path, tasks=("align_facts",))["align_facts"].sha256 != before


def _scores(outcome) -> dict:
    return {(s.doc_id, s.system): s.values for s in outcome.summaries}


@pytest.mark.parametrize("version", [7, 8])
def test_versions_that_read_on_the_responder_read_what_version_6_writes(tmp_path, small_input, version):
    """Same store, same scaffolds: every scaffold metric as version 6 writes it; every judgment a reading
    (no output token); each grade the rule's g read as 0.8 g + 0.2 (g - 1), or 0.8 + 0.2 x 2 for 1."""
    config = ModelConfig.load(str(RESPONDER_CONFIG))
    written = Pipeline(config, tmp_path / "store", method=6).score(load_input(small_input))
    read = Pipeline(config, tmp_path / "store", method=version).score(load_input(small_input))
    assert read.usage.judgments.completion_tokens == 0 and read.failures == {}
    records = [json.loads(line) for line in (read.run_dir / "records.jsonl").read_text().splitlines()]
    assert all(r["next_token"] and r["usage"]["completion_tokens"] == 0 for r in records)
    before, after = _scores(written), _scores(read)
    for key in before:
        for metric in ("fps", "qps", "eps", "f", "fc", "main_fc", "supp_fc", "fact_focus", "qc"):
            assert after[key][metric] == before[key][metric], (key, metric)
        for axis in ("faithfulness", "completeness", "understandability", "hallucination"):
            grade = before[key][f"ds_{axis}"]
            assert after[key][f"ds_{axis}"] == pytest.approx(1.2 if grade == 1 else grade - 0.2)  # 1: 0.8 x 1 + 0.2 x 2
    spec = json.loads((read.run_dir / "spec.json").read_text())
    assert spec["method"]["reads_verdicts"] is True and spec["thresholds"] == {}


def test_version_10_writes_version_9s_judgments_and_reads_its_sentence_check_as_yes_or_no(tmp_path, small_input):
    """Version 10 sends version 9's requests for every view and the direct score, byte for byte (so their
    calibration holds), and reads each summary sentence with a plain question whose answer is P(yes), in any case;
    on the responder its metrics are version 9's, nothing is generated for a sentence, and the sentences' threshold
    is part of the run's identity."""
    config = ModelConfig.load(str(RESPONDER_CONFIG))
    document = Document(doc_id="factory", text=FACTORY, sha256=sha256_text(FACTORY))
    scaffold = Scaffold(key="k", doc_id="factory", document_sha256=document.sha256,
                        facts=(Fact(id="F1", text="Alpha Corp opened a factory.", label="main point"),), questions=(),
                        entities=())
    candidate = Candidate(record=1, doc_id="factory", system="a", summary="Alpha Corp opened a factory. It is big.")

    def keys(version: int, tasks: tuple[str, ...]) -> list[str]:
        planned = Judge(config, method_version(version)).plan(scaffold, document, candidate)
        return [p.cache_key for p in planned if p.task in tasks]

    written = ("align_facts", "direct_score")
    assert keys(10, written) == keys(9, written)
    judge = Judge(config, method_version(10))
    checks = judge.plan(scaffold, document, candidate, task="check_faithfulness")
    assert [p.request.id for p in checks] == ["factory/a/faithfulness/S1", "factory/a/faithfulness/S2"]  # no category
    asked = checks[1].request
    assert asked.sampling.max_tokens == 0 and asked.messages[-1].role == "assistant" and asked.messages[-1].content == ""
    assert asked.messages[1].content.endswith("Sentence: It is big.\nIs this sentence of the summary supported by the "
                                              "document? Answer yes or no.")
    record = judge.record(checks[1], Result(id=asked.id, text="", finish_reason="stop",
                                            next_token={"Yes": log(0.6), " no": log(0.2), "yes": log(0.1), "The": log(0.1)}))
    assert record.parsed == {"S2": {"supported": True}} and record.confidence == {"S2": pytest.approx(0.7 / 0.9)}

    nine = Pipeline(config, tmp_path / "store", method=9).score(load_input(small_input))
    calibrated = config.model_copy(update={"thresholds": {10: {"facts": 0.5, "questions": 0.5, "faithfulness": 0.6}}})
    ten = Pipeline(calibrated, tmp_path / "store", method=10).score(load_input(small_input))
    assert ten.failures == {} and _scores(ten) == _scores(nine)
    records = [json.loads(line) for line in (ten.run_dir / "records.jsonl").read_text().splitlines()]
    checks = [r for r in records if r["task"] == "check_faithfulness"]
    assert checks and all(r["next_token"] and r["usage"]["completion_tokens"] == 0 for r in checks)
    assert all(r["usage"]["completion_tokens"] > 0 for r in records if r["task"] == "align_facts")
    spec = json.loads((ten.run_dir / "spec.json").read_text())
    assert spec["decision_threshold"] == 0.5 and spec["thresholds"] == {"faithfulness": 0.6}


def test_version_12_reads_each_entity_attribute_and_sends_version_10s_other_requests(tmp_path, small_input):
    """Version 12 is version 10 with every entity attribute read (its P against the entities' own threshold): the
    facts, questions, sentence checks and direct score are version 10's requests byte for byte; on the responder
    its metrics are version 10's, and no token is generated for an attribute."""
    config = ModelConfig.load(str(RESPONDER_CONFIG))
    inputs = load_input(small_input)
    ten = Pipeline(config, tmp_path / "store", method=10).score(inputs)
    calibrated = config.model_copy(update={"thresholds": {12: {"facts": 0.5, "questions": 0.5, "faithfulness": 0.6,
                                                               "entities": 0.4}}})
    twelve = Pipeline(calibrated, tmp_path / "store", method=12).score(inputs)
    assert twelve.failures == {} and _scores(twelve) == _scores(ten)

    def keys(run, *tasks):
        return sorted(r["cache_key"] for line in (run.run_dir / "records.jsonl").read_text().splitlines()
                      if (r := json.loads(line))["task"] in tasks)

    shared = ("align_facts", "align_questions", "check_faithfulness", "direct_score")
    assert keys(twelve, *shared) == keys(ten, *shared)
    read = [json.loads(line) for line in (twelve.run_dir / "records.jsonl").read_text().splitlines()]
    attributes = [r for r in read if r["task"] == "align_entities"]
    assert attributes and all(r["next_token"] and r["usage"]["completion_tokens"] == 0 for r in attributes)
    assert all(r["prompt"] == "align_entities.v7" for r in attributes)
    assert not set(keys(twelve, "align_entities")) & set(keys(ten, "align_entities"))
    spec = json.loads((twelve.run_dir / "spec.json").read_text())
    assert spec["method"]["read_kinds"] == ["faithfulness", "entities"]
    assert spec["thresholds"] == {"faithfulness": 0.6, "entities": 0.4} and spec["decision_threshold"] == 0.5


TOWN = ["The town council met on Tuesday to discuss the budget.",
        "The bakery on Elm Street sells rye bread and pastries every morning.",
        "The mayor opened a new bridge over the river on Friday.",
        "Local schools will close early for the winter holidays.",
        "A jazz festival drew thousands of visitors to the park."]


def test_version_14_checks_each_sentence_on_its_own_best_passages_and_sends_version_10s_other_requests(
        tmp_path, small_input):
    """Version 14 is version 10 with each summary sentence checked against its best passages (BM25, at most three, in
    document order) instead of the whole document: version 10's prompt with that excerpt in the document's place,
    byte for byte. The bakery sentence reads its paragraph and the first two (no other word matches); the jazz
    sentence its own and the first two: neither reads the schools."""
    from scaffold_local.judging.long_documents import EXCERPT_GAP

    config = ModelConfig.load(str(RESPONDER_CONFIG))
    text = "\n\n".join(TOWN)
    document = Document(doc_id="town", text=text, sha256=sha256_text(text))
    summary = "The bakery on Elm Street sells rye bread. A jazz festival drew thousands of visitors."
    candidate = Candidate(record=1, doc_id="town", system="a", summary=summary)
    ten, fourteen = (Judge(config, method_version(n)) for n in (10, 14))
    excerpts = ["\n\n".join(TOWN[:3]), "\n\n".join(TOWN[:2]) + EXCERPT_GAP + TOWN[4]]
    checks = fourteen.plan(None, document, candidate, task="check_faithfulness")
    assert len(checks) == 2
    for i, (planned, passages) in enumerate(zip(checks, excerpts)):
        on_passages = Document(doc_id="town", text=passages, sha256=sha256_text(passages))
        assert planned.request.messages == ten.plan(None, on_passages, candidate, task="check_faithfulness")[i].request.messages
        assert TOWN[3] not in planned.request.messages[1].content
    whole = ten.plan(None, document, candidate, task="check_faithfulness")
    assert all(TOWN[3] in p.request.messages[1].content for p in whole)

    inputs = load_input(small_input)
    runs = {n: Pipeline(config, tmp_path / "store", method=n).score(inputs) for n in (10, 14)}
    assert runs[14].failures == {}

    def keys(run, *tasks):
        return sorted(r["cache_key"] for line in (run.run_dir / "records.jsonl").read_text().splitlines()
                      if (r := json.loads(line))["task"] in tasks)

    shared = ("align_facts", "align_questions", "align_entities", "direct_score")
    assert keys(runs[14], *shared) == keys(runs[10], *shared) and keys(runs[14], "check_faithfulness")
    assert json.loads((runs[14].run_dir / "spec.json").read_text())["method"]["sentences_on_passages"] is True


def test_an_exact_reading_bounds_an_answer_a_top_k_engine_left_out_never_certainty():
    """Where the alternatives hold no " false" (a top-20 engine), version 15 charges false the lowest listed
    probability (an upper bound) and names it; where the engine gave every answer token (`complete`), false's
    absence means its mass is negligible. Earlier versions read P(true) = 1 there, as they always did."""
    top = {" true": log(0.6), '"': log(0.3), "{": log(0.05)}
    assert distribution(top, ("true", "false")).p["true"] == 1.0  # versions 7-14, reproduced
    bounded = distribution(top, ("true", "false"), exact=True)
    assert bounded.p["true"] == pytest.approx(0.6 / 0.65) and bounded.bounded == ("false",)
    assert bounded.answer_mass == pytest.approx(0.6)
    complete = distribution(top, ("true", "false"), exact=True, complete=True)
    assert complete.p["true"] == 1.0 and complete.bounded == ()
    # a token without text (a control token) is no answer in an exact reading; earlier it decided nothing
    assert distribution({"": log(0.5), " true": log(0.5)}, ("true", "false"), exact=True, complete=True).answer_mass == 0.5
    assert distribution({"": log(0.5), " true": log(0.5)}, ("true", "false")).width == pytest.approx(0.5)


def test_version_15_reads_every_judgment_and_fails_a_reading_with_little_mass_on_its_answers(tmp_path, small_input):
    """Version 15 reads each kind in the form earlier versions measured best (version 7's facts, questions, attributes
    and direct score, byte for byte; version 14's sentence check), each request naming its answers so that an engine
    with the whole distribution adds every token of them. A reading with less than half its next-token mass on the
    answers is a failed item (failure class low_answer_mass), its mass recorded; others record theirs."""
    config = ModelConfig.load(str(RESPONDER_CONFIG))
    seven, fourteen, fifteen = (Judge(config, method_version(n)) for n in (7, 14, 15))
    document = Document(doc_id="factory", text=FACTORY, sha256=sha256_text(FACTORY))
    scaffold = Scaffold(key="k", doc_id="factory", document_sha256=document.sha256, questions=(), entities=(),
                        facts=(Fact(id="F1", text="Alpha Corp opened a factory.", label="main point"),))
    candidate = Candidate(record=1, doc_id="factory", system="a", summary="Alpha Corp opened a factory. It is big.")
    for task, like in (("align_facts", seven), ("direct_score", seven), ("check_faithfulness", fourteen)):
        ours, theirs = (j.plan(scaffold, document, candidate, task=task) for j in (fifteen, like))
        assert [p.request.messages for p in ours] == [p.request.messages for p in theirs], task
        assert all(p.request.answers == p.reading.space for p in ours)
        assert {p.cache_key for p in ours}.isdisjoint(p.cache_key for p in theirs)  # exact readings: their own
    verdict = fifteen.plan(scaffold, document, candidate, task="align_facts")[0]
    thin = fifteen.record(verdict, Result(id="r", text="", finish_reason="stop", answers_complete=True,
                                          next_token={'"': log(0.7), " true": log(0.2), " false": log(0.1)}))
    assert thin.parsed is None and thin.failure == "low_answer_mass" and thin.answer_mass == pytest.approx(0.3)
    assert "0.300 of its next-token probability" in thin.failed_items["F1"]
    top_k = fifteen.record(verdict, Result(id="r", text="", finish_reason="stop",
                                           next_token={" true": log(0.9), '"': log(0.05)}))
    assert top_k.confidence == {"F1": pytest.approx(0.9 / 0.95)} and top_k.bounded == ["false"]

    outcome = Pipeline(config, tmp_path / "store", method=15).score(load_input(small_input))
    records = [json.loads(line) for line in (outcome.run_dir / "records.jsonl").read_text().splitlines()]
    assert outcome.failures == {} and outcome.usage.judgments.completion_tokens == 0
    assert records and all(r["answer_mass"] > 0.5 and "bounded" not in r for r in records)  # the judgments only


def test_version_16_keeps_a_facts_verdict_when_its_citation_fails_and_cites_a_one_sentence_summarys_sentence():
    """Version 16 sends version 15's requests, less the citation readings of a one-sentence summary (its sentence is
    the citation). A citation reading with too little mass on the answers fails that reading alone ("F1
    sentence_ids"): the fact stays kept, and Fact Focus is undefined where the citation could change it, where
    version 15 voids the fact's verdict."""
    config = ModelConfig.load(str(RESPONDER_CONFIG))
    fifteen, sixteen = Judge(config, method_version(15)), Judge(config, method_version(16))
    document = Document(doc_id="factory", text=FACTORY, sha256=sha256_text(FACTORY))
    scaffold = Scaffold(key="k", doc_id="factory", document_sha256=document.sha256, questions=(), entities=(),
                        facts=(Fact(id="F1", text="Alpha Corp opened a factory.", label="main point"),))
    two = Candidate(record=1, doc_id="factory", system="a", summary="Alpha Corp opened a factory. It is big.")
    one = Candidate(record=2, doc_id="factory", system="b", summary="Alpha Corp opened a factory.")
    plans = {(n, c.system): j.plan(scaffold, document, c, task="align_facts")
             for n, j in ((15, fifteen), (16, sixteen)) for c in (two, one)}
    assert [p.cache_key for p in plans[16, "a"]] == [p.cache_key for p in plans[15, "a"]]
    assert [p.request.id for p in plans[15, "b"]] == ["factory/b/facts/F1", "factory/b/facts/F1/evidence"]
    assert [p.cache_key for p in plans[16, "b"]] == [plans[15, "b"][0].cache_key]  # the verdict's reading only

    kept = {" true": log(0.9), " false": log(0.1)}
    elsewhere = {'"': log(0.8), "1": log(0.1), "2": log(0.1)}  # 0.2 of the mass on the sentence numbers
    outcomes = {}
    for n, judge in ((15, fifteen), (16, sixteen)):
        verdict, citation = plans[n, "a"]
        records = {p.cache_key: judge.record(p, Result(id=p.request.id, text="", finish_reason="stop", next_token=top,
                                                       answers_complete=True))
                   for p, top in ((verdict, kept), (citation, elsewhere))}
        outcomes[n] = judge.summary_verdicts(scaffold, 2, judge.by_kind(plans[n, "a"], records)).views["facts"]
    assert "0.200 of its next-token probability" in outcomes[15].failure("F1")  # the verdict voided, counted by none
    assert outcomes[16].failure("F1") is None and outcomes[16].kept == {"F1": 1.0}
    assert "0.200 of its next-token probability" in outcomes[16].uncited["F1"]
    assert outcomes[16].failed.keys() == {"F1 sentence_ids"}  # listed among the run's failures, with why

    verdict, = plans[16, "b"]
    record = sixteen.record(verdict, Result(id="r", text="", finish_reason="stop", next_token=kept,
                                            answers_complete=True))
    facts = sixteen.summary_verdicts(scaffold, 1, sixteen.by_kind(plans[16, "b"], {verdict.cache_key: record})).views["facts"]
    assert facts.cited == {"F1": [1]} and not facts.uncited


def test_a_sentence_repeated_word_for_word_is_read_for_each_of_its_items():
    """Version 10's question does not number the sentence, so a repeated sentence is the same prompt; its item is in
    the reading's schema, so each is a reading (a cache key) of its own, recorded under its own item."""
    judge = Judge(ModelConfig.load(str(RESPONDER_CONFIG)), method_version(10))
    document = Document(doc_id="factory", text=FACTORY, sha256=sha256_text(FACTORY))
    candidate = Candidate(record=1, doc_id="factory", system="a", summary="It is big. It is big.")
    first, second = judge.plan(None, document, candidate, task="check_faithfulness")
    assert first.request.messages == second.request.messages and first.cache_key != second.cache_key
    answer = {"No": log(0.8), "Yes": log(0.2)}
    records = {p.cache_key: judge.record(p, Result(id=p.request.id, text="", finish_reason="stop", next_token=answer))
               for p in (first, second)}
    joined = judge.by_kind([first, second], records)["faithfulness"]
    assert joined.parsed == {"S1": {"supported": False}, "S2": {"supported": False}}
    assert joined.confidence == {"S1": pytest.approx(0.2), "S2": pytest.approx(0.2)}
    assert judge.sentence_verdicts(joined, 2) == [0.0, 0.0]


def test_a_kill_loses_only_the_readings_in_flight(tmp_path, small_input):
    """An engine that finishes readings one after another reports each: each is stored before the call
    returns, so a run killed inside a call keeps them, and the next run sends only the rest."""
    from scaffold_local.backends.responder import ResponderBackend
    from scaffold_local.data.store import JudgmentCache

    class OneByOne(ResponderBackend):
        killed_after: int | None = 7

        def generate(self, requests):
            results = []
            for index, request in enumerate(requests):
                if request.sampling.reading and type(self).killed_after == 0:
                    raise KeyboardInterrupt("power cut")
                results.append(self.finished(index, self._answer(request)))
                if request.sampling.reading and type(self).killed_after is not None:
                    type(self).killed_after -= 1
            return results

    config = ModelConfig.load(str(RESPONDER_CONFIG))
    with pytest.raises(KeyboardInterrupt):
        Pipeline(config, tmp_path / "store", method=7, backend_factory=OneByOne).score(load_input(small_input))
    cache = JudgmentCache(tmp_path / "store")
    stored = [r for r in cache if r.next_token is not None]
    cache.close()
    assert len(stored) == 7  # each reading reported before the kill is in the store
    OneByOne.killed_after = None
    resumed = Pipeline(config, tmp_path / "store", method=7, backend_factory=OneByOne).score(load_input(small_input))
    assert resumed.requests_reused == 7 and resumed.failures == {}


@pytest.mark.parametrize("version", [7, 8])
def test_justifications_are_written_on_demand_for_the_counted_verdicts_and_kept(tmp_path, small_input, wide_console,
                                                                                version):
    from typer.testing import CliRunner

    from scaffold_local import runs
    from scaffold_local.cli import app
    from scaffold_local.data.store import JudgmentCache
    from scaffold_local.runs.explain import explain

    store = tmp_path / "store"
    runner = CliRunner()
    assert runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store),
                               "--method-version", str(version), "--run-name", "read"]).exit_code == 0
    before = len(JudgmentCache(store))
    shown = runner.invoke(app, ["show", str(store / "runs" / "read"), "--summary", "factory/brief", "--explain"])
    assert shown.exit_code == 0, shown.output
    assert "the best summary sentence holds 100% of its words" in shown.output  # F1, kept: the responder's why
    run = runs.load(store / "runs" / "read")
    explained = {e.item: e for e in explain(run, "factory/brief", ["F1", "F3"])}
    assert set(explained) == {"F1", "F3"} and explained["F1"].verdict and not explained["F3"].verdict
    assert explained["F3"].text.startswith("the best summary sentence holds") and explained["F3"].failure is None
    cache = JudgmentCache(store)
    written = [r for r in cache if r.task.startswith("explain:")]
    assert len(cache) == before + len(written) and len(written) >= 4  # each kept, under a task no metric reads
    # each written on its reading's own prompt, the counted verdict in the answer's own shape
    from scaffold_local.runs.explain import _explanation_request

    reading = _fact_reading(Judge(ModelConfig.load(str(RESPONDER_CONFIG)), method_version(version)))[0]
    asked = _explanation_request("fingerprint", reading, "inferred", False).request.messages[-1].content
    assert asked == ('{"F1": {' if version == 8 else "{") + '"inferred": false, "justification": "'
    cache.close()
    # a second look sends nothing (read back from the store); the run's metrics never read them
    assert [e.text for e in explain(run, "factory/brief")] and len(JudgmentCache(store)) == before + len(written)
    assert runs.load(store / "runs" / "read").summaries == run.summaries
    assert runner.invoke(app, ["score", str(small_input), "-m", str(RESPONDER_CONFIG), "--store", str(store),
                               "--method-version", "6", "--run-name", "written"]).exit_code == 0
    refused = runner.invoke(app, ["show", str(store / "runs" / "written"), "--summary", "factory/brief", "--explain"])
    assert refused.exit_code == 2 and "wrote a justification with every verdict" in " ".join(refused.output.split())
