"""Schemas: derived from pydantic, built per scaffold, strict about ids; snapshots catch drift."""

from __future__ import annotations

import json

import jsonschema
import pytest

from scaffold_local.method.schemas import OutputError, SchemaLimits, json_schema, parse_items, parse_output
from scaffold_local.method.versions import method_version
from scaffold_local.method.views.direct_score import direct_score_model
from scaffold_local.method.views.entities import entity_extraction_model, entity_preservation_model
from scaffold_local.method.views.facts import fact_alignment_model, fact_extraction_model
from scaffold_local.method.views.questions import question_alignment_model, question_extraction_model
from scaffold_local.method.views.sentences import faithfulness_model

from .helpers import assert_snapshot

LIMITS = SchemaLimits(justification_chars=80, max_cited_sentences=3)
V1, V2, V3, V4 = method_version(1), method_version(2), method_version(3), method_version(4)


def test_fact_alignment_schema_requires_one_verdict_per_fact_in_order_with_reason_first():
    schema = json_schema(fact_alignment_model(("F1", "F2", "F3"), 4, LIMITS, V1))
    assert list(schema["properties"]) == ["F1", "F2", "F3"]
    assert schema["required"] == ["F1", "F2", "F3"]
    assert schema["additionalProperties"] is False
    verdict = schema["properties"]["F2"]
    assert list(verdict["properties"]) == ["justification", "sentence_ids", "inferred"]
    assert verdict["properties"]["justification"]["maxLength"] == 80
    assert verdict["properties"]["sentence_ids"]["items"] == {"type": "integer", "minimum": 1, "maximum": 4}
    assert verdict["properties"]["sentence_ids"]["maxItems"] == 3
    assert verdict["additionalProperties"] is False
    assert "$defs" not in schema and "$ref" not in json.dumps(schema)


def test_entity_schema_restricts_each_entity_to_its_own_attribute_ids():
    schema = json_schema(entity_preservation_model((("E1", ("E1.A1", "E1.A2")), ("E2", ("E2.A1",))), LIMITS, V2))
    e1 = schema["properties"]["E1"]["properties"]
    assert list(e1) == ["justification", "preserved_attribute_ids"]
    assert e1["preserved_attribute_ids"]["items"]["enum"] == ["E1.A1", "E1.A2"]
    model = entity_preservation_model((("E1", ("E1.A1", "E1.A2")), ("E2", ("E2.A1",))), LIMITS, V2)
    with pytest.raises(OutputError, match="E1.preserved_attribute_ids"):
        parse_output(model, '{"E1": {"justification": "", "preserved_attribute_ids": ["E2.A1"]}, '
                            '"E2": {"justification": "", "preserved_attribute_ids": []}}')


@pytest.mark.parametrize("text, message", [
    ('{"F1": {"justification": "a", "sentence_ids": [], "inferred": true}}', "F2: Field required"),
    ('{"F1": {"justification": "a", "sentence_ids": [], "inferred": true}, '
     '"F2": {"justification": "b", "sentence_ids": [], "inferred": false}, '
     '"F9": {"justification": "c", "sentence_ids": [], "inferred": true}}', "F9: Extra inputs"),
    ('{"F1": {"justification": "a", "sentence_ids": [], "inferred": true}, '
     '"F1": {"justification": "a", "sentence_ids": [], "inferred": false}, '
     '"F2": {"justification": "b", "sentence_ids": [], "inferred": false}}', "duplicate keys in output: F1"),
    ('{"F1": {"justification": "a", "sentence_ids": [5], "inferred": true}, '
     '"F2": {"justification": "b", "sentence_ids": [], "inferred": false}}', "less than or equal to 2"),
    ('{"F1": {"justification": "a", "sent', "not valid JSON"),
    ("", "empty output"),
])
def test_invalid_alignment_outputs_are_errors_never_counted(text, message):
    with pytest.raises(OutputError, match=message):
        parse_output(fact_alignment_model(("F1", "F2"), 2, LIMITS, V1), text)


