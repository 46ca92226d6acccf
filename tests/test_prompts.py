"""Prompt templates: rendered snapshots, ordering for prefix sharing, strict variables, hashes."""

from __future__ import annotations

import re
from dataclasses import asdict

import jinja2
import pytest

from scaffold_local.data.inputs import Candidate, Document
from scaffold_local.judging.config import ModelConfig
from scaffold_local.judging.judge import Judge
from scaffold_local.judging.main_points import main_requests
from scaffold_local.judging.prompts import load_prompts
from scaffold_local.method.scaffold import Scaffold
from scaffold_local.method.text import sha256_text
from scaffold_local.method.versions import METHOD_VERSIONS, method_version
from scaffold_local.method.views import tasks_of
from scaffold_local.method.views.entities import Attribute, Entity
from scaffold_local.method.views.facts import Fact
from scaffold_local.method.views.questions import KeyQuestion

from .helpers import RESPONDER_CONFIG, assert_snapshot

DOCUMENT = "Alpha Corp opened a factory in Denton. The factory employs 200 workers. Published by the Denton Daily."
SCAFFOLD = Scaffold(
    key="k", doc_id="d", document_sha256=sha256_text(DOCUMENT),
    facts=(Fact(id="F1", text="Alpha Corp opened a factory in Denton.", label="main point"),
           Fact(id="F2", text="The factory employs 200 workers.", label="supporting detail")),
    questions=(KeyQuestion(id="Q1", question="What did Alpha Corp open?", expected_answer="A factory in Denton.",
                           provenance="Sentence 1", label="main point"),),
    entities=(Entity(id="E1", name="Alpha Corp", kind="company",
                     attributes=(Attribute(id="E1.A1", text="Alpha Corp opened a factory in Denton.", label="main point"),)),),
)


def _judge(version: int | None = None) -> Judge:
    return Judge(ModelConfig.load(str(RESPONDER_CONFIG)), method_version(version))


def _render_all(version: int) -> str:
    judge = _judge(version)
    document = Document(doc_id="d", text=DOCUMENT, sha256=SCAFFOLD.document_sha256)
    candidate = Candidate(record=1, doc_id="d", system="s", summary="Alpha Corp opened a plant. It hired 200 people.")
    planned = judge.extraction.requests(document) + judge.plan(SCAFFOLD, document, candidate)
    if judge.method.reads_main:
        planned += main_requests(judge, SCAFFOLD, document)
    blocks = []
    for p in planned:
        shape = f"max_tokens={p.request.sampling.max_tokens}"
        if p.request.parts:
            shape += f", parts={list(p.request.parts)}"
        if p.request.continues_answer:
            shape += ", continues the answer"
        blocks.append(f"===== {p.request.id} ({judge.template(p.task).ref}, {shape})")
        blocks.extend(f"--- {m.role}\n{m.content}" for m in p.request.messages)
    return "\n".join(blocks) + "\n"


def test_rendered_prompt_snapshot_v1_is_unchanged():
    """Method version 1 renders exactly as when it was the default, so its cached results stay valid."""
    assert_snapshot("rendered_prompts.txt", _render_all(1))


def test_rendered_prompt_snapshot_v2():
    assert_snapshot("rendered_prompts.v2.txt", _render_all(2))


def test_rendered_prompt_snapshot_v3():
    assert_snapshot("rendered_prompts.v3.txt", _render_all(3))


def test_rendered_prompt_snapshot_v4():
    assert_snapshot("rendered_prompts.v4.txt", _render_all(4))


def test_rendered_prompt_snapshot_v5():
    assert_snapshot("rendered_prompts.v5.txt", _render_all(5))


def test_rendered_prompt_snapshot_v6():
    assert_snapshot("rendered_prompts.v6.txt", _render_all(6))


def test_rendered_prompt_snapshot_v7():
    """Readings: parts where the prompt is split for sharing, answers continued up to the verdict."""
    assert_snapshot("rendered_prompts.v7.txt", _render_all(7))


