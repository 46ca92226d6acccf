"""Schemas: derived from pydantic, built per scaffold, strict about ids; snapshots catch drift."""

from __future__ import annotations

import json

import jsonschema
import pytest

from scaffold_local.schemas import (
    OutputError,
    SchemaLimits,
    direct_score_model,
    entity_preservation_model,
    extraction_model,
    fact_alignment_model,
    faithfulness_model,
    json_schema,
    parse_output,
    question_alignment_model,
)

from .helpers import assert_snapshot

LIMITS = SchemaLimits(justification_chars=80, max_cited_sentences=3)


def test_fact_alignment_schema_requires_one_verdict_per_fact_in_order_with_reason_first():
    schema = json_schema(fact_alignment_model(("F1", "F2", "F3"), 4, LIMITS))
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
    schema = json_schema(entity_preservation_model((("E1", ("E1.A1", "E1.A2")), ("E2", ("E2.A1",))), LIMITS))
    e1 = schema["properties"]["E1"]["properties"]
    assert list(e1) == ["justification", "preserved_attribute_ids"]
    assert e1["preserved_attribute_ids"]["items"]["enum"] == ["E1.A1", "E1.A2"]
    model = entity_preservation_model((("E1", ("E1.A1", "E1.A2")), ("E2", ("E2.A1",))), LIMITS)
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
        parse_output(fact_alignment_model(("F1", "F2"), 2, LIMITS), text)


def test_valid_output_parses_and_agrees_with_jsonschema():
    model = question_alignment_model(("Q1",), 2, LIMITS)
    text = '{"Q1":{"justification":"stated in 2","sentence_ids":[2],"answered":true}}'
    assert parse_output(model, text).model_dump()["Q1"]["answered"] is True
    jsonschema.validate(json.loads(text), json_schema(model))


def test_faithfulness_schema_has_one_entry_per_sentence_and_finesure_categories():
    schema = json_schema(faithfulness_model(3, LIMITS))
    assert schema["required"] == ["S1", "S2", "S3"]
    categories = schema["properties"]["S1"]["properties"]["category"]["enum"]
    assert categories[0] == "no error" and len(categories) == 8


def test_direct_score_axes_are_bounded_integers_after_the_rationale():
    schema = json_schema(direct_score_model(LIMITS))
    assert list(schema["properties"])[0] == "rationale"
    assert schema["properties"]["hallucination"] == {"type": "integer", "minimum": 1, "maximum": 10}


def test_schema_snapshots():
    schemas = {
        "extract_facts": json_schema(extraction_model("facts", LIMITS)),
        "extract_questions": json_schema(extraction_model("questions", LIMITS)),
        "extract_entities": json_schema(extraction_model("entities", LIMITS)),
        "align_facts": json_schema(fact_alignment_model(("F1", "F2"), 3, LIMITS)),
        "align_questions": json_schema(question_alignment_model(("Q1",), 3, LIMITS)),
        "align_entities": json_schema(entity_preservation_model((("E1", ("E1.A1", "E1.A2")),), LIMITS)),
        "check_faithfulness": json_schema(faithfulness_model(2, LIMITS)),
        "direct_score": json_schema(direct_score_model(LIMITS)),
    }
    assert_snapshot("schemas.json", json.dumps(schemas, indent=1) + "\n")
