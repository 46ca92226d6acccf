"""Bad model output (issue 12, item 4): every bad output is recorded per item with its raw text and
its failure class, and no metric ever counts it: the metrics that needed it are undefined for that
summary, with the reason, and left out of the system means (never counted as 0 or 1).

Bad outputs come from `Scripted`, the responder with chosen texts for chosen requests; the HTTP
cases from a loopback server that sends chosen raw responses."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest

from scaffold_local.backends import Message, Request, Sampling
from scaffold_local.backends.openai import OpenAIBackend
from scaffold_local.backends.protocol import Result, Usage
from scaffold_local.backends.responder import ResponderBackend
from scaffold_local.data.loading import load_input
from scaffold_local.judging.config import ModelConfig
from scaffold_local.method.metrics import system_means
from scaffold_local.records import RETRYABLE_FAILURES
from scaffold_local.runs.pipeline import Pipeline

from .helpers import FACTORY, LIBRARY, hosted_config_file, minimal_instance, send_reply, serve, write_jsonl

# factory/good: F1..F5 (F5 "other"), Q1..Q4, three entities; two summary sentences (see helpers.py).
GOOD = "Alpha Corp opened a factory in Denton on Monday. The factory employs 200 local workers."
# Another system's summary (not GOOD: one text is one request, judged once for every system that has it).
OTHER = "Alpha Corp opened a factory in Denton on Monday. It builds solar panels for homes and schools."


class Scripted(ResponderBackend):
    """The responder, except for the requests named in `script`: request id -> (text, finish_reason),
    or a function of the responder's own answer text that returns one."""

    script: dict = {}

    def _answer(self, request: Request) -> Result:
        own = super()._answer(request)
        if request.id not in self.script:
            return own
        chosen = self.script[request.id]
        text, finish = chosen(own.text) if callable(chosen) else chosen
        return Result(id=request.id, text=text, finish_reason=finish,
                      usage=Usage(prompt_tokens=own.usage.prompt_tokens if own.usage else 0, completion_tokens=9))


def score_with(config, tmp_path, script: dict):
    """Score system "bad" (GOOD) and "good" (OTHER) with the script; also without it, in another
    store, for the values every metric the bad output did not touch must keep."""
    scores = _score(config, tmp_path / "baseline", {})[2]
    outcome, records, scripted, seen = _score(config, tmp_path / "scripted", script)
    scripted["baseline"] = scores["bad"]
    scripted["baseline-good"] = scores["good"]
    return outcome, records, scripted, seen


def _score(config, tmp_path, script: dict, store=None):
    tmp_path.mkdir()
    rows = [{"doc_id": "f", "document": FACTORY, "system": "bad", "summary": GOOD},
            {"doc_id": "f", "document": FACTORY, "system": "good", "summary": OTHER}]
    backend = type("Script", (Scripted,), {"script": script})
    seen: list[Request] = []

    def factory(cfg):
        b = backend(cfg)
        original = b.generate

        def generate(requests):
            seen.extend(requests)
            return original(requests)

        b.generate = generate
        return b

    outcome = Pipeline(config, store or tmp_path / "store", backend_factory=factory).score(
        load_input(write_jsonl(tmp_path / "in.jsonl", rows)))
    records = {r["request_id"]: r for r in map(json.loads, (outcome.run_dir / "records.jsonl").read_text().splitlines())}
    scores = {s.system: s for s in outcome.summaries}
    return outcome, records, scores, seen


def edit(mutate):
    """A script entry that parses the responder's answer, changes it and sends it back complete."""
    def make(text):
        value = json.loads(text)
        mutated = mutate(value)
        return (mutated if isinstance(mutated, str) else json.dumps(mutated)), "stop"
    return make


FACT_METRICS = ("fps", "fc", "main_fc", "supp_fc", "fact_focus")


def assert_only_undefined(scores, keys, reason_start: str, reason_part: str = ""):
    bad, baseline = scores["bad"], scores["baseline"]
    for key in keys:
        assert bad.values[key] is None, key
        assert bad.undefined[key].startswith(reason_start) and reason_part in bad.undefined[key], bad.undefined[key]
        assert baseline.values[key] is not None
    for key, value in baseline.values.items():
        if key not in keys:
            assert bad.values[key] == value, key  # the other verdicts still count, unchanged
    assert scores["good"].values == scores["baseline-good"].values  # another summary: untouched