def test_v5_asks_about_one_item_per_request_after_the_summary():
    """One request per fact, question, entity and summary sentence; the summary comes before the item,
    so the requests of one summary share their prompt up to the item (a prefix cache computes it once)."""
    judge = _judge(5)
    document = Document(doc_id="d", text=DOCUMENT, sha256=SCAFFOLD.document_sha256)
    candidate = Candidate(record=1, doc_id="d", system="s", summary="Alpha Corp opened a plant. It hired 200 people.")
    planned = judge.plan(SCAFFOLD, document, candidate)
    assert [p.request.id.removeprefix("d/s/") for p in planned] == [
        "facts/F1", "facts/F2", "questions/Q1", "entities/E1", "faithfulness/S1", "faithfulness/S2", "direct_score"]
    f1, f2 = (p.request.messages[1].content for p in planned[:2])
    assert "F2" not in f1 and "F1" not in f2 and "Key fact F2 (supporting detail): The factory employs 200 workers." in f2
    shared = f1[:f1.index("Key fact")]
    assert f2.startswith(shared) and "[2] It hired 200 people." in shared
    assert list(planned[1].request.json_schema["properties"]) == ["F2"]
    s2 = planned[5].request
    assert list(s2.json_schema["properties"]) == ["S2"] and s2.messages[1].content.endswith("Check sentence S2: It hired 200 people.")
    s1 = planned[4].request.messages[1].content
    assert s1[:s1.index("Check sentence")] == s2.messages[1].content[:s1.index("Check sentence")]  # document and summary shared
    assert all(p.request.sampling.max_tokens == judge.config.budget.for_items(1) for p in planned[:-1])


@pytest.mark.parametrize("version", sorted(METHOD_VERSIONS))
def test_every_task_has_a_template_of_every_method_version(version):
    """A version changes some tasks' templates or what it does with them (reads a kind its predecessor wrote: 12;
    gives its sentence check other evidence: 14; reads every answer's whole probability: 15) and keeps the newest
    earlier template of the others."""
    prompts = load_prompts(version=version)
    assert set(prompts) == set(tasks_of(METHOD_VERSIONS[version]))
    assert all(len(p.sha256) == 64 and p.version <= version for p in prompts.values())
    before = asdict(METHOD_VERSIONS[max((v for v in METHOD_VERSIONS if v < version), default=version)])
    changed = {k for k, v in asdict(METHOD_VERSIONS[version]).items() if k != "number" and before[k] != v}
    assert any(p.version == version for p in prompts.values()) or changed or version == 1
    if version == 3:
        assert {t for t, p in prompts.items() if p.version == 3} == {
            "align_facts", "align_questions", "align_entities", "check_faithfulness"}


def test_v2_prompts_show_labels_and_name_every_category_and_entity_kind():
    judge = _judge(2)
    document = Document(doc_id="d", text=DOCUMENT, sha256=SCAFFOLD.document_sha256)
    candidate = Candidate(record=1, doc_id="d", system="s", summary="Alpha Corp opened a plant.")
    rendered = {p.task: "\n".join(m.content for m in p.request.messages)
                for p in judge.extraction.requests(document) + judge.plan(SCAFFOLD, document, candidate)}
    assert "F1 (main point): Alpha Corp opened a factory in Denton." in rendered["align_facts"]
    assert "F2 (supporting detail): The factory employs 200 workers." in rendered["align_facts"]
    assert "Q1 (main point): What did Alpha Corp open?" in rendered["align_questions"]
    assert all(f'"{category}"' in rendered["check_faithfulness"] for category in judge.method.error_categories)
    assert ", ".join(judge.method.entity_kinds) in rendered["extract_entities"]


def test_summaries_of_one_document_share_the_prompt_up_to_the_summary():
    judge = _judge()
    document = Document(doc_id="d", text=DOCUMENT, sha256=SCAFFOLD.document_sha256)
    first, second = (
        judge.plan(SCAFFOLD, document, Candidate(record=i, doc_id="d", system=f"s{i}", summary=text))
        for i, text in enumerate(["Alpha Corp opened a plant.", "A factory opened in Denton."], 1)
    )
    for a, b in zip(first, second):
        assert a.request.messages[0] == b.request.messages[0]  # fixed instructions
        user_a, user_b = a.request.messages[1].content, b.request.messages[1].content
        summary_start = user_a.index("Alpha Corp opened a plant.")
        assert user_a[:summary_start] == user_b[:summary_start]  # source/scaffold before the summary


def test_missing_template_variable_is_an_error_not_an_empty_string():
    with pytest.raises(jinja2.UndefinedError):
        load_prompts()["align_facts"].render(facts=[])


def test_pinning_an_unknown_version_fails_clearly():
    with pytest.raises(FileNotFoundError, match="align_facts.v99.jinja"):
        load_prompts(pins={"align_facts": 99})


