"""Kill `scaffold-local score` with SIGKILL at many points, resume each time, and check that the end
result is the uninterrupted run's, that no finished request was sent again and that nothing was left
half-written at any point.

The kill points are the named sites of `scaffold_local.faults` (SCAFFOLD_LOCAL_KILL_AT="<site>:<n>":
the process kills itself at its n-th passage through <site>): a batch about to go to the engine
(`engine_call`, during extraction or judgments), a batch answered but not stored (`engine_done`),
records written inside their SQLite transaction but not committed (`cache_put`), and half a file
written (`write`: scaffolds, the spec, the request list, every output table and the records export).
A seeded schedule picks them. Each process also logs every passage (SCAFFOLD_LOCAL_FAULT_LOG), with
the cache keys of each engine call, which is how the test knows what was sent.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from scaffold_local.data.store.scaffolds import StoredScaffold
from scaffold_local.records import Record

from .helpers import RESPONDER_CONFIG, write_jsonl

# The run folder's outputs, each written whole by every invocation that gets to the end.
OUTPUTS = ("input_issues.jsonl", "requests.jsonl", "summaries.jsonl", "systems.json", "summaries.parquet",
           "summaries.csv", "systems.csv", "candidates.jsonl", "records.jsonl")
SEED = 12

TOWNS = ["Denton", "Oakvale", "Brixham", "Carlow", "Dunmore", "Elgin", "Fenwick", "Galway", "Harlow", "Ilford"]
COMPANIES = ["Alpha Corp", "Birch Works", "Cobalt Labs", "Delta Mills", "Ember Group", "Falcon Ltd", "Granite Inc",
             "Harbor Co", "Iris Systems", "Juniper Hall"]
PRODUCTS = ["solar panels", "bicycles", "water pumps", "school desks", "wind turbines", "rail cars", "glass jars",
            "fishing nets", "steel beams", "paper bags"]


def documents(n: int) -> list[dict[str, str]]:
    """n short news items x 3 summaries: one keeping the main facts, one the details plus an
    invented number, one a single sentence (the responder judges them by word overlap). Up to 100
    documents, no two share a request."""
    rows = []
    for i in range(n):
        town, company, product = TOWNS[i % 10], COMPANIES[(i + i // 10) % 10], PRODUCTS[(i + 2 * (i // 10)) % 10]
        sentences = [f"{company} opened a factory in {town} on Monday.",
                     f"The factory employs {100 + 7 * i} local workers.",
                     f"It builds {product} for homes and schools.",
                     f"The plant cost {20 + i} million dollars to build.",
                     f"Published by the {town} Daily."]
        document = " ".join(sentences)
        summaries = {"brief": " ".join(sentences[:2]),
                     "details": f"{sentences[0]} {sentences[2]} {sentences[3]} It will export {900 + i} units.",
                     "short": sentences[2]}
        rows += [{"doc_id": f"doc-{i:02d}", "document": document, "system": s, "summary": t} for s, t in summaries.items()]
    return rows


def score(input_path: Path, store: Path, log: Path, kill_at: str | None = None, model: str = str(RESPONDER_CONFIG),
          batch: int | None = 8, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCAFFOLD_LOCAL_FAULT_LOG": str(log), "COLUMNS": "200"}
    env.pop("SCAFFOLD_LOCAL_KILL_AT", None)
    if kill_at:
        env["SCAFFOLD_LOCAL_KILL_AT"] = kill_at
    command = [sys.executable, "-m", "scaffold_local.cli", "score", str(input_path), "-m", model, "--store", str(store), "--allow-partial",
               *(["--batch-requests", str(batch)] if batch else [])]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def passages(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []


def sent_keys(log: Path) -> list[str]:
    """Cache keys handed to the engine by the process that wrote `log` (not those of a call the
    process was killed at before sending)."""
    return [key for p in passages(log) if p["site"] == "engine_call" and not p["kill"] for key in p["keys"]]


def finished_keys(store: Path) -> set[str]:
    """Requests that need no new engine call: finished records in the cache, and the extraction
    records inside stored scaffolds."""
    keys: set[str] = set()
    if (store / "cache.sqlite").is_file():
        with sqlite3.connect(store / "cache.sqlite") as db:
            for (text,) in db.execute("SELECT record FROM records"):
                record = Record.model_validate_json(text)
                if not record.retryable:
                    keys.add(record.cache_key)
        db.close()
    for stored in scaffolds(store).values():
        keys.update(r.cache_key for r in stored.records)
    return keys


def scaffolds(store: Path) -> dict[str, StoredScaffold]:
    return {p.stem: StoredScaffold.model_validate_json(p.read_text()) for p in (store / "scaffolds").glob("*/*.json")}


def check_whole(store: Path, reference_dir: Path, reference_scaffolds: dict[str, StoredScaffold]) -> None:
    """What a kill may leave: a cache that passes SQLite's integrity check with every row a whole
    record, scaffolds that are the uninterrupted run's, and run-folder outputs that are either absent
    or byte for byte the uninterrupted run's (every invocation that writes them has all the answers)."""
    if (store / "cache.sqlite").is_file():
        with sqlite3.connect(store / "cache.sqlite") as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            for key, text in db.execute("SELECT cache_key, record FROM records"):
                assert Record.model_validate_json(text).cache_key == key
        db.close()
    for key, stored in scaffolds(store).items():
        assert stored.scaffold == reference_scaffolds[key].scaffold and stored.records == reference_scaffolds[key].records
    runs = list((store / "runs").iterdir()) if (store / "runs").is_dir() else []
    assert len(runs) <= 1
    for run_dir in runs:
        json.loads((run_dir / "spec.json").read_text())  # always present once the run exists, and whole
        for name in OUTPUTS:
            if (run_dir / name).is_file():
                assert (run_dir / name).read_bytes() == (reference_dir / name).read_bytes(), f"{name} differs"
        for path in run_dir.iterdir():
            if path.suffix == ".jsonl" and not path.name.startswith("."):
                lines = path.read_text().splitlines()
                rows = [json.loads(line) for line in lines]  # every line whole
                if path.name == "records.jsonl":
                    keys = [r["cache_key"] for r in rows]
                    assert len(keys) == len(set(keys)), "a record exported twice"


