"""End to end with the responder backend: exact metrics, resume, crash safety, bad input, provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scaffold_local.backends.responder import ResponderBackend
from scaffold_local.data.loading import load_input
from scaffold_local.data.store import JudgmentCache, SpecMismatch
from scaffold_local.runs.pipeline import Pipeline

from .helpers import FACTORY, LIBRARY, write_jsonl

# Worked out by hand from the responder's rules (see tests/helpers.py and backends/responder.py):
# factory scaffold F1, F2 main / F3, F4 supporting / F5 other; its attributes (every one counts in
# EPS, whatever its label): Denton (F1 main, F5 other), Monday (F1), Denton Daily (F5 other).
# library scaffold F1, F2 main / F3 supporting / F4 other; attributes: Oakvale Cycling Club (F3),
# Town News (F4 other). DS is the mean of the four axes.
EXPECTED = {
    ("factory", "brief"): {"fps": 1.0, "qps": 1.0, "eps": 2 / 4, "f": 1.0, "fc": 0.5, "main_fc": 1.0, "supp_fc": 0.0,
                           "fact_focus": 1.0, "qc": 0.5, "ds_faithfulness": 10, "ds_completeness": 10,
                           "ds_understandability": 8, "ds_hallucination": 10, "ds": 9.5},
    # F1, F3, F4 inferred; the 4th sentence ("export 900 panels") is unsupported -> entity error.
    ("factory", "details"): {"fps": 0.0, "qps": 0.0, "eps": 2 / 4, "f": 0.75, "fc": 0.75, "main_fc": 0.5,
                             "supp_fc": 1.0, "fact_focus": 0.75, "qc": 0.75, "ds_faithfulness": 8, "ds_completeness": 5,
                             "ds_understandability": 8, "ds_hallucination": 8, "ds": 7.25},
    ("library", "brief"): {"fps": 1.0, "qps": 1.0, "eps": 0.0, "f": 1.0, "fc": 2 / 3, "main_fc": 1.0, "supp_fc": 0.0,
                           "fact_focus": 1.0, "qc": 2 / 3, "ds_faithfulness": 10, "ds_completeness": 10,
                           "ds_understandability": 8, "ds_hallucination": 10, "ds": 9.5},
    ("library", "details"): {"fps": 0.0, "qps": 0.0, "eps": 1 / 2, "f": 1.0, "fc": 1 / 3, "main_fc": 0.0,
                             "supp_fc": 1.0, "fact_focus": 1.0, "qc": 1 / 3, "ds_faithfulness": 10, "ds_completeness": 1,
                             "ds_understandability": 8, "ds_hallucination": 10, "ds": 7.25},
}


class CountingFactory:
    """Builds responder backends and counts requests, so tests can see what was (not) recomputed."""

    def __init__(self, backend_class=ResponderBackend):
        self.backend_class = backend_class
        self.started = 0
        self.requests: list[str] = []

    def __call__(self, config):
        self.started += 1
        backend = self.backend_class(config)
        original = backend.generate

        def generate(requests):
            self.requests.extend(r.id for r in requests)
            return original(requests)

        backend.generate = generate
        return backend


def run(config, store: Path, input_path: Path, factory=None, **kwargs):
    pipeline = Pipeline(config, store, backend_factory=factory or CountingFactory(), **kwargs)
    return pipeline.score(load_input(input_path))


def test_end_to_end_exact_metrics(responder_config, small_input, tmp_path):
    outcome = run(responder_config, tmp_path / "store", small_input)
    got = {(s.doc_id, s.system): s.values for s in outcome.summaries}
    assert set(got) == set(EXPECTED)
    for key, expected in EXPECTED.items():
        for metric, value in expected.items():
            assert got[key][metric] == pytest.approx(value), (key, metric)
        assert got[key]["rouge_l"] is None  # no references in this input
    systems = {s.system: s.metrics for s in outcome.systems}
    assert systems["brief"]["eps"].mean == pytest.approx(0.25)
    assert systems["details"]["fc"].mean == pytest.approx((0.75 + 1 / 3) / 2)
    assert systems["details"]["f"].n == 2 and systems["details"]["f"].excluded == 0
    assert outcome.requests_sent == 4 * 5 and outcome.validation_failures == 0


def test_the_default_method_reads_the_verdicts_the_written_rules_give_and_resumes_without_sending(
        responder_config, small_input, tmp_path):
    """Under the default method (version 17) every judgment is read: the responder's P(kept) is 0.5 exactly where its
    written rule's overlap threshold lies, so at P >= 0.5 (no thresholds in this config) the verdicts, and every
    metric counted from facts, questions and attributes, are the hand-worked ones above; a rerun sends nothing."""
    default = responder_config.model_copy(update={"method_version": None})
    outcome = run(default, tmp_path / "store", small_input)
    assert outcome.validation_failures == 0 and outcome.requests_sent > 4 * 5  # one request per item, not per view
    counted = ("fps", "qps", "eps", "fc", "main_fc", "supp_fc", "qc")
    got = {(s.doc_id, s.system): s.values for s in outcome.summaries}
    for key, expected in EXPECTED.items():
        assert {m: got[key][m] for m in counted} == pytest.approx({m: expected[m] for m in counted}), key
    factory = CountingFactory()
    again = run(default, tmp_path / "store", small_input, factory)
    assert factory.started == 0 and again.requests_sent == 0 and again.resumed


def test_rerun_resumes_from_the_store_without_starting_the_engine(responder_config, small_input, tmp_path):
    first = run(responder_config, tmp_path / "store", small_input)
    factory = CountingFactory()
    second = run(responder_config, tmp_path / "store", small_input, factory)
    assert factory.started == 0 and factory.requests == []
    assert second.resumed and second.run_dir == first.run_dir
    assert second.requests_sent == 0 and second.requests_reused == 20
    assert second.extraction.reused == 2 and second.extraction.computed == 0
    assert [s.values for s in second.summaries] == [s.values for s in first.summaries]


def test_scaffolds_are_reused_for_a_new_candidate_set(responder_config, small_input, tmp_path):
    run(responder_config, tmp_path / "store", small_input)
    other = write_jsonl(tmp_path / "other.jsonl", [
        {"doc_id": "factory", "document": FACTORY, "system": "new", "summary": "The factory employs 200 local workers."},
    ])
    factory = CountingFactory()
    outcome = run(responder_config, tmp_path / "store", other, factory)
    assert outcome.extraction.reused == 1 and outcome.extraction.computed == 0
    assert not any("/extract/" in r for r in factory.requests)
    assert len(factory.requests) == 5  # one summary, five judgments
    assert outcome.summaries[0].values["fps"] == pytest.approx(0.5)


def test_alignment_requests_of_a_scaffold_travel_in_one_batch(responder_config, small_input, tmp_path):
    batches: list[list[str]] = []

    class Recording(ResponderBackend):
        def generate(self, requests):
            batches.append([r.id for r in requests])
            return super().generate(requests)

    run(responder_config, tmp_path / "store", small_input, Recording, batch_requests=10)
    judgment_batches = [b for b in batches if not any("/extract/" in r for r in b)]
    # 10 requests per document: each document's requests form exactly one batch, sorted by task.
    assert [{r.split("/")[0] for r in b} for b in judgment_batches] == [{"factory"}, {"library"}]
    first = judgment_batches[0]
    assert first[:2] == ["factory/brief/entities", "factory/details/entities"]  # same task adjacent


def test_engine_errors_are_retried_on_the_next_run(responder_config, small_input, tmp_path):
    class FailsDirectScore(ResponderBackend):
        def generate(self, requests):
            results = super().generate(requests)
            return [r.model_copy(update={"text": None, "finish_reason": "error", "error": "boom"})
                    if r.id.endswith("/direct_score") else r for r in results]

    first = run(responder_config, tmp_path / "store", small_input, FailsDirectScore)
    assert first.engine_errors == 4
    assert all(s.values["ds_faithfulness"] is None for s in first.summaries)
    assert first.summaries[0].undefined["ds_faithfulness"] == "direct score failed: boom"
    factory = CountingFactory()
    second = run(responder_config, tmp_path / "store", small_input, factory)
    assert sorted(factory.requests) == sorted(f"{d}/{s}/direct_score" for d, s in EXPECTED)
    assert all(s.values["ds_faithfulness"] is not None for s in second.summaries)


def test_a_crash_loses_only_the_batch_in_flight(responder_config, small_input, tmp_path):
    class CrashesOnSecondJudgmentBatch(ResponderBackend):
        calls = 0

        def generate(self, requests):
            if not any("/extract/" in r.id for r in requests):
                type(self).calls += 1
                if type(self).calls == 2:
                    raise KeyboardInterrupt("power cut")
            return super().generate(requests)

    with pytest.raises(KeyboardInterrupt):
        run(responder_config, tmp_path / "store", small_input, CrashesOnSecondJudgmentBatch, batch_requests=10)
    # the first document's batch of judgments is in the store's cache, beside both documents' 3 extractions each
    assert len(JudgmentCache(tmp_path / "store")) == 10 + 6
    run_dir = next((tmp_path / "store" / "runs").iterdir())
    assert json.loads((run_dir / "spec.json").read_text())["status"] == "interrupted"
    factory = CountingFactory()
    outcome = run(responder_config, tmp_path / "store", small_input, factory)
    assert len(factory.requests) == 10 and all(r.startswith("library/") for r in factory.requests)
    assert {(s.doc_id, s.system): s.values["fps"] for s in outcome.summaries} == {
        k: pytest.approx(v["fps"]) for k, v in EXPECTED.items()}


def test_invalid_model_output_is_recorded_with_raw_text_and_not_counted(responder_config, tmp_path):
    rows = [
        {"doc_id": "factory", "document": FACTORY, "system": "ok", "summary": "The factory employs 200 local workers."},
        {"doc_id": "factory", "document": FACTORY, "system": "bad", "summary": "Alpha Corp opened a factory. [[responder:invalid]]"},
    ]
    outcome = run(responder_config, tmp_path / "store", write_jsonl(tmp_path / "in.jsonl", rows))
    assert outcome.validation_failures == 5
    bad = next(s for s in outcome.summaries if s.system == "bad")
    assert bad.values["fps"] is None and bad.undefined["fps"].startswith("fact alignment failed: not valid JSON")
    records = [json.loads(line) for line in (outcome.run_dir / "records.jsonl").read_text().splitlines()]
    bad_records = [r for r in records if r["system"] == "bad"]
    assert len(bad_records) == 5 and all(r["text"] == '{"broken": ' and r["parsed"] is None for r in bad_records)
    ok = next(s for s in outcome.summaries if s.system == "ok")
    assert ok.values["fps"] == pytest.approx(0.5)


def test_bad_input_records_are_named_and_the_run_completes(responder_config, tmp_path):
    path = tmp_path / "mixed.jsonl"
    lines = [
        json.dumps({"doc_id": "factory", "document": FACTORY, "system": "a", "summary": "The factory employs 200 local workers."}),
        json.dumps({"doc_id": "empty", "document": "", "system": "a", "summary": "Something."}),
        json.dumps({"doc_id": "factory", "document": FACTORY, "system": "b", "summary": ""}),
        json.dumps({"doc_id": "factory", "document": FACTORY, "summary": "no system field"}),
        json.dumps({"doc_id": "factory", "document": FACTORY, "system": "a", "summary": "A duplicate."}),
        json.dumps({"doc_id": "library", "document": LIBRARY, "system": "a", "summary": "The library lends bicycles."}),
    ]
    path.write_bytes("\n".join(lines).encode() + b"\n" + '{"document": "caf\xe9"}\n'.encode("latin-1"))
    factory = CountingFactory()
    outcome = run(responder_config, tmp_path / "store", path, factory)
    issues = [json.loads(line) for line in (outcome.run_dir / "input_issues.jsonl").read_text().splitlines()]
    assert [(i["record"], i["field"], i["severity"]) for i in issues] == [
        (2, "document", "error"), (3, "summary", "warning"), (4, "system", "error"), (5, "system", "error"), (7, None, "error")]
    scored = {(s.doc_id, s.system): s for s in outcome.summaries}
    assert set(scored) == {("factory", "a"), ("factory", "b"), ("library", "a")}
    # The empty summary is scored, not dropped: zero coverage, F and Fact Focus undefined, no judge call.
    empty = scored["factory", "b"].values
    assert (empty["fps"], empty["fc"], empty["qc"], empty["eps"], empty["f"], empty["fact_focus"]) == (0.0, 0.0, 0.0, 0.0, None, None)
    assert not any(r.startswith("factory/b/") for r in factory.requests)


def test_run_spec_and_records_carry_provenance(responder_config, small_input, tmp_path):
    outcome = run(responder_config, tmp_path / "store", small_input)
    spec = json.loads((outcome.run_dir / "spec.json").read_text())
    assert spec["judge"]["name"] == "responder" and len(spec["judge_fingerprint"]) == 64
    assert spec["prompts"]["align_facts"]["ref"] == "align_facts.v2" and len(spec["prompts"]["align_facts"]["sha256"]) == 64
    assert spec["method"]["number"] == 2 and spec["method"]["splitter"] == "pysbd" and spec["schemas"]["version"] == "2"
    assert spec["engines"][0]["engine"] == "responder"
    assert spec["versions"]["pydantic"] and spec["input"]["fingerprint"]
    record = json.loads((outcome.run_dir / "records.jsonl").read_text().splitlines()[0])
    for key in ("request_id", "cache_key", "prompt", "schema_sha256", "text", "parsed", "finish_reason", "usage"):
        assert record[key] is not None, key
    usage = json.loads((outcome.run_dir / "usage.json").read_text())
    assert usage["judgments"]["requests"] == 20 and usage["judgments"]["finish_reasons"] == {"stop": 20}
    assert usage["extraction"]["requests"] == 6 and usage["judgments"]["completion_tokens"] > 0
    assert usage["judgments"]["prefix_cache_hit_rate"] is None  # the responder reports no cache
    for name in ("systems.json", "systems.csv", "summaries.jsonl", "summaries.csv", "summaries.parquet", "candidates.jsonl"):
        assert (outcome.run_dir / name).is_file(), name
    import pyarrow.parquet as pq

    assert pq.read_table(outcome.run_dir / "summaries.parquet").num_rows == 4


def test_same_run_name_with_a_different_judge_is_refused(responder_config, small_input, tmp_path):
    Pipeline(responder_config, tmp_path / "store", backend_factory=ResponderBackend).score(load_input(small_input), "mine")
    other = responder_config.model_copy(update={"temperature": 0.7})
    with pytest.raises(SpecMismatch, match="differs in: judge_fingerprint"):
        Pipeline(other, tmp_path / "store", backend_factory=ResponderBackend).score(load_input(small_input), "mine")


def test_one_item_per_request_gives_the_same_metrics_as_one_request_per_view(responder_config, small_input, tmp_path):
    """Method v5 asks about each fact, question, entity and sentence alone and joins the verdicts: on
    the responder (whose rules are per item) every metric equals the hand-worked ones."""
    factory = CountingFactory()
    outcome = run(responder_config, tmp_path / "store", small_input, factory, method=5)
    got = {(s.doc_id, s.system): s.values for s in outcome.summaries}
    for key, expected in EXPECTED.items():
        for metric, value in expected.items():
            assert got[key][metric] == pytest.approx(value), (key, metric)
    per_item = [r for r in factory.requests if r.count("/") == 3]
    assert per_item and all(r.rsplit("/", 1)[1][0] in "FQES" for r in per_item)
    assert outcome.requests_sent == len(factory.requests) - 6  # 2 documents x 3 extraction views


def test_one_failed_item_request_fails_that_item_alone(responder_config, tmp_path):
    """Method v5: the request about fact F2 and the one about sentence S2 fail; every other item's
    verdict counts. By hand (factory: F1, F2 main; F3, F4 supporting): F1 kept, F3, F4 missed, so Main
    FC 1 over 1 of 2, Supp FC 0, FC 1/3 over 3 of 4, FPS 1 x (1 - 0) = 1; Fact Focus undefined (the
    judged facts align sentence 1 only, F2 could align sentence 2); F 1/1 over 1 of 2 sentences. The
    failed requests keep their raw text, each counted as one validation failure."""
    from scaffold_local import runs
    from scaffold_local.backends.protocol import Result

    broken = {"factory/brief/facts/F2": '{"F2": {"inferred": tru', "factory/brief/faithfulness/S2": '{"S2": {}}'}

    class TwoBadItems(ResponderBackend):
        def generate(self, requests):
            return [Result(id=r.id, text=broken[r.id], finish_reason="stop") if r.id in broken else result
                    for r, result in zip(requests, super().generate(requests))]

    rows = [{"doc_id": "factory", "document": FACTORY, "system": "brief",
             "summary": "Alpha Corp opened a factory in Denton on Monday. It employs 200 local workers."}]
    outcome = run(responder_config, tmp_path / "store", write_jsonl(tmp_path / "in.jsonl", rows),
                  CountingFactory(TwoBadItems), method=5)
    summary = outcome.summaries[0]
    assert {k: summary.values[k] for k in ("fps", "fc", "main_fc", "supp_fc", "fact_focus", "f")} == {
        "fps": 1.0, "fc": pytest.approx(1 / 3), "main_fc": 1.0, "supp_fc": 0.0, "fact_focus": None, "f": 1.0}
    assert summary.notes["fc"] == "FC over 3 of 4 facts: no valid verdict for F2"
    assert summary.notes["f"] == "F over 1 of 2 sentences: no valid verdict for S2"
    assert "F2" in summary.undefined["fact_focus"]
    assert summary.values["qc"] is not None and summary.values["eps"] is not None
    assert outcome.failures == {"validation": 2} and outcome.validation_failures == 2
    facts = runs.load(outcome.run_dir).records_for("factory", "brief")["facts"]
    assert set(facts.parsed) == {"F1", "F3", "F4", "F5"} and "not valid JSON" in facts.failed_items["F2"]
    records = [json.loads(line) for line in (outcome.run_dir / "records.jsonl").read_text().splitlines()]
    assert next(r for r in records if r["request_id"] == "factory/brief/facts/F2")["text"] == broken["factory/brief/facts/F2"]


def test_a_calibrated_threshold_decides_the_verdicts_and_is_part_of_the_run(responder_config, small_input, tmp_path):
    """With a threshold, a fact counts as kept when P(kept) >= it, not when the judge's word says so. The
    responder gives "library"/"brief" its supporting fact (2 of 5 content words) P(kept) 0.083: not kept at
    the word's 0.5, kept at 0.05, so Supp FC goes 0 -> 1 and FPS 1 -> 0. The threshold is in the run
    identity, not in the cache keys."""
    store = tmp_path / "store"
    confident = responder_config.model_copy(update={"verdict_confidence": True, "method_version": 5})
    lenient = confident.model_copy(update={"thresholds": {5: {"facts": 0.05, "questions": 0.05}}})
    assert lenient.fingerprint() == confident.fingerprint()
    plain = run(confident, store, small_input)
    factory = CountingFactory()
    thresholded = run(lenient, store, small_input, factory)
    assert factory.requests == []  # the same outputs, read with another rule
    before = {(s.doc_id, s.system): s.values for s in plain.summaries}
    after = {(s.doc_id, s.system): s.values for s in thresholded.summaries}
    assert (before[("library", "brief")]["supp_fc"], before[("library", "brief")]["fps"]) == (0.0, 1.0)
    assert (after[("library", "brief")]["supp_fc"], after[("library", "brief")]["fps"]) == (1.0, 0.0)
    assert all(after[k]["fc"] == before[k]["fc"] for k in before if k != ("library", "brief"))
    assert plain.run_dir != thresholded.run_dir
    spec = json.loads((thresholded.run_dir / "spec.json").read_text())
    assert spec["decision_threshold"] == 0.05 and spec["judge"]["thresholds"] == {"5": {"facts": 0.05, "questions": 0.05}}
    assert Pipeline(lenient, store, method=2).judge.decision_threshold is None  # calibrated under v5 only