def test_item_outputs_are_read_item_by_item():
    """Issue 18: one bad verdict fails alone, with why; the output fails whole only when it is not an
    object or holds no valid verdict."""
    model = entity_preservation_model((("E1", ("E1.A1", "E1.A2")), ("E2", ("E2.A1",)), ("E3", ("E3.A1",))), LIMITS, V2)
    text = ('{"E1": {"justification": "", "preserved_attribute_ids": ["E2.A1"]}, '  # another entity's attribute
            '"E2": {"justification": "", "justification": "", "preserved_attribute_ids": ["E2.A1"]}, '  # a key twice
            '"E3": {"justification": "kept", "preserved_attribute_ids": ["E3.A1"]}, "E4": {}}')
    valid, failed = parse_items(model, text)
    assert valid == {"E3": {"justification": "kept", "preserved_attribute_ids": ["E3.A1"]}}
    assert list(failed) == ["E4", "E1", "E2"] and failed["E4"] == "not an item of this request"
    assert failed["E1"].startswith("schema violation: preserved_attribute_ids.0")
    assert failed["E2"] == "duplicate keys in the verdict: justification"
    with pytest.raises(OutputError, match="schema violation: <root>: not a JSON object but list"):
        parse_items(model, "[]")
    with pytest.raises(OutputError, match="E1: missing; E2: missing; E3: missing"):
        parse_items(model, "{}")


def test_valid_output_parses_and_agrees_with_jsonschema():
    model = question_alignment_model(("Q1",), 2, LIMITS, V2)
    text = '{"Q1":{"justification":"stated in 2","sentence_ids":[2],"answered":true}}'
    assert parse_output(model, text).model_dump()["Q1"]["answered"] is True
    jsonschema.validate(json.loads(text), json_schema(model))


def test_faithfulness_schema_has_one_entry_per_sentence_and_finesure_categories():
    schema = json_schema(faithfulness_model(3, LIMITS, V2))
    assert schema["required"] == ["S1", "S2", "S3"]
    assert schema["properties"]["S1"]["properties"]["category"]["enum"] == [
        "no error", "out-of-context error", "entity error", "predicate error", "circumstantial error",
        "grammatical error", "coreference error", "linking error", "other error"]
    assert len(json_schema(faithfulness_model(3, LIMITS, V1))["properties"]["S1"]["properties"]["category"]["enum"]) == 8


def test_direct_score_grades_come_before_the_rationale_in_v2():
    v2 = json_schema(direct_score_model(LIMITS, V2))
    assert list(v2["properties"]) == ["faithfulness", "completeness", "understandability", "hallucination", "rationale"]
    assert v2["properties"]["hallucination"] == {"type": "integer", "minimum": 1, "maximum": 10}
    assert list(json_schema(direct_score_model(LIMITS, V1))["properties"])[0] == "rationale"


def test_v2_entity_kinds_are_the_papers_enum():
    entity = json_schema(entity_extraction_model(LIMITS, V2))["properties"]["entities"]["items"]
    assert entity["properties"]["kind"]["enum"] == ["person", "org", "product", "concept", "other"]


def test_v2_verdict_and_evidence_must_agree():
    """Two shapes, written into the grammar: inferred with 1..k cited sentences, or not inferred with none."""
    model = fact_alignment_model(("F1",), 4, LIMITS, V2)
    shapes = json_schema(model)["properties"]["F1"]["anyOf"]
    assert [list(shape["properties"]) for shape in shapes] == [["justification", "sentence_ids", "inferred"]] * 2
    cited, uncited = (shape["properties"] for shape in shapes)
    assert cited["inferred"]["const"] is True and cited["sentence_ids"]["minItems"] == 1
    assert cited["sentence_ids"]["maxItems"] == 3
    assert uncited["inferred"]["const"] is False and uncited["sentence_ids"]["maxItems"] == 0
    ok = '{"F1": {"justification": "s2", "sentence_ids": [2], "inferred": true}}'
    assert parse_output(model, ok).model_dump()["F1"] == {"justification": "s2", "sentence_ids": [2], "inferred": True}
    assert parse_output(model, ok.replace("[2], \"inferred\": true", "[], \"inferred\": false")).model_dump()["F1"]["inferred"] is False
    for text in ('{"F1": {"justification": "none", "sentence_ids": [], "inferred": true}}',
                 '{"F1": {"justification": "s1", "sentence_ids": [1], "inferred": false}}'):
        with pytest.raises(OutputError, match="F1"):
            parse_output(model, text)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(text), json_schema(model))


