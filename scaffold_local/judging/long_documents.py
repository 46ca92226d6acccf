"""Documents longer than the judge's context: chunked mode.

A document whose extraction prompts cannot fit is cut into chunks on paragraph boundaries (a
paragraph too long on its own, on sentence boundaries), each as large as fits, each starting with
the last paragraph of the one before (the overlap, so a fact split by a boundary is whole in one
chunk). Every chunk is extracted like a document; the chunks' scaffolds are merged: an item that
repeats one of an earlier chunk (the same text, case and spacing aside) is dropped, the rest are
numbered afresh, each keeping its chunk (`item_sources`), and one judge pass over the merged list
labels every item main / supporting / other for the whole document (views/labelling.py); where that
pass fails, the chunks' own labels stay, with a note. A summary's sentence check and direct score
read the passages of the document most relevant to its sentences (BM25, `rank_bm25`), as many as
fit, in document order: never a silently truncated document.

The sizes are decided by callbacks that render the real requests and count them with the judge's
tokenizer (context_fit.py), so this module knows nothing of prompts or engines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..data.inputs import Document
from ..method.document_groups import union_scaffold
from ..method.scaffold import Scaffold
from ..method.schemas import ScaffoldNote
from ..method.text import content_word_list, sha256_text, split_sentences
from ..method.views.labelling import relabelled

# Between passages that are not adjacent in the document; a paragraph of its own, so that an excerpt
# read as a document (narrowed again for another judge) splits into the same passages.
EXCERPT_GAP = "\n\n[...]\n\n"
PASSAGE_WORDS = 120  # a passage for retrieval: a paragraph, or sentences of a longer one up to this many words
# Passages an excerpt takes for each summary sentence at most: its best few, not the whole context's
# worth (a sentence check over the full context costs many times the tokens and reads mostly noise).
PASSAGES_PER_SENTENCE = 3
_PARAGRAPH = re.compile(r"\n\s*\n")

Piece = tuple[int, str]  # (paragraph number, text): a paragraph, or one sentence of a long one


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in _PARAGRAPH.split(text) if p.strip()]


def _join(pieces: Sequence[Piece]) -> str:
    """Sentences of one paragraph joined by a space, paragraphs by a blank line."""
    out = ""
    for i, (paragraph, text) in enumerate(pieces):
        out += ("" if i == 0 else " " if pieces[i - 1][0] == paragraph else "\n\n") + text
    return out


def chunk(document: Document, fits: Callable[[str], bool]) -> tuple[Document, ...] | None:
    """The document in chunks that each `fits`, the first piece of each but the first repeating the
    last piece of the one before where that still fits; None when one sentence alone does not fit."""
    pieces: list[Piece] = []
    for number, paragraph in enumerate(_paragraphs(document.text)):
        if fits(paragraph):
            pieces.append((number, paragraph))
            continue
        for sentence in split_sentences(paragraph):
            if not fits(sentence):
                return None
            pieces.append((number, sentence))
    chunks: list[list[Piece]] = []
    current: list[Piece] = []
    for piece in pieces:
        if current and not fits(_join([*current, piece])):
            chunks.append(current)
            current = [current[-1]] if fits(_join([current[-1], piece])) else []
        current.append(piece)
    chunks.append(current)
    texts = [_join(c) for c in chunks]
    return tuple(Document(doc_id=f"{document.doc_id}#{i}", text=t, sha256=sha256_text(t))
                 for i, t in enumerate(texts, 1))


def _content(item: Any) -> str:
    """What makes two items the same: their text, without ids and labels, case and spacing aside."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("id", "label")}
        if isinstance(value, list | tuple):
            return [strip(v) for v in value]
        return " ".join(value.lower().split()) if isinstance(value, str) else value
    return json.dumps(strip(item.model_dump()), sort_keys=True)


