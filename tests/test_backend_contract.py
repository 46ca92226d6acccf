"""One contract for every backend that can run here (the responder, transformers, the vLLM engine,
llama.cpp and the hosted backend against a real vLLM server): order and length kept, ids echoed,
output valid against each request's own schema, and a tiny token budget recorded as "length"."""

from __future__ import annotations

import json

import jsonschema
import pytest

from scaffold_local.backends import BackendError, Message, Sampling, create_backend
from scaffold_local.data.inputs import Candidate, Document
from scaffold_local.judging.config import ModelConfig
from scaffold_local.judging.judge import Judge
from scaffold_local.method.scaffold import Scaffold
from scaffold_local.method.text import sha256_text
from scaffold_local.method.views.facts import Fact
from scaffold_local.method.views.questions import KeyQuestion

from .helpers import FACTORY, RESPONDER_CONFIG, hosted_config_file

BACKENDS = ["responder", "transformers", "vllm", "llama-cpp", "openai"]
REAL = {"transformers", "vllm", "llama-cpp", "openai"}  # real engines on the embedded model: deselect with -m "not real_model"


def _config(name: str, request) -> ModelConfig:
    if name == "responder":
        return ModelConfig.load(str(RESPONDER_CONFIG))
    if name == "openai":  # the hosted backend against a real vLLM server on loopback
        server = request.getfixturevalue("vllm_server")
        return ModelConfig.load(str(hosted_config_file(request.getfixturevalue("tmp_path_factory").mktemp("cfg") / "h.toml",
                                                       server.base_url)))
    return ModelConfig.load(f"smollm2-135m-{name}")


@pytest.fixture(scope="module", params=[
    pytest.param(name, marks=pytest.mark.real_model) if name in REAL else name for name in BACKENDS
])
def backend(request):
    config = _config(request.param, request)
    try:
        instance = create_backend(config)
    except BackendError as exc:  # says the engine's own first error line; the traceback adds nothing
        pytest.fail(f"{config.name} did not start: {exc}", pytrace=False)
    yield config, instance
    instance.close()


def _requests(config: ModelConfig):
    """Real judgment requests (mixed schemas) for two summaries, plus one with a 3-token budget."""
    judge = Judge(config)
    document = Document(doc_id="factory", text=FACTORY, sha256=sha256_text(FACTORY))
    scaffold = Scaffold(
        key="k", doc_id="factory", document_sha256=document.sha256,
        facts=(Fact(id="F1", text="Alpha Corp opened a factory in Denton on Monday.", label="main point"),
               Fact(id="F2", text="The factory employs 200 local workers.", label="supporting detail")),
        questions=(KeyQuestion(id="Q1", question="Where did Alpha Corp open a factory?", expected_answer="In Denton.",
                               provenance="Sentence 1", label="main point"),),
        entities=(),
    )
    one = Candidate(record=1, doc_id="factory", system="a", summary="Alpha Corp opened a factory in Denton on Monday.")
    two = Candidate(record=2, doc_id="factory", system="b", summary="A factory opened. It employs 200 workers.")
    planned = judge.plan(scaffold, document, one) + judge.plan(scaffold, document, two)
    requests = [p.request for p in planned]
    tiny = requests[0].model_copy(update={"id": "tiny", "sampling": Sampling(max_tokens=3)})
    return requests + [tiny]


def test_order_length_ids_and_schema_valid_outputs(backend):
    config, instance = backend
    requests = _requests(config)[:-1]
    # A prompt longer than the context window fails alone; the rest of the batch is served.
    too_long = Message(role="user", content="word " * config.max_model_len)
    oversized = requests[0].model_copy(update={"id": "oversized", "messages": (requests[0].messages[0], too_long)})
    requests.insert(1, oversized)
    results = instance.generate(requests)
    assert len(results) == len(requests)
    assert [r.id for r in results] == [q.id for q in requests]
    assert results[1].finish_reason == "error" and results[1].error
    for request, result in zip(requests[:1] + requests[2:], results[:1] + results[2:]):
        assert result.finish_reason == "stop", (result.id, result.error, result.text)
        jsonschema.validate(json.loads(result.text), request.json_schema)
        assert result.usage is not None and result.usage.completion_tokens > 0


