"""How long a send will take, said before it starts: new prompt characters at the rate measured in the store on this
machine, the rate kept per machine, judge, method version and task, and the first engine call measuring one."""

from __future__ import annotations

import json
import re

import pytest

from scaffold_local.backends.protocol import Request, Sampling
from scaffold_local.backends.responder import ResponderBackend
from scaffold_local.data.loading import load_input
from scaffold_local.data.store import EngineRates, Work
from scaffold_local.data.store.rates import RATES_FILE
from scaffold_local.judging import dispatch
from scaffold_local.judging.pace import Pace, work_by_task
from scaffold_local.judging.planned import PlannedRequest
from scaffold_local.records import Message
from scaffold_local.runs.pipeline import Pipeline

from .helpers import SUMMARIES, write_jsonl


def planned(*prompts: str, task: str = "t") -> list[PlannedRequest]:
    sampling = Sampling(temperature=0.0, max_tokens=8)
    return [PlannedRequest(Request(id=str(n), messages=(Message(role="user", content=p),), json_schema=None,
                                   sampling=sampling),
                           cache_key=str(n), task=task, doc_id="d", system=None, model=object)  # type: ignore[arg-type]
            for n, p in enumerate(prompts)]


def test_a_request_costs_the_characters_it_shares_with_none_sent_just_before():
    work = work_by_task(planned("Document. Summary A.", "Document. Summary B!", "Other."))
    # all 20 characters, then the 2 after the shared "Document. Summary ", then all 6 of "Other." (it shares nothing
    # with the request before it)
    assert work == {"t": Work(3, 20 + 2 + 6)}
    assert work_by_task(planned("abc", "abd"), previous="ab") == {"t": Work(2, 1 + 1)}  # an engine's cache goes on
    checks = planned("Document. Check sentence 1.", task="check")
    assert work_by_task([*planned("Document. Summary A."), *checks]) == {"t": Work(1, 20), "check": Work(1, 17)}


def test_rates_add_up_per_machine_judge_version_and_task(tmp_path):
    here, there = EngineRates(tmp_path, machine="cpu A x2"), EngineRates(tmp_path, machine="cpu B x2")
    here.add("judge", 17, {"align_facts": (Work(10, 1000), 5.0)})
    here.add("judge", 17, {"align_facts": (Work(10, 3000), 15.0)})
    rate = here.get("judge", 17, "align_facts")
    assert rate is not None and rate.work == Work(20, 4000) and rate.seconds == 20.0
    assert rate.seconds_for(Work(1, 2000)) == 10.0  # 200 characters a second
    assert there.get("judge", 17, "align_facts") is None  # another machine measures its own
    assert here.get("judge", 16, "align_facts") is None and here.get("judge", 17, "extract_facts") is None
    assert here.get("other judge", 17, "align_facts") is None
    assert here.by_task("judge", 17) == {"align_facts": here.get("judge", 17, "align_facts")}  # one judge's, by task


def test_a_store_not_created_yet_keeps_no_rate_and_an_unreadable_file_is_measured_again(tmp_path):
    EngineRates(tmp_path / "missing").add("judge", 17, {"align_facts": (Work(1, 10), 1.0)})
    assert not (tmp_path / "missing").exists()
    (tmp_path / RATES_FILE).write_text("{not json")
    rates = EngineRates(tmp_path, machine="m")
    assert rates.get("judge", 17, "align_facts") is None
    rates.add("judge", 17, {"align_facts": (Work(1, 10), 1.0)})
    assert rates.get("judge", 17, "align_facts").seconds == 1.0


class Clock:
    now = 0.0

    def perf_counter(self) -> float:
        return self.now


class PrefixCachingResponder(ResponderBackend):
    """The responder, on a clock that advances one second per prompt character it has not just computed (as an
    engine with a prefix cache would), so every rate it gives is exact."""

    clock = Clock()

    def generate(self, requests):
        for request in requests:
            text = "\n".join(m.content for m in request.messages)
            previous = getattr(self, "previous", "")
            shared = next((i for i, (a, b) in enumerate(zip(previous, text)) if a != b), min(len(previous), len(text)))
            self.clock.now += len(text) - shared
            self.previous = text
        return super().generate(requests)


def minutes(line: str) -> float:
    value, unit = re.search(r"estimated (\d+) (min|s)", line).groups()
    return float(value) if unit == "min" else float(value) / 60


def test_the_estimate_before_a_send_is_the_time_it_then_takes_at_the_measured_rate(responder_config, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setattr(dispatch, "time", PrefixCachingResponder.clock)
    said: list[str] = []
    store = tmp_path / "store"

    def score(rows, name):
        pipeline = Pipeline(responder_config, store, backend_factory=PrefixCachingResponder, announce=said.append,
                            batch_requests=4)
        try:
            pipeline.score(load_input(write_jsonl(tmp_path / name, rows)))
        finally:
            pipeline.close()

    rows = [{"doc_id": d, "document": text, "system": s, "summary": summary} for d, text, s, summary in SUMMARIES]
    score(rows, "first.jsonl")
    assert said[0].startswith("extracting scaffolds: ") and "no rate measured yet" in said[0]
    assert any("more, at the rate of the first engine call" in line for line in said)
    kept = json.loads((store / RATES_FILE).read_text())
    assert kept and all(entry["seconds"] == entry["characters"] for entry in kept.values())  # as the clock ran

    said.clear()
    started = PrefixCachingResponder.clock.now
    score([{**row, "system": row["system"] + "-new", "summary": row["summary"] + " And more."} for row in rows],
          "second.jsonl")
    spent = PrefixCachingResponder.clock.now - started
    estimates = [line for line in said if " to send, estimated " in line]
    assert estimates and not any("no rate measured yet" in line for line in said)
    assert sum(minutes(line) for line in estimates) == pytest.approx(spent / 60, abs=0.5 * len(estimates))


def test_nothing_is_said_of_a_short_send_and_an_estimate_is_kept_without_a_listener(tmp_path):
    rates = EngineRates(tmp_path, machine="m")
    rates.add("judge", 17, {"t": (Work(1, 100), 1.0)})  # 100 characters a second
    said: list[str] = []
    Pace(rates, "judge", 17, said.append).before("short", planned("x" * 2000))  # 20 s
    unheard = Pace(rates, "judge", 17, None)
    unheard.before("unheard", planned("x" * 20000))
    assert said == [] and unheard.said[0].startswith("unheard: 1 request to send, estimated 3 min")
    Pace(rates, "judge", 17, said.append).before("long", planned("x" * 20000))  # 200 s
    assert said == ["long: 1 request to send, estimated 3 min at the rate this judge ran at on this machine (what the "
                    "store holds already is not counted)"]
