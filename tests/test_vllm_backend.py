"""Pure translations of the vLLM backend: request -> SamplingParams, config -> server command."""

from __future__ import annotations

import sys

import pytest

from scaffold_local.backends import Message, Request, Sampling
from scaffold_local.backends.vllm import sampling_params, served_model_name, server_command
from scaffold_local.config import ModelConfig

SCHEMA = {"type": "object", "properties": {"F1": {"type": "boolean"}}, "required": ["F1"], "additionalProperties": False}


def test_one_sampling_params_per_request_with_its_own_schema_and_budget():
    request = Request(id="d/s/facts", messages=(Message(role="user", content="hi"),), json_schema=SCHEMA,
                      sampling=Sampling(max_tokens=136, temperature=0.0, top_p=1.0, seed=3))
    params = sampling_params(request, compact_whitespace=True)
    assert (params.max_tokens, params.temperature, params.top_p, params.seed) == (136, 0.0, 1.0, 3)
    assert params.structured_outputs.json == SCHEMA
    assert params.structured_outputs.disable_any_whitespace is True
    free = sampling_params(request.model_copy(update={"json_schema": None}), compact_whitespace=True)
    assert free.structured_outputs is None and free.max_tokens == 136
    # vLLM's outlines backend has no whitespace switch: compact JSON is asked for with a pattern.
    outlines = sampling_params(request, compact_whitespace=True, grammar_engine="outlines").structured_outputs
    assert outlines.whitespace_pattern == r"[ ]?" and outlines.disable_any_whitespace is False


@pytest.mark.real_model  # resolves (and on first use converts) the embedded model
def test_server_command_carries_the_engine_settings():
    config = ModelConfig.load("smollm2-135m-vllm")
    command = server_command(config, "127.0.0.1", 8123)
    assert command[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    flags = dict(zip(command[3::2], command[4::2]))
    assert flags["--served-model-name"] == "smollm2-135m-instruct" == ModelConfig.load("smollm2-135m-hosted").model
    assert flags["--port"] == "8123" and flags["--gpu-memory-utilization"] == "0.1"
    assert flags["--structured-outputs-config.backend"] == "xgrammar"
    assert "--enforce-eager" in command and "--enable-prompt-tokens-details" in command
    assert command[command.index("--structured-outputs-config.disable_any_whitespace") + 1] == "true"


def test_served_model_name():
    assert served_model_name("embedded:smollm2-135m-instruct") == "smollm2-135m-instruct"
    assert served_model_name("/models/Qwen2.5-7B-Instruct") == "Qwen2.5-7B-Instruct"