def test_tiny_budget_is_recorded_as_length_not_a_crash(backend):
    config, instance = backend
    result = instance.generate(_requests(config)[-1:])[0]
    assert result.id == "tiny" and result.finish_reason == "length"
    assert result.usage.completion_tokens <= 3
    with pytest.raises(json.JSONDecodeError):
        json.loads(result.text)


def test_describe_names_engine_and_structured_output_backend(backend):
    config, instance = backend
    description = instance.describe()
    assert description["engine"] == config.backend and description["structured_outputs"]


def test_switching_backend_is_config_only_and_metric_code_is_shared():
    """Every engine sits behind the same protocol; the pipeline and metrics never branch on it."""
    import inspect

    import scaffold_local.method.metrics as metrics
    import scaffold_local.runs.pipeline as pipeline

    for module in (metrics, pipeline):
        source = inspect.getsource(module)
        assert "vllm" not in source and "transformers" not in source and "httpx" not in source
    assert {ModelConfig.load(f"smollm2-135m-{n}").backend for n in ("transformers", "vllm", "hosted")} == {
        "transformers", "vllm", "openai"}


def test_token_alternatives_give_a_confidence_for_every_verdict(backend):
    """Engines that report token log-probabilities (all here) give, where each fact's verdict is
    decided (v2: the evidence list's first character), P(kept) on the side greedy decoding took;
    the text pieces add up to the output."""
    from scaffold_local.judging.confidence import verdict_confidence

    config, instance = backend
    facts = next(r for r in _requests(config) if r.id.endswith("/facts"))
    asking = facts.model_copy(update={"id": "confident", "sampling": facts.sampling.model_copy(update={"top_logprobs": 5})})
    result = instance.generate([asking])[0]
    assert result.finish_reason == "stop" and result.logprobs
    assert "".join(t.text for t in result.logprobs) == result.text
    confidence = verdict_confidence(result.text, result.logprobs, "inferred", evidence_decides=True)
    verdicts = {item: v["inferred"] for item, v in json.loads(result.text).items()}
    assert set(confidence) == set(verdicts) == {"F1", "F2"}
    for item, p in confidence.items():  # greedy decoding took the likelier side
        assert 0 <= p <= 1 and (p >= 0.5) == verdicts[item], (item, p, result.text)


@pytest.mark.parametrize("version", [7, 8])
def test_a_reading_generates_nothing_and_returns_the_distribution_where_the_answer_goes_on(backend, version):
    """The requests of a version that reads its verdicts end where the judge's answer gives a value (version
    8: inside the answer under the item's id): the engine returns the likeliest next tokens there and generates
    nothing. A greedy one-token generation of the same continued answer writes the reading's likeliest token
    (the same distribution, sampled)."""
    from scaffold_local.method.versions import method_version

    config, instance = backend
    judge = Judge(config, method_version(version))
    document = Document(doc_id="factory", text=FACTORY, sha256=sha256_text(FACTORY))
    scaffold = Scaffold(key="k", doc_id="factory", document_sha256=document.sha256, questions=(), entities=(),
                        facts=(Fact(id="F1", text="Alpha Corp opened a factory in Denton on Monday.", label="main point"),))
    candidate = Candidate(record=1, doc_id="factory", system="a", summary="Alpha Corp opened a factory in Denton on Monday.")
    read = judge.plan(scaffold, document, candidate, task="align_facts")[0].request
    result = instance.generate([read])[0]
    assert result.id == read.id and result.finish_reason == "stop", result.error
    assert result.text == "" and result.usage is not None and result.usage.completion_tokens == 0
    assert result.next_token and len(result.next_token) <= read.sampling.top_logprobs
    assert all(lp <= 0 for lp in result.next_token.values())
    if config.backend != "responder":  # the test double writes only its own verdicts
        greedy = read.model_copy(update={"id": "greedy", "sampling": Sampling(max_tokens=1, top_logprobs=5)})
        written = instance.generate([greedy])[0]
        assert written.finish_reason in ("stop", "length") and written.text
        assert written.text == max(result.next_token, key=lambda t: result.next_token[t])


