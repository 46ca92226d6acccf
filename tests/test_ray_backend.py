"""The Ray Data backend's own logic, without Ray: partitioning by prefix group and reading rows back.
(The real two-replica run against one engine is in test_real_engines.py.)"""

from __future__ import annotations

import math

import pytest

from scaffold_local.backends.protocol import Message, Request, Sampling
from scaffold_local.backends.ray_data import partition, result_of
from scaffold_local.judging.config import ModelConfig


def _request(rid: str, group: str, max_tokens: int = 50) -> Request:
    return Request(id=rid, prefix_group=group, messages=(Message(role="user", content=rid),), json_schema=None,
                   sampling=Sampling(max_tokens=max_tokens))


def test_partition_keeps_each_document_on_one_replica_and_balances_the_load():
    sizes = {"a": 5, "b": 3, "c": 3, "d": 2, "e": 1}
    requests = [_request(f"{g}{i}", g) for g, n in sizes.items() for i in range(n)]
    parts = partition(requests, 2)
    groups = [{requests[i].prefix_group for i in part} for part in parts]
    assert set.union(*groups) == set(sizes) and not set.intersection(*groups)  # a group never split
    assert sorted(len(p) for p in parts) == [7, 7]  # a=5 | b=3, then c=3 -> lighter, d=2, e=1
    assert all(part == sorted(part) for part in parts)  # the original order within a replica
    assert partition(requests[:2], 4) == [[0, 1]]  # fewer groups than replicas: no empty block


def test_rows_become_results_with_tokens_alternatives_and_a_budget_based_finish():
    request = _request("d/s/facts", "d", max_tokens=3)
    row = {"text": '{"a"', "num_generated_tokens": 3, "num_input_tokens": 11, "generated_tokens": [5, 6, 7],
           "logprobs": [{5: {"logprob": 0.0, "decoded_token": "{"}},
                        {6: {"logprob": math.log(0.7), "decoded_token": '"a'}, 9: {"logprob": math.log(0.3), "decoded_token": '"b'}},
                        {7: {"logprob": 0.0, "decoded_token": '"'}}]}
    result = result_of(request, row)
    assert result.finish_reason == "length"  # used its whole budget: read as cut off
    assert result.usage.prompt_tokens == 11 and result.usage.completion_tokens == 3
    assert [t.text for t in result.logprobs] == ["{", '"a', '"']
    assert result.logprobs[1].top == pytest.approx({'"a': math.log(0.7), '"b': math.log(0.3)})
    assert result_of(request, {**row, "num_generated_tokens": 2}).finish_reason == "stop"
    failed = result_of(request, {"error": "EngineDeadError: replica died"})
    assert failed.finish_reason == "error" and failed.failure == "engine_crash" and "replica died" in failed.error


def test_ray_configs_validate_their_engine_tables_and_share_the_engines_judgments():
    ray = ModelConfig.load("smollm2-135m-ray")
    assert ray.backend == "ray" and ray.engine["replicas"] == 2 and ray.engine["block_size"] == 32
    # the same judge as the single vLLM engine: one cache serves both (their outputs are equal)
    assert ray.fingerprint() == ModelConfig.load("smollm2-135m-vllm").fingerprint()
    with pytest.raises(ValueError, match="replica.*did you mean 'replicas'"):
        ModelConfig(name="x", backend="ray", model="m", engine={"replica": 2})