def next_kill(rng: random.Random, extraction_left: bool, judgments_left: bool, outputs_left: list[str]) -> str | None:
    """The next kill point, drawn by a seeded RNG from those the run can still reach. A process counts
    passages from 1 and a resumed run skips what is done, so a small n moves the run on a little."""
    if extraction_left:  # an extraction batch about to go / answered, or a scaffold half-written
        return rng.choice([f"engine_call:{rng.randint(1, 2)}", f"engine_done:{rng.randint(1, 2)}",
                           f"write:{rng.randint(2, 3)}"])
    if judgments_left:  # a judgment batch about to go / answered / inside its transaction
        return rng.choice([f"engine_call:{rng.randint(1, 3)}", f"engine_done:{rng.randint(1, 3)}",
                           f"cache_put:{rng.randint(1, 3)}"])
    if outputs_left:  # all answered: each output file, half-written
        return f"write/{outputs_left.pop(rng.randrange(len(outputs_left)))}:1"
    return None


def test_kill_anywhere_then_resume_gives_the_uninterrupted_result(tmp_path):
    input_path = write_jsonl(tmp_path / "news.jsonl", documents(10))

    reference_store = tmp_path / "reference"
    done = score(input_path, reference_store, tmp_path / "reference.log")
    assert done.returncode == 0, done.stderr
    reference_dir = next((reference_store / "runs").iterdir())
    reference_scaffolds = scaffolds(reference_store)
    reference_sent = sent_keys(tmp_path / "reference.log")
    assert len(reference_sent) == len(set(reference_sent)) == 30 + 150  # 10 x 3 extractions, 30 x 5 judgments
    extraction_keys = {r.cache_key for s in reference_scaffolds.values() for r in s.records}

    store = tmp_path / "store"
    kills: list[dict] = []
    all_sent: list[str] = []
    rng, outputs_left = random.Random(SEED), [*OUTPUTS, "usage.json"]
    for i in range(60):
        finished_before = finished_keys(store)
        kill_at = next_kill(rng, bool(extraction_keys - finished_before), bool(set(reference_sent) - finished_before),
                            outputs_left)
        if kill_at is None:
            break
        log = tmp_path / f"run-{i:02d}.log"
        result = score(input_path, store, log, kill_at)
        assert result.returncode in (0, -signal.SIGKILL), result.stderr
        sent = sent_keys(log)
        again = finished_before & set(sent)
        assert not again, f"{kill_at}: {len(again)} finished requests sent again"
        assert len(sent) == len(set(sent)), f"{kill_at}: a request sent twice in one process"
        all_sent += sent
        if result.returncode == -signal.SIGKILL:
            where = passages(log)[-1]
            assert where["kill"], "killed, but not at the planned point"
            stage = ("extraction" if set(where.get("keys", [])) <= extraction_keys else "judgments") \
                if where["site"] in ("engine_call",) else None
            kills.append({"at": kill_at, "site": where["site"], "name": where["name"], "stage": stage})
        check_whole(store, reference_dir, reference_scaffolds)

    final = score(input_path, store, tmp_path / "final.log")
    assert final.returncode == 0, final.stderr
    assert not finished_keys(store) & set(sent_keys(tmp_path / "final.log"))
    all_sent += sent_keys(tmp_path / "final.log")
    check_whole(store, reference_dir, reference_scaffolds)

    # The end result is the uninterrupted run's: every output byte for byte, the same records.
    run_dir = next((store / "runs").iterdir())
    assert run_dir.name == reference_dir.name
    for name in OUTPUTS:
        assert (run_dir / name).read_bytes() == (reference_dir / name).read_bytes(), name
    usage, reference_usage = (json.loads((d / "usage.json").read_text()) for d in (run_dir, reference_dir))
    assert {k: v for k, v in usage.items() if k != "engine_seconds"} == \
           {k: v for k, v in reference_usage.items() if k != "engine_seconds"}
    assert json.loads((run_dir / "spec.json").read_text())["status"] == "complete"
    assert scaffolds(store).keys() == reference_scaffolds.keys()
    with sqlite3.connect(store / "cache.sqlite") as db, sqlite3.connect(reference_store / "cache.sqlite") as ref:
        mine = dict(db.execute("SELECT cache_key, record FROM records"))
        theirs = dict(ref.execute("SELECT cache_key, record FROM records"))
    db.close()
    ref.close()
    assert mine == theirs
    assert not list(store.rglob("*.tmp")), "temporary files of killed writes left in the store"

    # Every request was sent; the only repeats are requests of calls killed in flight.
    assert set(all_sent) == set(reference_sent)
    repeats = sum(n - 1 for n in Counter(all_sent).values())
    assert repeats <= 8 * sum(k["site"] != "engine_call" for k in kills)  # at most the call in flight (8) per kill

    # Enough kills, everywhere the issue names.
    print(f"\n{len(kills)} kills: {Counter(k['site'] for k in kills)}, engine calls by stage "
          f"{Counter(k['stage'] for k in kills if k['stage'])}; {repeats} requests sent again after a kill; "
          f"{len(all_sent)} sent in all against {len(reference_sent)} uninterrupted")
    assert len(kills) >= 20
    assert any(k["stage"] == "extraction" for k in kills) and any(k["stage"] == "judgments" for k in kills)
    sites = Counter(k["site"] for k in kills)
    assert sites["engine_done"] and sites["cache_put"]
    written = {k["name"] for k in kills if k["site"] == "write"}
    assert {*OUTPUTS, "usage.json"} <= written  # every output table and the records export, half-written
    assert any(re.fullmatch(r"[0-9a-f]{64}\.json", name) for name in written)  # a scaffold, half-written