def assert_only_facts_undefined(scores, reason_part: str):
    assert_only_undefined(scores, FACT_METRICS, "fact alignment failed: ", reason_part)


def assert_left_out_of_means(outcome, keys=FACT_METRICS):
    bad = next(s for s in outcome.systems if s.system == "bad")
    for key in keys:
        mean = bad.metrics[key]
        assert (mean.mean, mean.n, mean.excluded) == (None, 0, 1), key  # never a 0 or a 1 standing in for it


# ---------------------------------------------------------------- truncated at the token limit


def test_truncated_twice_is_recorded_with_its_raw_text(responder_config, tmp_path):
    cut = '{"F1":{"justification":"matched sentences [1]","sentence_ids":[1],"inferred":true},"F2":{"justif'
    outcome, records, scores, seen = score_with(responder_config, tmp_path, {"f/bad/facts": (cut, "length")})
    record = records["f/bad/facts"]
    assert (record["failure"], record["text"], record["finish_reason"], record["attempts"]) == (
        "truncated", cut, "length", 2)
    first = next(r for r in seen if r.id == "f/bad/facts")
    assert record["max_tokens"] == 2 * first.sampling.max_tokens  # sent once more with twice the budget
    assert "(output cut off at max_tokens)" in record["validation_error"]
    assert_only_facts_undefined(scores, "cut off at max_tokens")
    assert_left_out_of_means(outcome)
    assert outcome.failures == {"truncated": 1} and "truncated" not in RETRYABLE_FAILURES


def test_truncated_once_then_complete_counts_the_complete_answer(responder_config, tmp_path):
    calls = []

    def once(text):
        calls.append(text)
        return (text[:20], "length") if len(calls) == 1 else (text, "stop")

    outcome, records, scores, _ = score_with(responder_config, tmp_path, {"f/bad/facts": once})
    record = records["f/bad/facts"]
    assert record["failure"] is None and record["attempts"] == 2 and record["parsed"]
    assert scores["bad"].values == scores["baseline"].values


# ---------------------------------------------------------------- valid JSON, wrong ids


def _rename(old, new):
    def mutate(value):
        value[new] = value.pop(old)
        return value
    return mutate


def _drop(item):
    def mutate(value):
        del value[item]
        return value
    return mutate


def _repeat_first(text):  # the first item's key twice: json.loads would keep only the last one
    value = json.loads(text)
    first = next(iter(value))
    body = json.dumps(value)[1:-1]
    return "{" + body + ", " + json.dumps(first) + ": " + json.dumps(value[first]) + "}", "stop"


def _cite(ids):
    def mutate(value):
        value["F1"] = {"justification": "cited", "sentence_ids": ids, "inferred": True}
        return value
    return mutate


# A verdict that fails alone: the others keep theirs (issue 18, point 4). Each case fails main fact F1 or F2,
# so by hand: the other main fact is judged and kept (Main FC 1 over 1 of 2), F3 and F4 are judged and
# missed (Supp FC 0), FC = 1/3 over 3 of the 4 main and supporting facts, FPS = 1 x (1 - 0) = 1, and Fact
# Focus is undefined: the judged facts align one of the 2 sentences, and the failed fact could align the other.
@pytest.mark.parametrize("script, failed, reason", [
    (edit(_rename("F2", "F9")), {"F2", "F9"}, "F9: not an item of this request"),  # an id the scaffold lacks
    (edit(_drop("F2")), {"F2"}, "F2: missing"),                               # an item left out
    (_repeat_first, {"F1"}, "F1: duplicate key"),                              # an item judged twice
    (edit(_cite([3])), {"F1"}, "F1"),                                         # a sentence id past the summary's 2 sentences
    (edit(_cite([0])), {"F1"}, "F1"),                                         # sentence ids start at 1
    (edit(_cite([1, 1])), {"F1"}, "F1: sentence_ids: duplicate ids [1, 1]"),  # a sentence cited twice
    (edit(lambda v: {**v, "F1": {"justification": "x", "sentence_ids": [], "inferred": True}}), {"F1"}, "F1"),  # no evidence
    (edit(lambda v: {**v, "F1": {**v["F1"], "inferred": "yes"}}), {"F1"}, "F1"),  # a string for a boolean
], ids=["unknown-id", "missing-id", "repeated-id", "sentence-past-end", "sentence-0", "cited-twice",
        "verdict-without-evidence", "wrong-type"])
