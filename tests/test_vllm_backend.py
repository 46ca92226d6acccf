"""The vLLM backend's translations (config -> engine arguments and server flags, request ->
SamplingParams), its KV-cache sizing on the CPU build, and what a failed engine start says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold_local.backends import Message, Request, Sampling, vllm_arguments
from scaffold_local.backends.vllm import sampling_params
from scaffold_local.backends.vllm_arguments import GiB, engine_arguments, served_model_name, server_command
from scaffold_local.judging.config import ModelConfig

from .helpers import EXAMPLES, failure_message, small_numa_node_env

SCHEMA = {"type": "object", "properties": {"F1": {"type": "boolean"}}, "required": ["F1"], "additionalProperties": False}
MODEL_PATH = Path("/models/smollm2")


def _needs_vllm():
    return pytest.importorskip("vllm", reason="vLLM is not installed (make setup-vllm)")


def _with_engine(config: ModelConfig, **engine) -> ModelConfig:
    return config.model_copy(update={"engine": {**config.engine, **engine}})


def test_cpu_config_sizes_the_kv_cache_in_bytes_whatever_the_numa_node():
    arguments = engine_arguments(ModelConfig.load("smollm2-135m-vllm"), MODEL_PATH)
    assert arguments["kv_cache_memory_bytes"] == GiB
    assert "gpu_memory_utilization" not in arguments  # one sizing, never a fraction of the node
    assert arguments["model"] == arguments["tokenizer"] == str(MODEL_PATH)
    assert arguments["enforce_eager"] is True
    assert arguments["structured_outputs_config"] == {"backend": "xgrammar", "disable_any_whitespace": True}


def test_gpu_configs_keep_a_fraction_and_bytes_win_when_both_are_set():
    gpu = ModelConfig.load("qwen2.5-7b-instruct-vllm")
    arguments = engine_arguments(gpu, MODEL_PATH)
    assert arguments["gpu_memory_utilization"] == 0.9 and "kv_cache_memory_bytes" not in arguments
    both = engine_arguments(_with_engine(gpu, kv_cache_memory_bytes=8 * GiB), MODEL_PATH)
    assert both["kv_cache_memory_bytes"] == 8 * GiB and "gpu_memory_utilization" not in both
    with pytest.raises(ValueError, match="kv_cache_memory_bytes"):
        engine_arguments(_with_engine(gpu, kv_cache_memory_bytes=0), MODEL_PATH)


def test_kv_cache_size_is_not_part_of_the_judge_fingerprint():
    config = ModelConfig.load("smollm2-135m-vllm")
    assert _with_engine(config, kv_cache_memory_bytes=2 * GiB).fingerprint() == config.fingerprint()


def test_server_command_carries_every_engine_argument(monkeypatch):
    monkeypatch.setattr(vllm_arguments, "resolve_model_path", lambda model: MODEL_PATH)
    config = _with_engine(ModelConfig.load("smollm2-135m-vllm"), extra={"max_num_batched_tokens": 4096})
    command = server_command(config, "127.0.0.1", 8123)
    assert command[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    flags = dict(zip(command[3:], command[4:]))
    assert flags["--served-model-name"] == "smollm2-135m-instruct" == ModelConfig.load("smollm2-135m-hosted").model
    assert flags["--port"] == "8123" and flags["--kv-cache-memory-bytes"] == str(GiB)
    assert flags["--max-num-batched-tokens"] == "4096"  # `extra` reaches the server too
    assert "--gpu-memory-utilization" not in command
    assert "--enforce-eager" in command and "--enable-prompt-tokens-details" in command
    assert flags["--structured-outputs-config"] == '{"backend": "xgrammar", "disable_any_whitespace": true}'


def test_vllms_own_server_parser_reads_the_offline_engine_arguments(monkeypatch):
    _needs_vllm()
    try:
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
    except ImportError:  # older vLLM
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    monkeypatch.setattr(vllm_arguments, "resolve_model_path", lambda model: MODEL_PATH)
    config = _with_engine(ModelConfig.load("smollm2-135m-vllm"), enable_prefix_caching=False)
    parsed = make_arg_parser(FlexibleArgumentParser()).parse_args(server_command(config)[3:])
    for name, value in engine_arguments(config, MODEL_PATH).items():
        got = getattr(parsed, name)
        if name == "structured_outputs_config":
            got = {key: getattr(got, key) for key in value}
        assert got == value, name


def test_one_sampling_params_per_request_with_its_own_schema_and_budget():
    _needs_vllm()
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


def test_kv_cache_hint_says_what_a_fraction_is_of_and_how_to_set_bytes(monkeypatch):
    _needs_vllm()
    from vllm.utils import cpu_resource_utils

    small = cpu_resource_utils.MemoryNodeInfo(total_memory=4 * GiB, available_memory=3 * GiB)
    monkeypatch.setattr(cpu_resource_utils, "get_memory_node_info", lambda node=0: small)
    hint = vllm_arguments.kv_cache_hint({"gpu_memory_utilization": 0.1})
    assert "gpu_memory_utilization = 0.1 is a fraction of the memory of the engine's NUMA node" in hint
    assert "4.00 GiB, 3.00 GiB available now, so it asks for 0.40 GiB" in hint
    assert f"kv_cache_memory_bytes = {GiB} (1 GiB)" in hint and "--kv-cache-memory-bytes" in hint
    too_big = vllm_arguments.kv_cache_hint({"kv_cache_memory_bytes": 5 * GiB})
    assert "(5.00 GiB) must fit in the available memory" in too_big and "3.00 GiB available now" in too_big


def test_served_model_name():
    assert served_model_name("embedded:smollm2-135m-instruct") == "smollm2-135m-instruct"
    assert served_model_name("/models/Qwen2.5-7B-Instruct") == "Qwen2.5-7B-Instruct"


@pytest.mark.real_model
def test_a_fraction_on_a_small_numa_node_fails_with_the_engine_error_and_the_fix(tmp_path):
    """The real CPU engine on a simulated 4 GiB node: 0.1 of it is less than the worker's own memory.
    The command fails at once with vLLM's own error and says how to size the cache in bytes."""
    config = tmp_path / "fraction.toml"
    config.write_text('extends = "smollm2-135m-vllm"\n\n[engine]\ndtype = "bfloat16"\n'
                      'gpu_memory_utilization = 0.1\nenforce_eager = true\n', encoding="utf-8")
    command = [sys.executable, "-m", "scaffold_local.cli", "score", str(EXAMPLES), "-m", str(config),
               "--store", str(tmp_path / "store")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **small_numa_node_env(total_gib=4, available_gib=3)})
    assert done.returncode == 1, failure_message(done.stderr)
    error = next(line for line in done.stderr.splitlines() if line.startswith("error: "))
    assert error.startswith("error: [vllm] the engine failed to start: ")
    assert "Available memory on node 0 (3.0/4.0 GiB) on kv cache allocation is less than requested memory" in error
    hint = next(line for line in done.stderr.splitlines() if line.startswith("hint: "))
    assert "gpu_memory_utilization = 0.1 is a fraction of the memory of the engine's NUMA node" in hint
    assert "4.00 GiB" in hint and f"kv_cache_memory_bytes = {GiB}" in hint
    assert "Traceback (most recent call last)" not in done.stderr.split(error)[1]  # no rich traceback after it