def _schemas(method) -> dict:
    return {
        "extract_facts": json_schema(fact_extraction_model(LIMITS, method)),
        "extract_questions": json_schema(question_extraction_model(LIMITS, method)),
        "extract_entities": json_schema(entity_extraction_model(LIMITS, method)),
        "align_facts": json_schema(fact_alignment_model(("F1", "F2"), 3, LIMITS, method)),
        "align_questions": json_schema(question_alignment_model(("Q1",), 3, LIMITS, method)),
        "align_entities": json_schema(entity_preservation_model((("E1", ("E1.A1", "E1.A2")),), LIMITS, method)),
        "check_faithfulness": json_schema(faithfulness_model(2, LIMITS, method)),
        "direct_score": json_schema(direct_score_model(LIMITS, method)),
    }


def test_schema_snapshot_v1_is_unchanged():
    assert_snapshot("schemas.json", json.dumps(_schemas(V1), indent=1) + "\n")


def test_schema_snapshot_v2():
    assert_snapshot("schemas.v2.json", json.dumps(_schemas(V2), indent=1) + "\n")


def test_schema_snapshot_v3():
    assert_snapshot("schemas.v3.json", json.dumps(_schemas(V3), indent=1) + "\n")


def test_schema_snapshot_v4():
    assert_snapshot("schemas.v4.json", json.dumps(_schemas(V4), indent=1) + "\n")


def test_v4_and_v5_write_the_verdict_first_and_the_justification_last():
    """The paper's order: the judge decides before it writes any text that states its decision."""
    for method in (V4, method_version(5)):
        shapes = json_schema(fact_alignment_model(("F1",), 4, LIMITS, method))["properties"]["F1"]["anyOf"]
        assert [list(shape["properties"]) for shape in shapes] == [["inferred", "sentence_ids", "justification"]] * 2
        questions = json_schema(question_alignment_model(("Q1",), 4, LIMITS, method))["properties"]["Q1"]["anyOf"]
        assert list(questions[0]["properties"]) == ["answered", "sentence_ids", "justification"]
        entity = json_schema(entity_preservation_model((("E1", ("E1.A1",)),), LIMITS, method))["properties"]["E1"]
        assert list(entity["properties"]) == ["preserved_attribute_ids", "justification"]
        sentence = json_schema(faithfulness_model(2, LIMITS, method))["properties"]["S1"]
        assert list(sentence["properties"]) == ["category", "reason"]
    assert method_version(4).decided_by_evidence is False and V2.decided_by_evidence is True
    assert list(json_schema(faithfulness_model(3, LIMITS, V4, only=2))["properties"]) == ["S2"]


def test_v3_compact_verdicts_cite_first_and_justify_only_what_is_kept():
    """The evidence list is the verdict; a short "why" is required beside evidence and forbidden without it."""
    facts = fact_alignment_model(("F1", "F2"), 4, LIMITS, V3)
    cited, uncited = (shape["properties"] for shape in json_schema(facts)["properties"]["F1"]["anyOf"])
    assert list(cited) == ["ids", "why"] and list(uncited) == ["ids"]
    assert cited["why"]["maxLength"] == 80  # the smaller of the config's bound and v3's 100
    parsed = parse_output(facts, '{"F1":{"ids":[2],"why":"s2 says so"},"F2":{"ids":[]}}').model_dump()
    assert parsed == {"F1": {"ids": [2], "why": "s2 says so"}, "F2": {"ids": []}}
    for text in ('{"F1":{"ids":[2]},"F2":{"ids":[]}}', '{"F1":{"ids":[],"why":"x"},"F2":{"ids":[]}}'):
        with pytest.raises(OutputError, match="F1"):
            parse_output(facts, text)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(text), json_schema(facts))

    entities = entity_preservation_model((("E1", ("E1.A1", "E1.A2")), ("E2", ("E2.A1",))), LIMITS, V3)
    with pytest.raises(OutputError, match="E1"):
        parse_output(entities, '{"E1":{"kept":["E2.A1"],"why":"x"},"E2":{"kept":[]}}')
    assert parse_output(entities, '{"E1":{"kept":["E1.A2"],"why":"x"},"E2":{"kept":[]}}').model_dump()["E1"]["kept"] == ["E1.A2"]

    faithfulness = faithfulness_model(2, LIMITS, V3)
    ok = parse_output(faithfulness, '{"S1":{"category":"no error"},"S2":{"category":"entity error","why":"wrong year"}}')
    assert ok.model_dump()["S2"] == {"category": "entity error", "why": "wrong year"}
    for text in ('{"S1":{"category":"no error","why":"x"},"S2":{"category":"no error"}}',
                 '{"S1":{"category":"no error"},"S2":{"category":"entity error"}}'):
        with pytest.raises(OutputError):
            parse_output(faithfulness, text)