def test_a_bad_fact_verdict_fails_alone_and_the_other_verdicts_count(responder_config, tmp_path, script, failed, reason):
    outcome, records, scores, _ = score_with(responder_config, tmp_path, {"f/bad/facts": script})
    record = records["f/bad/facts"]
    assert record["failure"] == "validation" and record["attempts"] == 1 and reason in record["validation_error"]
    assert set(record["failed_items"]) == failed and not failed & set(record["parsed"])
    assert set(record["parsed"]) == {"F1", "F2", "F3", "F4", "F5"} - failed
    bad, baseline = scores["bad"], scores["baseline"]
    [lost] = {"F1", "F2"} & failed
    assert {k: bad.values[k] for k in FACT_METRICS} == {
        "fps": 1.0, "fc": pytest.approx(1 / 3), "main_fc": 1.0, "supp_fc": 0.0, "fact_focus": None}
    assert bad.notes["fc"] == f"FC over 3 of 4 facts: no valid verdict for {lost}"
    assert bad.notes["main_fc"] == f"Main FC over 1 of 2 main facts: no valid verdict for {lost}"
    assert "supp_fc" not in bad.notes and lost in bad.notes["fps"]
    assert lost in bad.undefined["fact_focus"] and "could align" in bad.undefined["fact_focus"]
    assert all(bad.values[k] == v for k, v in baseline.values.items() if k not in FACT_METRICS)
    assert scores["good"].values == scores["baseline-good"].values
    means = next(s for s in outcome.systems if s.system == "bad").metrics
    assert (means["fc"].n, means["fc"].excluded, means["fc"].partial) == (1, 0, 1)
    assert (means["fact_focus"].n, means["fact_focus"].excluded) == (0, 1)
    assert outcome.failures == {"validation": 1} and outcome.validation_failures == 1  # still one failed judgment
    usage = json.loads((outcome.run_dir / "usage.json").read_text())["judgments"]
    assert usage["failures"] == {"validation": 1} and usage["items_failed_alone"] == len(failed)


def _duplicate_and_unknown(item):
    """The responder's answer with `item` given twice and an extra item F9 the scaffold does not have."""
    def make(text):
        value = json.loads(text)
        value["F9"] = value["F4"]
        body = json.dumps(value)[1:-1]
        return "{" + body + ", " + json.dumps(item) + ": " + json.dumps(value[item]) + "}", "stop"
    return make


@pytest.mark.parametrize("item, expected, notes", [
    # F1 (main) given twice: F2 kept (Main FC 1/1), F3, F4 missed (Supp FC 0/2), FC 1/3, FPS 1 x (1 - 0) = 1;
    # the judged facts align sentence 2 only and F1 could align sentence 1: Fact Focus undefined.
    ("F1", {"fps": 1.0, "fc": 1 / 3, "main_fc": 1.0, "supp_fc": 0.0, "fact_focus": None},
     {"fps", "fc", "main_fc"}),
    # F3 (supporting) given twice: F1, F2 kept (Main FC 2/2), F4 missed (Supp FC 0/1), FC 2/3, FPS 1 x (1 - 0) = 1;
    # F1 and F2 align both sentences, so F3 cannot change Fact Focus: 2/2, exact.
    ("F3", {"fps": 1.0, "fc": 2 / 3, "main_fc": 1.0, "supp_fc": 0.0, "fact_focus": 1.0},
     {"fps", "fc", "supp_fc", "fact_focus"}),
])
def test_a_duplicate_and_an_unknown_id_fail_alone(responder_config, tmp_path, item, expected, notes):
    """METHOD.md: a duplicate or unknown id is a validation error for that item, never silently counted.
    The other items' verdicts count; the metrics that needed the failed item are over the judged items
    and say so, or undefined with the reason (Fact Focus, where the failed fact could change it)."""
    outcome, records, scores, _ = score_with(responder_config, tmp_path, {"f/bad/facts": _duplicate_and_unknown(item)})
    record = records["f/bad/facts"]
    assert (record["failure"], set(record["failed_items"])) == ("validation", {item, "F9"})
    assert record["text"].count(f'"{item}"') == 2  # the raw text, as the judge wrote it
    assert set(record["parsed"]) == {"F1", "F2", "F3", "F4", "F5"} - {item}
    bad = scores["bad"]
    assert {k: bad.values[k] for k in FACT_METRICS} == {k: pytest.approx(v) if v is not None else None
                                                         for k, v in expected.items()}
    assert set(bad.notes) == notes and all(item in note and "F9" not in note for note in bad.notes.values())
    assert set(bad.undefined) == ({"fact_focus", "rouge_l"} if expected["fact_focus"] is None else {"rouge_l"})
    assert outcome.failures == {"validation": 1}


