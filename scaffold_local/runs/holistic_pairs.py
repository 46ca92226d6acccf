"""The holistic pairwise baseline over a run's summaries: which pairs are read (every pair, or each system
against one reference system when the full square is too dear), what that costs, and each pair's
preference with the two orders kept apart, so that position bias is measured before it is averaged away.

Each pair is read twice (judging/pair_readings.py): with A shown first and with B shown first. P(A better)
is the mean of P(first) in the first order and P(second) in the other; a tie's mass counts half for each
side, as a tie does in the Bradley-Terry fit. A pair is *position-consistent* when its likeliest answer
names the same summary (or a tie) in both orders."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from ..data.inputs import Candidate, Document, LoadedInput
from ..data.store import RunFolder
from ..errors import UsageError
from ..judging.judge_setup import JudgeSetup
from ..judging.pair_readings import PAIR_ITEM, pair_requests
from ..judging.planned import PlannedRequest
from ..method.holistic_pairwise import FIELD, FIRST, SECOND, TASK, TIE
from ..records import Record

EVERY_PAIR = "all"


@dataclass(frozen=True)
class Pairing:
    """Which system pairs a run reads: every pair (`against` None), or each system against one."""

    against: str | None = None

    @classmethod
    def parse(cls, value: str, systems: Sequence[str]) -> Pairing:
        """`all`, or the name of the reference system (which must be one of `systems`)."""
        if value == EVERY_PAIR:
            return cls()
        if value not in systems:
            raise UsageError(f"--pairwise {value!r}: no such system (the input's systems: {', '.join(systems)})",
                             hint=f"give `{EVERY_PAIR}` for every pair, or one system to compare every other with")
        return cls(value)

    def pairs(self, systems: Sequence[str]) -> list[tuple[str, str]]:
        if self.against is None:
            return list(itertools.combinations(systems, 2))
        return [(self.against, s) for s in systems if s != self.against] if self.against in systems else []

    def describe(self) -> str:
        return "every pair of systems" if self.against is None else f"each system against {self.against}"


@dataclass(frozen=True)
class PlannedPair:
    doc_id: str
    a: str
    b: str
    a_first: PlannedRequest
    b_first: PlannedRequest


def plan_pairs(judge: JudgeSetup, documents: Mapping[str, Document], candidates: Sequence[Candidate],
               pairing: Pairing) -> list[PlannedPair]:
    """The readings of every chosen pair on every document where both systems have a summary."""
    by_document: dict[str, dict[str, Candidate]] = {}
    for c in candidates:
        by_document.setdefault(c.doc_id, {})[c.system] = c
    planned = []
    for doc_id, summaries in by_document.items():
        for a, b in pairing.pairs(list(summaries)):
            a_first, b_first = pair_requests(judge, documents[doc_id], summaries[a], summaries[b])
            planned.append(PlannedPair(doc_id, a, b, a_first, b_first))
    return planned


def cost(judge: JudgeSetup, loaded: LoadedInput, pairing: Pairing) -> str:
    """What reading `pairing`'s pairs of the input costs, said before anything is sent."""
    documents = {d: loaded.source_of(d) for d in dict.fromkeys(c.doc_id for c in loaded.candidates)}
    planned = plan_pairs(judge, documents, loaded.candidates, pairing)
    text = (f"holistic pairwise ({pairing.describe()}): {len(planned)} pairs on {len({p.doc_id for p in planned})} "
            f"documents, each read in both orders: {2 * len(planned)} readings of document and two summaries, "
            "no generated tokens")
    if pairing.against is None:
        return text
    return text + f" (every pair would be {2 * len(plan_pairs(judge, documents, loaded.candidates, Pairing()))} readings)"


@dataclass(frozen=True)
class HolisticPair:
    """One pair's preference, read in both orders: P of A, B and tie as the judge was shown them."""

    doc_id: str
    a: str
    b: str
    a_first: dict[str, float] | None  # a shown as summary A
    b_first: dict[str, float] | None  # b shown as summary A
    failure: str | None = None  # why a reading has no answer (the pair is then left out)

    @property
    def p_a(self) -> float:
        """P(a better), averaged over the two orders."""
        assert self.a_first is not None and self.b_first is not None, self.failure
        return (self.a_first[FIRST] + self.b_first[SECOND]) / 2

    @property
    def p_tie(self) -> float:
        assert self.a_first is not None and self.b_first is not None, self.failure
        return (self.a_first[TIE] + self.b_first[TIE]) / 2

    @property
    def value(self) -> float:
        """a's expected share of the win (a tie half): a Bradley-Terry preference."""
        return self.p_a + self.p_tie / 2

    @property
    def consistent(self) -> bool:
        """Whether the likeliest answer names the same summary (or a tie) in both orders."""
        assert self.a_first is not None and self.b_first is not None, self.failure
        named = {FIRST: "a", SECOND: "b", TIE: TIE}
        swapped = {FIRST: "b", SECOND: "a", TIE: TIE}
        return named[max(self.a_first, key=self.a_first.__getitem__)] == \
            swapped[max(self.b_first, key=self.b_first.__getitem__)]

    @property
    def p_first(self) -> float:
        """P(the summary shown first is better), averaged over the two orders: 0.5 less the ties' half
        without position bias."""
        assert self.a_first is not None and self.b_first is not None, self.failure
        return (self.a_first[FIRST] + self.b_first[FIRST]) / 2

    def row(self) -> dict[str, object]:
        return asdict(self)


def read_pairs(planned: Sequence[PlannedPair], records: Mapping[str, Record]) -> list[HolisticPair]:
    """Each pair's preference from its two readings' records."""
    out = []
    for pair in planned:
        read: list[dict[str, float] | None] = []
        failures: list[str] = []
        for request in (pair.a_first, pair.b_first):
            record = records.get(request.cache_key)
            if record is None or record.parsed is None:
                failures.append("not answered" if record is None else
                                record.validation_error or record.error or str(record.failure))
                read.append(None)
            else:
                read.append(dict(record.parsed[PAIR_ITEM][FIELD]["p"]))
        out.append(HolisticPair(pair.doc_id, pair.a, pair.b, read[0], read[1], "; ".join(failures) or None))
    return out


def write_pairs(run: RunFolder, judge: JudgeSetup, pairing: Pairing, planned: Sequence[PlannedPair],
                records: Mapping[str, Record]) -> list[HolisticPair]:
    """Each pair's preference, written to the run folder with how it was read."""
    pairs = read_pairs(planned, records)
    template = judge.template(TASK)
    run.write_holistic_pairs({"pairing": pairing.describe(), "against": pairing.against, "prompt": template.ref,
                              "prompt_sha256": template.sha256}, [p.row() for p in pairs])
    return pairs


@dataclass(frozen=True)
class PositionBias:
    pairs: int  # read in both orders
    consistent: int  # the same answer in both orders
    p_first: float  # mean P(the first shown is better)
    p_second: float

    def describe(self) -> str:
        return (f"position-consistent on {self.consistent} of {self.pairs} pairs; P(first shown better) "
                f"{self.p_first:.2f} against P(second) {self.p_second:.2f} before averaging the two orders")


def position_bias(pairs: Sequence[HolisticPair]) -> PositionBias | None:
    read = [p for p in pairs if p.failure is None]
    if not read:
        return None
    p_first = sum(p.p_first for p in read) / len(read)
    p_tie = sum(p.p_tie for p in read) / len(read)
    return PositionBias(len(read), sum(p.consistent for p in read), p_first, 1 - p_first - p_tie)

