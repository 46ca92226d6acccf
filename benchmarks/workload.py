"""Generated benchmark workloads: news-like documents of three lengths, each summarised n times.

Seeded, so every configuration and every run judges the same text. Scaffolds come from the
deterministic responder (it computes them from the document), so every engine configuration is
asked about the same items; the extraction requests themselves are real and can be sent to an
engine to measure what extracting costs per document.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

from scaffold_local.data import Candidate, Document
from scaffold_local.method import sha256_text

PEOPLE = ("Maria Lopez", "Daniel Okafor", "Priya Raman", "Tomas Berg", "Aiko Tanaka", "Samuel Reyes")
ORGS = ("the Denton council", "Northwind Energy", "the regional health board", "Harbor Rail", "the state university")
PLACES = ("Denton", "the river district", "Port Alder", "the northern valley", "Millbrook")
THINGS = ("solar farm", "bridge repair", "school expansion", "flood barrier", "rail link", "clinic")
VERBS = ("approved", "delayed", "announced", "criticised", "funded", "reviewed")
SENTENCE_SHAPES = (
    "{person} of {org} said the {thing} in {place} would cost {n} million dollars.",
    "{org} {verb} the {thing} on {day}, after {m} months of debate.",
    "Work on the {thing} is expected to create {k} jobs in {place}.",
    "{person} warned that the {thing} could be {verb} again if costs rise above {n} million.",
    "Residents of {place} have asked {org} to publish the full plan for the {thing}.",
    "The {thing} follows a {m}-month study by {org} of traffic and water levels in {place}.",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
LENGTHS = {"short": 6, "medium": 14, "long": 40}  # sentences: about 100, 250 and 700 words


@dataclass(frozen=True)
class Workload:
    name: str
    documents: list[Document]
    candidates: list[Candidate]

    @property
    def summaries(self) -> int:
        return len(self.candidates)


def _sentence(rng: random.Random) -> str:
    return rng.choice(SENTENCE_SHAPES).format(
        person=rng.choice(PEOPLE), org=rng.choice(ORGS), place=rng.choice(PLACES), thing=rng.choice(THINGS),
        verb=rng.choice(VERBS), day=rng.choice(DAYS), n=rng.randint(2, 90), m=rng.randint(2, 18),
        k=rng.randint(20, 400))


def _summary(rng: random.Random, sentences: list[str]) -> str:
    """2-5 of the document's sentences in order; one in four has a number changed (an error to find)."""
    picked = sorted(rng.sample(range(len(sentences)), min(len(sentences), rng.randint(2, 5))))
    chosen = [sentences[i] for i in picked]
    if rng.random() < 0.25:
        words = chosen[0].split()
        numbers = [i for i, w in enumerate(words) if w.isdigit()]
        if numbers:
            words[rng.choice(numbers)] = str(rng.randint(100, 999))
            chosen[0] = " ".join(words)
    return " ".join(chosen)


def generated(length: str, documents: int, summaries_per_document: int, seed: int = 0) -> Workload:
    rng = random.Random(f"{seed}:{length}")
    docs, candidates = [], []
    for d in range(documents):
        sentences = [_sentence(rng) for _ in range(LENGTHS[length])]
        text = " ".join(sentences)
        doc = Document(doc_id=f"{length}-{d}", text=text, sha256=sha256_text(text))
        docs.append(doc)
        candidates += [Candidate(record=len(candidates) + 1, doc_id=doc.doc_id, system=f"s{s}",
                                 summary=_summary(rng, sentences)) for s in range(summaries_per_document)]
    return Workload(f"{length}, {documents} docs x {summaries_per_document}", docs, candidates)


def from_eval_data(data_dir: Path, documents: int, per_document: int, seed: int = 0) -> Workload:
    """REALSumm documents (CNN/DM) with the first `per_document` of their 25 system summaries, read at run time."""
    from scaffold_local.metaeval import document_of, load

    docs, candidates = [], []
    for raw in load(data_dir, "realsumm", limit=documents, seed=seed):
        doc = document_of(raw)
        docs.append(doc)
        candidates += [Candidate(record=len(candidates) + 1, doc_id=doc.doc_id, system=s["system"], summary=s["summary"])
                       for s in raw["summaries"][:per_document]]
    return Workload(f"REALSumm, {len(docs)} docs x {len(candidates) // max(len(docs), 1)}", docs, candidates)


def responder_scaffolds(workload: Workload, judge_config: str) -> dict:
    """Scaffolds the responder computes from each document, under the judge's schema limits."""
    from scaffold_local.runs import ModelConfig, Pipeline
    from scaffold_local.testing import ResponderBackend

    limits = ModelConfig.load(judge_config).limits
    responder = ModelConfig(name="responder", backend="responder", model="responder", limits=limits)
    with tempfile.TemporaryDirectory() as store:
        return Pipeline(responder, Path(store), backend_factory=ResponderBackend).extract(workload.documents).scaffolds