def _every_reading(config: ModelConfig) -> list:
    """One summary's readings of every kind method version 15 reads (a fact and its cited sentence, a question, an
    entity attribute, each sentence's yes / no check on its best passages, each direct-score grade and its
    continuation after a 1), and both orders of a holistic pair: the prompts every engine must compute alike."""
    from scaffold_local.judging.pair_readings import pair_requests
    from scaffold_local.method.versions import method_version
    from scaffold_local.method.views.entities import Attribute, Entity

    judge = Judge(config, method_version(15))
    document = Document(doc_id="factory", text=FACTORY, sha256=sha256_text(FACTORY))
    scaffold = Scaffold(
        key="k", doc_id="factory", document_sha256=document.sha256,
        facts=(Fact(id="F1", text="Alpha Corp opened a factory in Denton on Monday.", label="main point"),),
        questions=(KeyQuestion(id="Q1", question="Where did Alpha Corp open a factory?", expected_answer="In Denton.",
                               provenance="Sentence 1", label="main point"),),
        entities=(Entity(id="E1", name="Alpha Corp", kind="org", attributes=(
            Attribute(id="E1.A1", text="Alpha Corp opened a factory in Denton.", label="main point"),)),),
    )
    one = Candidate(record=1, doc_id="factory", system="a", summary="Alpha Corp opened a factory in Denton. It hired 200 people.")
    two = Candidate(record=2, doc_id="factory", system="b", summary="A factory opened on Monday.")
    planned = judge.plan(scaffold, document, one) + list(pair_requests(judge, document, one, two))
    assert {p.task for p in planned} == {"align_facts", "align_questions", "align_entities", "check_faithfulness",
                                         "direct_score", "compare_pair"}
    return planned


@pytest.fixture(scope="module")
def llama_cpp_readings():
    """The reference: every reading's prompt tokens and P of its first answer on llama.cpp, the engine whose prompts
    the package has always built itself."""
    from scaffold_local.backends.tokens import prompt_ids

    config = ModelConfig.load("smollm2-135m-llama-cpp")
    instance = create_backend(config)
    planned = _every_reading(config)
    results = instance.generate([p.request for p in planned])
    ids = [prompt_ids(instance.chat, p.request) for p in planned]
    instance.close()
    return planned, ids, results


@pytest.mark.real_model
def test_every_reading_is_the_same_prompt_and_the_same_p_on_every_engine(backend, llama_cpp_readings):
    """A reading's prompt is built once, by the package (the chat template with its generation prompt, then the start
    of the answer as text; never the template's continuation of an empty message): every engine computes the same
    token ids as llama.cpp for every kind read, and P of the first answer within 0.02 of llama.cpp's (transformers
    and vLLM read the same 4-bit weights, dequantized). An engine with the whole distribution says its alternatives
    hold every answer; vLLM and a server give their likeliest 20 and a missing answer is bounded, never zero."""
    from scaffold_local.judging.readings import EXACT_ANSWER_MASS_FLOOR, distribution

    config, instance = backend
    if config.backend == "responder":
        pytest.skip("the test double renders no prompt")
    planned, reference_ids, reference = llama_cpp_readings
    requests = [p.request for p in planned]
    if config.backend != "llama-cpp":
        assert [instance.prompt_ids(r) for r in requests] == reference_ids
    results = instance.generate(requests)
    far = []
    for p, ours, theirs in zip(planned, results, reference):
        assert ours.finish_reason == "stop", (p.request.id, ours.error)
        assert ours.answers_complete == (config.backend in ("llama-cpp", "transformers")), p.request.id
        read = [distribution(r.next_token, p.reading.answers, p.reading.after, exact=True, complete=r.answers_complete)
                for r in (ours, theirs)]
        assert all(d is not None for d in read), p.request.id
        if min(d.answer_mass for d in read) < EXACT_ANSWER_MASS_FLOOR:
            continue  # a failed item on both sides of the comparison, not a verdict
        first = p.reading.answers[0]
        if abs(read[0].p[first] - read[1].p[first]) > 0.02:
            far.append((p.request.id, round(read[0].p[first], 4), round(read[1].p[first], 4)))
    assert not far, f"P differs from llama.cpp's by more than 0.02: {far}"