@pytest.mark.parametrize("script, reason", [
    (edit(lambda v: [v]), "schema violation"),                # an array, not an object
    (edit(lambda v: {k: {"inferred": "no"} for k in v}), "F1"),  # no valid verdict at all
    (lambda text: ("The summary conveys every fact.", "stop"), "not valid JSON"),
    (lambda text: ("", "stop"), "empty output"),
    (lambda text: (None, "stop"), "empty output"),
], ids=["array", "every-item-bad", "prose", "empty", "none"])
def test_an_output_bad_as_a_whole_is_kept_raw_and_never_counted(responder_config, tmp_path, script, reason):
    outcome, records, scores, _ = score_with(responder_config, tmp_path, {"f/bad/facts": script})
    record = records["f/bad/facts"]
    assert record["failure"] == "validation" and record["parsed"] is None and record["attempts"] == 1
    assert reason in record["validation_error"]
    assert_only_facts_undefined(scores, reason)
    assert_left_out_of_means(outcome)
    assert outcome.failures == {"validation": 1} and outcome.validation_failures == 1
    usage = json.loads((outcome.run_dir / "usage.json").read_text())
    assert usage["judgments"]["failures"] == {"validation": 1}


def test_an_output_stored_before_items_were_read_alone_is_read_again(responder_config, tmp_path):
    """A store written before issue 18 holds the output whole-rejected: the next run reads its text
    again, item by item, without calling the engine."""
    from scaffold_local.data.store import JudgmentCache

    script = {"f/bad/facts": edit(_cite([1, 1]))}
    _, records, _, _ = _score(responder_config, tmp_path / "first", script)
    cache = JudgmentCache(tmp_path / "first" / "store")
    key = records["f/bad/facts"]["cache_key"]
    stored = cache.get([key])[key]
    cache.put([stored.model_copy(update={"parsed": None, "failed_items": None,
                                         "validation_error": "F1.sentence_ids: duplicate ids [1, 1]"})])
    cache.close()
    outcome, again, scores, seen = _score(responder_config, tmp_path / "again", {}, store=tmp_path / "first" / "store")
    assert not any(r.id == "f/bad/facts" for r in seen)  # not sent: the stored text read again
    assert set(again["f/bad/facts"]["failed_items"]) == {"F1"} and "F2" in again["f/bad/facts"]["parsed"]
    assert scores["bad"].values["fc"] == pytest.approx(1 / 3)


def test_the_raw_text_of_a_bad_verdict_is_kept_verbatim(responder_config, tmp_path):
    raw = '{"F1": {"justification": "x", "sentence_ids": [7], "inferred": true}} trailing words'
    _, records, _, _ = score_with(responder_config, tmp_path, {"f/bad/facts": (raw, "stop")})
    assert records["f/bad/facts"]["text"] == raw and records["f/bad/facts"]["failure"] == "validation"


@pytest.mark.parametrize("kind, keys, reason", [
    ("questions", ("qps", "qc"), "question alignment failed"),
    ("entities", ("eps",), "entity alignment failed"),
    ("faithfulness", ("f",), "faithfulness check failed"),
    ("direct_score", ("ds", "ds_faithfulness", "ds_completeness", "ds_understandability", "ds_hallucination"),
     "direct score failed"),
])
def test_each_judgment_kind_leaves_out_only_its_own_metrics(responder_config, tmp_path, kind, keys, reason):
    outcome, records, scores, _ = score_with(responder_config, tmp_path, {f"f/bad/{kind}": ('{"S9": 1}', "stop")})
    assert records[f"f/bad/{kind}"]["failure"] == "validation"
    assert records[f"f/bad/{kind}"]["text"] == '{"S9": 1}'
    assert_only_undefined(scores, keys, reason)
    assert_left_out_of_means(outcome, keys)