def merge(document: Document, chunks: Sequence[Scaffold], key: str) -> Scaffold:
    """The chunks' scaffolds as one: repeats across chunks dropped (a note names each), the rest
    numbered afresh, each item's chunk in `item_sources`. Labels are still the chunks' own."""
    seen: dict[tuple[str, str], str] = {}
    notes: list[ScaffoldNote] = []
    kept = []
    for part in chunks:
        views: dict[str, tuple[Any, ...] | None] = {}
        for name, items in part.views.items():
            if items is None:
                views[name] = None
                continue
            own = []
            for item in items:
                content = (name, _content(item))
                if content in seen:
                    notes.append(ScaffoldNote(view=name, action="dropped duplicate", detail=(
                        f"{item.id} of {part.doc_id} repeats an item of {seen[content]}")))
                    continue
                seen[content] = part.doc_id
                own.append(item)
            views[name] = tuple(own)
        kept.append(part.model_copy(update={"views": views}))
    union = union_scaffold(document.doc_id, document.sha256, kept)
    # Each chunk's own assembly notes name its chunk-local ids: said so.
    chunk_notes = [n.model_copy(update={"detail": f"{part.doc_id}: {n.detail}"}) for part in chunks for n in part.notes]
    return union.model_copy(update={"key": key, "members": (), "notes": (*chunk_notes, *notes)})


def with_labels(scaffold: Scaffold, labels: Mapping[str, str], failed: str = "") -> Scaffold:
    """The merged scaffold labelled for the whole document. Items the pass gave no label (its output,
    or the output of their part, failed: `failed` says why) keep their chunk's label, with a note."""
    views = {name: None if items is None else tuple(relabelled(i, labels) for i in items)
             for name, items in scaffold.views.items()}
    notes = scaffold.notes
    if failed:
        notes = (*notes, ScaffoldNote(view="all", action="labels of the parts kept", detail=failed))
    return scaffold.model_copy(update={"views": views, "notes": notes})


def passages(text: str) -> list[str]:
    """The document as retrieval passages: its paragraphs, a long one cut into runs of sentences of
    at most PASSAGE_WORDS words (a longer sentence is a passage of its own)."""
    out = []
    for paragraph in _paragraphs(text):
        run: list[str] = []
        for sentence in split_sentences(paragraph) if len(paragraph.split()) > PASSAGE_WORDS else [paragraph]:
            if run and len(" ".join([*run, sentence]).split()) > PASSAGE_WORDS:
                out.append(" ".join(run))
                run = []
            run.append(sentence)
        if run:
            out.append(" ".join(run))
    return out


def excerpt(document: Document, sentences: Sequence[str], fits: Callable[[str], bool]) -> Document:
    """The passages most relevant to the summary's sentences, as many as `fits` and at most
    PASSAGES_PER_SENTENCE for each sentence: each sentence's best passage first, then each one's
    second best, and so on, shown in document order."""
    found, rankings = _ranked(document, sentences or [""])
    chosen: list[int] = []
    for rank in range(min(len(found), PASSAGES_PER_SENTENCE)):
        for ranking in rankings:
            candidate = ranking[rank]
            if candidate in chosen:
                continue
            if not fits(_excerpt_text(found, [*chosen, candidate])):
                return _excerpt(document, found, chosen)
            chosen.append(candidate)
    return _excerpt(document, found, chosen)


def sentence_excerpts(document: Document, sentences: Sequence[str]) -> list[Document]:
    """Each sentence's own best passages, PASSAGES_PER_SENTENCE at most, in document order (one index for all)."""
    found, rankings = _ranked(document, sentences)
    return [_excerpt(document, found, ranking[:PASSAGES_PER_SENTENCE]) for ranking in rankings]


def _ranked(document: Document, sentences: Sequence[str]) -> tuple[list[str], list[list[int]]]:
    """The document's passages, and for each sentence their indices from the most relevant (BM25) down."""
    from rank_bm25 import BM25Okapi  # imported here: only passage reading needs it

    found = passages(document.text)
    index = BM25Okapi([content_word_list(p) or [""] for p in found])
    rankings = []
    for sentence in sentences:
        scores = index.get_scores(content_word_list(sentence))
        rankings.append(sorted(range(len(found)), key=lambda i: (-scores[i], i)))
    return found, rankings


def _excerpt_text(found: list[str], chosen: list[int]) -> str:
    text, previous = "", None
    for i in sorted(chosen):
        if previous is not None:
            text += "\n\n" if i == previous + 1 else EXCERPT_GAP
        text, previous = text + found[i], i
    return text


def _excerpt(document: Document, found: list[str], chosen: list[int]) -> Document:
    text = _excerpt_text(found, chosen)
    return Document(doc_id=document.doc_id, text=text, sha256=sha256_text(text))