def test_v8_reads_facts_and_questions_with_version_5s_own_messages():
    """Version 8 asks each key fact and key question exactly as version 5 does (instructions, worked
    examples, the item under its id) and reads the verdict where version 5's answer writes it, so a
    threshold on P(kept) means what it means under version 5; only the summary is a part of its own."""
    document = Document(doc_id="d", text=DOCUMENT, sha256=SCAFFOLD.document_sha256)
    candidate = Candidate(record=1, doc_id="d", system="s", summary="Alpha Corp opened a plant. It hired 200 people.")
    written = {p.request.id: p.request for p in _judge(5).plan(SCAFFOLD, document, candidate)}
    read = {p.request.id: p.request for p in _judge(8).plan(SCAFFOLD, document, candidate)}
    for item in ("facts/F1", "facts/F2", "questions/Q1"):
        v5, v8 = written[f"d/s/{item}"], read[f"d/s/{item}"]
        assert v8.messages[:2] == v5.messages and v8.json_schema is None and v8.sampling.max_tokens == 0
        field = "inferred" if item.startswith("facts") else "answered"
        assert v8.messages[2].content == f'{{"{item.split("/")[1]}": {{"{field}":'
        summary_ends = v5.messages[1].content.index("Key ")
        assert (1, summary_ends) in v8.parts  # the summary a part of its own: shared by its items
    assert read["d/s/facts/F1/evidence"].messages[2].content == '{"F1": {"inferred": true, "sentence_ids": ['
    # Entity attributes, sentence checks and the direct score: read as version 7 reads them.
    v7 = {p.request.id: p.request for p in _judge(7).plan(SCAFFOLD, document, candidate)}
    for request_id, request in read.items():
        if "/facts/" not in request_id and "/questions/" not in request_id:
            assert request.messages == v7[request_id].messages


def test_rendered_prompt_snapshot_v8():
    assert_snapshot("rendered_prompts.v8.txt", _render_all(8))


def test_rendered_prompt_snapshot_v9():
    """Version 6's requests but for the direct score, whose prompt shows no example grades."""
    assert_snapshot("rendered_prompts.v9.txt", _render_all(9))
    v6 = _render_all(6).split("=====")
    v9 = _render_all(9).split("=====")
    assert [b for b in v9 if "direct_score" not in b] == [b for b in v6 if "direct_score" not in b]


def test_rendered_prompt_snapshot_v19():
    """Version 17's requests with every summary quoted (between <summary> tags, a sentence saying it instructs no
    one), questions and claims asked yes / no on the document's own answer and claim, each read item's prior (the
    same reading of an empty summary) and each fact's and question's importance."""
    assert_snapshot("rendered_prompts.v19.txt", _render_all(19))
    rendered = _render_all(19)
    assert rendered.count("<summary>\n[1] Alpha Corp opened a plant.\n[2] It hired 200 people.\n</summary>") == 6
    assert rendered.count("(the summary is empty)") == 4  # the priors of F1, F2, Q1 and E1.A1


@pytest.mark.parametrize("version", [v for v in METHOD_VERSIONS if v >= 7])
def test_the_direct_score_shows_no_grade_a_judge_could_copy(version):
    """Version 2's prompt (versions 2-6) shows example grades (9, 7, 9, 10), which a small judge copies;
    from version 7 on none does: its prompt names no grade of 1-10 in an example answer."""
    document = Document(doc_id="d", text=DOCUMENT, sha256=SCAFFOLD.document_sha256)
    candidate = Candidate(record=1, doc_id="d", system="s", summary="Alpha Corp opened a plant. It hired 200 people.")
    asked = [p.request for p in _judge(version).plan(SCAFFOLD, document, candidate, task="direct_score")]
    assert asked and all(r.sampling.max_tokens == 0 for r in asked) == METHOD_VERSIONS[version].reads_verdicts
    for request in asked:
        prompt = "\n".join(m.content for m in request.messages if m.role != "assistant")
        assert not re.search(r'"(faithfulness|completeness|understandability|hallucination)": \d', prompt)
    written = "\n".join(m.content for m in _judge(2).plan(SCAFFOLD, document, candidate, task="direct_score")[0].request.messages)
    assert re.search(r'"faithfulness": 9', written)  # the check can fail: version 2 shows one