def test_a_bad_extraction_output_leaves_its_view_undefined_for_every_summary(responder_config, tmp_path):
    outcome, records, scores, seen = score_with(responder_config, tmp_path,
                                                {"f/extract/facts": ('{"facts": [{"fact": "x"}]}', "stop")})
    assert records  # the run completed
    assert not any(r.id.endswith("/facts") and "/extract/" not in r.id for r in seen)  # nothing to align against
    scores = {k: v for k, v in scores.items() if k in ("bad", "good")}
    for system in ("bad", "good"):
        for key in FACT_METRICS:
            assert scores[system].values[key] is None
            assert scores[system].undefined[key].startswith("fact extraction failed: schema violation")
        assert scores[system].values["qps"] is not None
    for summary in system_means(list(scores.values())):
        assert summary.metrics["fc"].excluded == 1 and summary.metrics["fc"].mean is None


def test_an_entity_without_attributes_from_a_judge_leaves_eps_undefined_not_a_crash(responder_config, tmp_path):
    """A judge without a grammar can name an entity and give it no attribute: the entity view fails
    validation (the schema asks for at least one), EPS is undefined with the reason, the rest counts."""
    no_attributes = '{"entities": [{"name": "Denton", "kind": "other", "attributes": []}]}'
    outcome, _, scores, _ = score_with(responder_config, tmp_path, {"f/extract/entities": (no_attributes, "stop")})
    assert outcome.run_dir.joinpath("systems.json").is_file()  # the run completed
    for system in ("bad", "good"):
        assert scores[system].values["eps"] is None
        assert scores[system].undefined["eps"].startswith("entity extraction failed: schema violation")
        assert scores[system].values["fc"] == scores[f"baseline{'' if system == 'bad' else '-good'}"].values["fc"]


def test_metric_means_are_over_valid_verdicts_only(responder_config, tmp_path):
    """Two systems, each with one valid and one invalid summary: the mean is the valid one's value."""
    rows = [{"doc_id": "f", "document": FACTORY, "system": "a", "summary": GOOD},
            {"doc_id": "f", "document": FACTORY, "system": "b", "summary": OTHER},
            {"doc_id": "g", "document": LIBRARY, "system": "a", "summary": "The Oakvale library now lends bicycles."},
            {"doc_id": "g", "document": LIBRARY, "system": "b", "summary": "Members may borrow a bicycle for seven days."}]
    backend = type("Script", (Scripted,), {"script": {"g/a/facts": ("{}", "stop"), "g/b/questions": ("{", "stop")}})
    outcome = Pipeline(responder_config, tmp_path / "store", backend_factory=backend).score(
        load_input(write_jsonl(tmp_path / "in.jsonl", rows)))
    values = {(s.doc_id, s.system): s.values for s in outcome.summaries}
    means = {s.system: s.metrics for s in outcome.systems}
    assert means["a"]["fc"].mean == values[("f", "a")]["fc"] and means["a"]["fc"].excluded == 1
    assert means["a"]["qc"].n == 2 and means["b"]["qc"].n == 1 and means["b"]["fc"].n == 2
    assert means["b"]["qc"].excluded_reasons and all("alignment failed" in r for r in means["b"]["qc"].excluded_reasons)


# ---------------------------------------------------------------- HTTP: empty choices, wrong content type


class RawStub:
    """A loopback server that answers each POST with a chosen (status, content type, body)."""

    def __init__(self, reply):
        self.reply = reply
        self.bodies: list[dict] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.bodies.append(body)
                send_reply(self, *stub.reply(body))

        self.server, self.url = serve(Handler)

    def close(self):
        self.server.shutdown()


@pytest.fixture
def raw_stub():
    stubs = []

    def make(reply):
        stubs.append(RawStub(reply))
        return stubs[-1]

    yield make
    for stub in stubs:
        stub.close()


SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}


def make_request(i: int) -> Request:
    return Request(id=f"doc/sys/facts{i}", messages=(Message(role="user", content=f"Question {i}"),),
                   json_schema=SCHEMA, sampling=Sampling(max_tokens=32))


def backend_for(url: str) -> OpenAIBackend:
    return OpenAIBackend(ModelConfig(name="t", backend="openai", model="judge",
                                     engine={"base_url": url, "backoff_s": 0.01, "max_retries": 0}))


