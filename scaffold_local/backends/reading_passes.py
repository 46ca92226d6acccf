"""How a group of readings computed together is decoded: the passes (one forward pass each) that compute every
reading of the group, fixed by the group's prompts alone.

The readings are partitioned by their first prompt part (the instructions and the document); in each partition the
parts all share (the trunk: a summary's readings share the document and the summary) are computed once, in sequence
0, and what follows is a tree: the readings in canonical order (by their tokens), 16 at a time, each in a sequence of
its own, every node of the tree computed once for all the sequences below it, in passes of at most 512 tokens. The
numbers of a reading then depend on its group and never on what else shares the engine call, the store or the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

Part = tuple[int, ...]

# They shape the numbers (which tokens share a forward pass): fixed, not settings.
SEQUENCES = 16  # readings decoded side by side, sequences 1..16 (0 holds the trunk)
PASS_TOKENS = 512  # tokens in one forward pass


@dataclass
class Pass:
    """One forward pass: each token with its position and the sequences it belongs to; where logits are read."""

    tokens: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    sequences: list[tuple[int, ...]] = field(default_factory=list)
    readers: dict[int, list[int]] = field(default_factory=dict)  # index in the pass -> the readings read there


@dataclass
class Chunk:
    """Up to SEQUENCES readings decoded side by side: sequence 0 copied to 1..sequences, dropped afterwards."""

    sequences: int
    passes: list[Pass]


@dataclass
class Partition:
    """The readings that share a first part: their trunk and the chunks below it."""

    members: list[int]  # in canonical order
    trunk: list[Part]
    chunks: list[Chunk]
    computed: dict[int, int]  # reading -> tokens of the chunks computed on its account (the first under each node)


def plan_passes(prompts: Sequence[Sequence[Part]]) -> list[Partition]:
    """The partitions, chunks and passes that compute every prompt's reading (its logits after its last token).
    Prompts are given part by part; readings are identified by their index in `prompts`."""
    by_first: dict[Part, list[int]] = {}
    for index, parts in enumerate(prompts):
        by_first.setdefault(tuple(parts[0]), []).append(index)
    return [_partition(prompts, members) for _, members in sorted(by_first.items())]


def _partition(prompts: Sequence[Sequence[Part]], members: list[int]) -> Partition:
    members = sorted(members, key=lambda i: (tuple(prompts[i]), i))
    shortest = min(len(prompts[i]) for i in members) - 1  # every reading keeps a part of its own
    trunk_parts = next((n for n in range(shortest) if len({tuple(prompts[i][n]) for i in members}) > 1), shortest)
    trunk = [tuple(p) for p in prompts[members[0]][:trunk_parts]]
    start = sum(len(p) for p in trunk)
    leaves: dict[tuple[Part, ...], list[int]] = {}  # the same prompt read once for every request that sends it
    for i in members:
        leaves.setdefault(tuple(tuple(p) for p in prompts[i][trunk_parts:]), []).append(i)
    ordered = list(leaves.items())
    chunks: list[Chunk] = []
    computed: dict[int, int] = {}
    for begin in range(0, len(ordered), SEQUENCES):
        chunk = ordered[begin:begin + SEQUENCES]
        chunks.append(Chunk(sequences=len(chunk), passes=_passes(chunk, start, computed)))
    return Partition(members=members, trunk=trunk, chunks=chunks, computed=computed)


def _passes(chunk: list[tuple[tuple[Part, ...], list[int]]], start: int, computed: dict[int, int]) -> list[Pass]:
    """The tree of one chunk's prompts below the trunk, node by node (parents first), in passes of PASS_TOKENS."""
    below: dict[tuple[Part, ...], list[int]] = {}  # node -> the sequences below it
    for sequence, (rest, _) in enumerate(chunk, 1):
        for depth in range(1, len(rest) + 1):
            below.setdefault(rest[:depth], []).append(sequence)
    ends = {rest: readers for rest, readers in chunk}
    passes = [Pass()]
    for node, sequences in below.items():
        first_reader = chunk[sequences[0] - 1][1][0]
        computed[first_reader] = computed.get(first_reader, 0) + len(node[-1])
        offset = start + sum(len(p) for p in node[:-1])
        for n, token in enumerate(node[-1]):
            if len(passes[-1].tokens) == PASS_TOKENS:
                passes.append(Pass())
            current = passes[-1]
            current.tokens.append(token)
            current.positions.append(offset + n)
            current.sequences.append(tuple(sequences))
        if node in ends:
            passes[-1].readers[len(passes[-1].tokens) - 1] = ends[node]
    return passes
