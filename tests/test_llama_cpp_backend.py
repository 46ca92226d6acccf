"""The llama.cpp backend's pure parts: which prompt each sequence copies its prefix from, in what
order prompts are computed, the schema as its grammar converter can enforce it, and its settings.
The engine itself runs in the backend contract and the real-model tests."""

from __future__ import annotations

import sys

import jsonschema
import pytest

from scaffold_local.backends.llama_cpp_decoding import (
    KEPT,
    bounded_integers,
    common_prefix,
    json_grammar,
    prefix_parents,
    waves,
)
from scaffold_local.judging.config import ModelConfig
from scaffold_local.method.schemas import SchemaLimits, json_schema
from scaffold_local.method.versions import method_version
from scaffold_local.method.views.facts import fact_alignment_model


def test_each_prompt_copies_the_longest_prefix_it_shares_and_keeps_one_token_of_its_own():
    system, summary_a, summary_b = [1, 2, 3], [10, 11], [20, 21]
    prompts = [system + summary_a + [100], system + summary_a + [101, 5], system + summary_b + [100],
               system + summary_b + [102], [9, 9]]
    assert prefix_parents(prompts) == [(KEPT, 0), (0, 5), (0, 3), (2, 5), (KEPT, 0)]
    # computed in waves: each after the prompt it copies from
    assert waves(prefix_parents(prompts)) == [[0, 4], [1, 2], [3]]
    # the previous group's first prompt, kept in the cache, serves the next group from the first wave on
    kept = system + summary_b + [100]
    assert prefix_parents(prompts, kept) == [(KEPT, 3), (0, 5), (KEPT, 5), (KEPT, 5), (KEPT, 0)]
    assert waves(prefix_parents(prompts, kept)) == [[0, 2, 3, 4], [1]]
    assert common_prefix([[1, 2, 3], [1, 2, 3]]) == 2  # identical prompts still compute their last token
    assert common_prefix([[1, 2, 3], [1, 2, 3], [1, 5]]) == 1


def test_bounded_integers_become_enums_the_grammar_enforces_and_accept_the_same_outputs():
    schema = json_schema(fact_alignment_model(("F1",), 3, SchemaLimits(max_cited_sentences=2), method_version(5)))
    enumerated = bounded_integers(schema)
    cited = enumerated["properties"]["F1"]["anyOf"][0]["properties"]["sentence_ids"]["items"]
    assert cited == {"enum": [1, 2, 3]}
    for output, valid in [({"F1": {"inferred": True, "sentence_ids": [3], "justification": "s3"}}, True),
                          ({"F1": {"inferred": True, "sentence_ids": [4], "justification": "s4"}}, False),
                          ({"F1": {"inferred": True, "sentence_ids": [0], "justification": "s0"}}, False)]:
        for form in (schema, enumerated):
            assert jsonschema.Draft202012Validator(form).is_valid(output) == valid


def test_engine_settings_are_checked_when_the_config_loads():
    base = {"name": "t", "backend": "llama-cpp", "model": "/m.gguf", "structured_outputs": "gbnf"}
    assert ModelConfig.model_validate({**base, "engine": {"parallel": 8}}).engine == {"parallel": 8}
    with pytest.raises(ValueError, match="parallel .* cannot exceed batch_size"):
        ModelConfig.model_validate({**base, "engine": {"parallel": 64, "batch_size": 32}})
    with pytest.raises(ValueError, match="did you mean 'kv_tokens'"):
        ModelConfig.model_validate({**base, "engine": {"kv_token": 4096}})
    # how many requests decode together is throughput, not the judge: cached results stay valid
    assert ModelConfig.model_validate({**base, "engine": {"parallel": 4, "kv_tokens": 4096}}).fingerprint() == \
        ModelConfig.model_validate(base).fingerprint()


def test_the_grammar_forbids_raw_control_characters_in_strings():
    """llama-cpp-python's converter lets a string hold a raw newline (the CPU judge wrote one into a
    justification: invalid JSON, a failed item); the grammar sent to llama.cpp forbids control
    characters as JSON and llama.cpp's own converter do, and keeps escapes."""
    llama_cpp = pytest.importorskip("llama_cpp")
    schema = json_schema(fact_alignment_model(("F1",), 2, SchemaLimits(), method_version(5)))
    grammar = json_grammar(schema)
    char_rule = next(line for line in grammar.splitlines() if line.startswith("char ::="))
    assert char_rule.startswith(r'char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt]')
    assert 'F1-kv ::= "\\"F1\\""' in grammar and r'[^"\\] |' not in grammar
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp's parser accepts it


def test_a_wrong_grammar_engine_or_a_missing_package_says_what_to_do(monkeypatch):
    from scaffold_local.backends import BackendError, create_backend

    base = {"name": "t", "backend": "llama-cpp", "model": "/m.gguf"}
    with pytest.raises(BackendError, match=r"structured_outputs='xgrammar' is not one of \('gbnf',\)"):
        create_backend(ModelConfig.model_validate({**base, "structured_outputs": "xgrammar"}))
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if it were not installed
    with pytest.raises(BackendError, match=r"missing dependency: llama_cpp$") as raised:
        create_backend(ModelConfig.model_validate({**base, "structured_outputs": "gbnf"}))
    assert raised.value.hint.startswith("make setup, or `python -m scaffold_local.backends.llama_cpp_build install`")
    assert raised.value.exit_code == 1


def test_a_generation_group_holds_one_document_so_its_outputs_never_depend_on_another():
    """llama.cpp's numbers depend on which sequences decode together: a group never mixes prefix groups
    (documents), and the prompt kept from another document is not counted as shared."""
    from types import SimpleNamespace

    from scaffold_local.backends.llama_cpp_generation import Generations
    from scaffold_local.backends.protocol import Message, Request, Sampling

    generations = Generations(SimpleNamespace(options=SimpleNamespace(parallel=3, kv_tokens=10_000)))  # no model
    generations.kept, generations.kept_group = [1, 2, 3], "b"

    def request(doc: str) -> Request:
        return Request(id=doc, prefix_group=doc, messages=(Message(role="user", content=doc),), json_schema=None,
                       sampling=Sampling(max_tokens=8))

    docs = ["a", "a", "b", "a", "a", "a", "a"]
    requests = [request(d) for d in docs]
    runnable = [(i, [1, 2, 3, 4 + i]) for i in range(len(docs))]
    groups = [[i for i, _ in g] for g in generations.groups(runnable, requests)]
    assert groups == [[0, 1], [2], [3, 4, 5], [6]]  # by document, then at most `parallel` at a time