def chat(content, **extra) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 2}, **extra}).encode()


HTML = b"<html><body><h1>502 Bad Gateway</h1>upstream sent garbage</body></html>"
BAD_REPLIES = {
    "empty-choices": (200, "application/json", b'{"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 0}}'),
    "no-choices": (200, "application/json", b'{"object": "error", "message": "model overloaded"}'),
    "html-page": (200, "text/html", HTML),
    "truncated-body": (200, "application/json", b'{"choices": [{"message": {"content": "{\\"ok'),
}


def one_bad(kind):
    """Request 1 gets the bad reply; requests 0 and 2 a good one."""
    def reply(body):
        if body["messages"][0]["content"] == "Question 1":
            return BAD_REPLIES[kind]
        return 200, "application/json", chat('{"ok": true}')
    return reply


@pytest.mark.parametrize("kind", list(BAD_REPLIES))
def test_a_malformed_http_answer_is_one_item_failure_with_its_class(raw_stub, kind):
    stub = raw_stub(one_bad(kind))
    results = backend_for(stub.url).generate([make_request(i) for i in range(3)])
    assert [r.id for r in results] == [f"doc/sys/facts{i}" for i in range(3)]
    assert [r.finish_reason for r in results] == ["stop", "error", "stop"]  # the batch goes on
    assert results[1].failure == "server_error" and results[1].text is None and results[1].error




@pytest.mark.parametrize("kind", [
    "empty-choices",  # a 200 answer without choices: retried, then server_error with the raw body
    "no-choices",
    "html-page",
    "truncated-body",
])
def test_a_malformed_http_answer_keeps_the_raw_body(raw_stub, kind):
    stub = raw_stub(one_bad(kind))
    result = backend_for(stub.url).generate([make_request(i) for i in range(3)])[1]
    status, content_type, body = BAD_REPLIES[kind]
    assert result.failure == "server_error"
    assert body.decode()[:36] in result.error  # the server's own answer, to see what went wrong


def test_a_json_answer_with_a_wrong_content_type_is_still_read(raw_stub):
    stub = raw_stub(lambda body: (200, "text/plain; charset=utf-8", chat('{"ok": false}')))
    [result] = backend_for(stub.url).generate([make_request(0)])
    assert (result.finish_reason, result.text) == ("stop", '{"ok": false}')


def test_a_null_content_is_a_validation_failure_not_a_crash(raw_stub, tmp_path):
    """Through the pipeline: a hosted judge that answers one judgment with `content: null`, another
    with an empty choice list, the rest validly. Each is recorded with its class; the run completes."""
    def reply(body):
        schema = body["response_format"]["json_schema"]["schema"]
        name = body["response_format"]["json_schema"]["name"]
        user = body["messages"][-1]["content"]
        if name == "faithfulness" and "It has 200 workers" in user:
            return 200, "application/json", chat(None)
        if name == "direct_score" and "It has 200 workers" in user:
            return 200, "application/json", b'{"choices": []}'
        return 200, "application/json", chat(json.dumps(minimal_instance(schema)))

    stub = raw_stub(reply)
    config = ModelConfig.load(str(hosted_config_file(tmp_path / "hosted.toml", stub.url, method_version=2, max_retries=0)))
    rows = [{"doc_id": "f", "document": FACTORY, "system": "bad", "summary": "Alpha opened a plant. It has 200 workers."},
            {"doc_id": "f", "document": FACTORY, "system": "good", "summary": "Alpha Corp opened a factory."}]
    outcome = Pipeline(config, tmp_path / "store").score(load_input(write_jsonl(tmp_path / "in.jsonl", rows)))
    records = {r["request_id"]: r for r in map(json.loads, (outcome.run_dir / "records.jsonl").read_text().splitlines())}
    assert records["f/bad/faithfulness"]["failure"] == "validation"
    assert records["f/bad/faithfulness"]["validation_error"] == "empty output"
    assert records["f/bad/direct_score"]["failure"] == "server_error"  # retryable: sent again next run
    scores = {s.system: s for s in outcome.summaries}
    assert scores["bad"].values["f"] is None and scores["bad"].values["ds"] is None
    assert scores["good"].values["f"] is not None and scores["good"].values["ds"] is not None, scores["good"].undefined
    assert outcome.failures == {"validation": 1, "server_error": 1}