@pytest.mark.parametrize("kill_at", ["bogus", "engine_call:x"])
def test_a_malformed_kill_point_is_ignored(kill_at, tmp_path, small_input):
    """The hook only ever kills at a well-formed, reached point; anything else is a normal run."""
    result = score(small_input, tmp_path / "store", tmp_path / "log", kill_at)
    assert result.returncode == 0, result.stderr


def test_csv_text_of_a_table_is_whole(tmp_path):
    """Tables go through the same whole-or-nothing write as every other file (write_csv)."""
    from scaffold_local.data.store.score_tables import write_csv

    write_csv(tmp_path / "t.csv", [{"a": 1, "b": "x\ny"}, {"a": 2, "b": 'q"'}])
    rows = list(csv.DictReader(io.StringIO((tmp_path / "t.csv").read_bytes().decode())))
    assert rows == [{"a": "1", "b": "x\ny"}, {"a": "2", "b": 'q"'}]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.real_model
def test_kill_the_embedded_model_run_then_resume(tmp_path):
    """Three kills over the real embedded judge (transformers, CPU) on one document and one summary:
    with the scaffold stored, just before the judgment call; with the judgments answered, inside
    their transaction; while writing the records export. The resumed run ends as the uninterrupted
    one, and no finished request is sent again (each call here has the same rows as the
    uninterrupted run's, so greedy outputs are the same)."""
    rows = [r for r in documents(1) if r["system"] == "brief"]
    input_path = write_jsonl(tmp_path / "one.jsonl", rows)
    model = "smollm2-135m-transformers"
    done = score(input_path, tmp_path / "reference", tmp_path / "reference.log", model=model, batch=None, timeout=900)
    assert done.returncode == 0, done.stderr
    reference_dir = next((tmp_path / "reference" / "runs").iterdir())
    judged = [json.loads(line)["cache_key"] for line in (reference_dir / "records.jsonl").read_text().splitlines()]
    assert set(sent_keys(tmp_path / "reference.log")) >= set(judged) and len(judged) > 5  # read: one request per item

    store = tmp_path / "store"
    for i, kill_at in enumerate(["engine_call:2", "cache_put:1", "write/records.jsonl:1"]):
        finished_before = finished_keys(store)
        log = tmp_path / f"run-{i}.log"
        result = score(input_path, store, log, kill_at, model=model, batch=None, timeout=900)
        assert result.returncode == -signal.SIGKILL, result.stderr
        assert passages(log)[-1]["kill"]
        assert not finished_before & set(sent_keys(log))
    final = score(input_path, store, tmp_path / "final.log", model=model, batch=None, timeout=900)
    assert final.returncode == 0, final.stderr
    assert sent_keys(tmp_path / "final.log") == [] and "judgments: 0 sent" in final.stderr

    run_dir = next((store / "runs").iterdir())
    strip = lambda path: [{k: v for k, v in json.loads(line).items() if k != "latency_s"}  # noqa: E731
                          for line in path.read_text().splitlines()]
    assert strip(run_dir / "records.jsonl") == strip(reference_dir / "records.jsonl")
    for name in ("summaries.jsonl", "systems.json", "summaries.csv", "candidates.jsonl", "requests.jsonl"):
        assert (run_dir / name).read_bytes() == (reference_dir / name).read_bytes(), name
    assert not list(store.rglob("*.tmp"))
