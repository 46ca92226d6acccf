"""Readings computed together (method version 17): the passes a group is decoded in, worked out by hand; a group is
planned by its prompts alone, sent whole and never split between engine calls."""

from __future__ import annotations

import pytest

from scaffold_local.backends.reading_passes import PASS_TOKENS, SEQUENCES, plan_passes
from scaffold_local.backends.responder import ResponderBackend
from scaffold_local.data.loading import load_input
from scaffold_local.data.store import JudgmentCache
from scaffold_local.judging.config import ModelConfig
from scaffold_local.judging.dispatch import batches
from scaffold_local.runs.pipeline import Pipeline

from .helpers import RESPONDER_CONFIG

# Two prompts share their first part (1, 2) and their second (3,); a third shares only the first; one stands apart.
A = [(1, 2), (3,), (4, 5), (6,)]
B = [(1, 2), (3,), (4, 5), (7, 8)]
C = [(1, 2), (3,), (9,), (10,)]
D = [(20,), (21,), (22,)]


def test_a_group_is_a_trunk_per_first_part_and_a_tree_below_it_each_node_computed_once():
    first, apart = plan_passes([C, D, B, A])  # readings 0..3 = C, D, B, A
    assert first.trunk == [(1, 2), (3,)] and first.members == [3, 2, 0]  # canonical order: A, B, C
    [chunk] = first.chunks
    assert chunk.sequences == 3
    [one] = chunk.passes
    # (4, 5) once for A and B (sequences 1 and 2), then A's (6,), B's (7, 8), C's (9,) and (10,), after the trunk's
    # 3 tokens.
    assert one.tokens == [4, 5, 6, 7, 8, 9, 10]
    assert one.positions == [3, 4, 5, 5, 6, 3, 4]
    assert one.sequences == [(1, 2), (1, 2), (1,), (2,), (2,), (3,), (3,)]
    assert one.readers == {2: [3], 4: [2], 6: [0]}  # A's logits after its 6, B's after its 8, C's after its 10
    assert first.computed == {3: 3, 2: 2, 0: 2}  # the shared (4, 5) on A's account
    assert apart.trunk == [(20,), (21,)] and apart.chunks[0].passes[0].tokens == [22]


def test_the_passes_depend_on_the_group_alone_not_on_the_order_it_arrives_in():
    def shape(prompts):
        return [(p.trunk, [(c.sequences, [(one.tokens, one.positions, one.sequences,
                                            {i: [prompts[r] for r in readers] for i, readers in one.readers.items()})
                                           for one in c.passes]) for c in p.chunks]) for p in plan_passes(prompts)]

    assert shape([A, B, C, D]) == shape([D, C, B, A]) == shape([B, D, A, C])


def test_a_prompt_sent_twice_is_read_once_for_both():
    [partition] = plan_passes([A, B, A])
    [one] = partition.chunks[0].passes
    assert partition.trunk == [(1, 2), (3,), (4, 5)]  # all three share it
    assert one.tokens == [6, 7, 8] and one.readers == {0: [0, 2], 2: [1]}


def test_a_large_group_is_decoded_sixteen_readings_at_a_time_in_passes_of_at_most_512_tokens():
    prompts = [[(1,), (2,), tuple(range(100 + 40 * n, 140 + 40 * n))] for n in range(SEQUENCES + 4)]
    [partition] = plan_passes(prompts)
    assert [c.sequences for c in partition.chunks] == [SEQUENCES, 4]
    passes = partition.chunks[0].passes
    assert [len(one.tokens) for one in passes] == [PASS_TOKENS, SEQUENCES * 40 - PASS_TOKENS]
    assert sorted(r for one in passes for readers in one.readers.values() for r in readers) == list(range(SEQUENCES))


def test_a_group_larger_than_a_batch_travels_whole_and_other_requests_are_cut_as_before():
    class Planned:
        def __init__(self, doc_id, together=""):
            self.doc_id = doc_id
            self.request = type("R", (), {"together": together})()

    written = [Planned("d") for _ in range(5)]
    grouped = [Planned("d", "g1") for _ in range(4)] + [Planned("d", "g2") for _ in range(2)]
    assert [len(b) for b in batches(written, 2)] == [2, 2, 1]
    assert [[p.request.together for p in b] for b in batches(grouped, 3)] == [["g1"] * 4, ["g2"] * 2]


@pytest.fixture
def counting():
    class Counting(ResponderBackend):
        sent: list[str] = []

        def generate(self, requests):
            type(self).sent.extend(r.id for r in requests)
            return super().generate(requests)

    Counting.sent = []
    return Counting


def test_a_group_missing_one_reading_is_sent_again_whole(tmp_path, small_input, counting):
    """A reading's numbers depend on its group (one task's readings of one summary): a group is never sent in part, so
    a reading lost from the store brings its whole group back, and nothing else."""
    config = ModelConfig.load(str(RESPONDER_CONFIG))
    first = Pipeline(config, tmp_path / "store", method=17, backend_factory=counting).score(load_input(small_input))
    assert first.failures == {}
    cache = JudgmentCache(tmp_path / "store")
    stored = [r for r in cache if r.next_token is not None]
    lost = stored[0]
    group = {r.cache_key for r in stored if (r.doc_id, r.system, r.task) == (lost.doc_id, lost.system, lost.task)}
    cache._db.execute("DELETE FROM records WHERE cache_key = ?", (lost.cache_key,))
    cache._db.commit()
    cache.close()
    counting.sent = []
    again = Pipeline(config, tmp_path / "store", method=17, backend_factory=counting).score(load_input(small_input))
    assert len(group) > 1 and len(counting.sent) == len(group) and again.requests_reused == first.requests_sent - len(group)
    assert [s.values for s in again.summaries] == [s.values for s in first.summaries]
