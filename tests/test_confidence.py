"""Verdict confidence: P(kept) read from hand-made token alternatives in the shapes the engines give
(SmolLM2's and Qwen2.5's tokenizations of each method version's verdicts, merged tokens, before and
after a grammar's mask), and where it is offered as a confidence at all."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from scaffold_local.backends.protocol import TokenAlternatives
from scaffold_local.cli import app
from scaffold_local.data.loading import load_input
from scaffold_local.judging.confidence import verdict_confidence
from scaffold_local.judging.config import ModelConfig
from scaffold_local.method.versions import method_version
from scaffold_local.runs.pipeline import Pipeline

from .helpers import RESPONDER_CONFIG


def tokens(*pieces: tuple[str, dict[str, float]] | str) -> list[TokenAlternatives]:
    """Tokens from (text, {alternative: probability}); a bare text is a token reported without alternatives."""
    out = []
    for piece in pieces:
        text, top = (piece, {}) if isinstance(piece, str) else piece
        out.append(TokenAlternatives(text=text, top={a: math.log(p) if p > 0 else -math.inf for a, p in top.items()}))
    return out


def text_of(pieces: list[TokenAlternatives]) -> str:
    return "".join(t.text for t in pieces)


def test_evidence_first_reads_the_first_character_of_the_cited_list():
    """Method v3, SmolLM2's tokens (`":`, `[`, then an id or `]`): kept is a sentence id, never one
    starting with 0 (the schema's ids start at 1), not kept is `]`; other alternatives say nothing."""
    pieces = tokens('{"F1":{"ids', ('":', {'":': 0.98, '"': 0.01, '":"': 0.01}), ("[", {"[": 0.9, "[[": 0.1}),
                    ("2", {"2": 0.5, "1": 0.2, "]": 0.2, "0": 0.05, '"': 0.05}),
                    '],"why":"x"},"F2":{"ids":', ("[", {"[": 1.0}), ("]", {"]": 0.6, "1": 0.3, "]}": 0.1}), "}}")
    text = text_of(pieces)
    assert text == '{"F1":{"ids":[2],"why":"x"},"F2":{"ids":[]}}'
    assert verdict_confidence(text, pieces, "inferred", evidence_decides=True) == pytest.approx(
        {"F1": 0.7 / 0.9, "F2": 0.3 / 1.0})


def test_verdict_first_reads_the_word_and_only_words_that_spell_it():
    """Method v4/v5 (`{"F3": {"inferred": true, ...}}`, Qwen2.5's tokens `":` and ` true`): " the" and
    " to" begin with t and f but are not the words, and "true" without the space the output wrote is
    another text, not this decision."""
    pieces = tokens('{"F3": {"inferred', ('":', {'":': 0.99, '":"': 0.01}),
                    (" true", {" true": 0.5, " tr": 0.1, " false": 0.2, " the": 0.1, " to": 0.05, "true": 0.05}),
                    ', "sentence_ids": [1], "justification": "The summary says so."}}')
    text = text_of(pieces)
    assert verdict_confidence(text, pieces, "inferred", evidence_decides=False) == pytest.approx({"F3": 0.6 / 0.8})
    one_item = tokens('{"Q2":{"answered', ('":', {'":': 1.0}), ("false", {"false": 0.7, "fa": 0.1, "true": 0.2}),
                      ',"sentence_ids":[],"justification":"-"}}')
    assert verdict_confidence(text_of(one_item), one_item, "answered", evidence_decides=False) == pytest.approx(
        {"Q2": 0.2 / 1.0})


def test_a_merged_bracket_one_token_earlier_decides_not_kept():
    """SmolLM2 and Qwen2.5 write ` []` as one token but ` [` then an id: at ` [` the alternative ` []`
    already decided "not kept", one token before the id. P(kept) = P(` [`) x P(id | ` [`)."""
    kept_path = tokens('{"F1": {"ids', ('":', {'":': 1.0}), (" [", {" [": 0.6, " []": 0.3, " [],": 0.1}),
                       ("1", {"1": 0.9, "]": 0.1}), '], "why": "x"}}')
    assert verdict_confidence(text_of(kept_path), kept_path, "inferred", evidence_decides=True) == pytest.approx(
        {"F1": 0.6 * 0.9})
    # The merged token taken: the decision falls inside it (` [` is the part before it).
    dropped_path = tokens('{"F1": {"ids', ('":', {'":': 1.0}), (" []", {" []": 0.9, " [1": 0.09, " [": 0.01}), "}}")
    assert verdict_confidence(text_of(dropped_path), dropped_path, "inferred", evidence_decides=True) == pytest.approx(
        {"F1": 0.09 / 0.99})


def test_an_alternative_that_ends_at_the_decision_prefix_leaves_it_unread():
    """Qwen2.5 compact: `":[` then an id, but `":` then `[]`. An alternative that stops exactly before
    the deciding character (or short of it) decides on a later token that was never generated: when it
    holds enough probability to move P(kept) by more than 0.05, no P(kept) is offered for the item;
    when it holds little, P(kept) is offered."""
    ambiguous = tokens('{"F1":{"ids', ('":[', {'":[': 0.6, '":': 0.4}), ("2", {"2": 0.9, "]": 0.1}),
                       '],"why":"x"},"F2":{"ids', ('":', {'":': 0.7, '":[': 0.3}), ("[]", {"[]": 0.95, "[": 0.05}), "}}")
    assert verdict_confidence(text_of(ambiguous), ambiguous, "inferred", evidence_decides=True) == {}
    clear = tokens('{"F1":{"ids', ('":[', {'":[': 0.99, '":': 0.01}), ("2", {"2": 0.9, "]": 0.1}), '],"why":"x"}}')
    assert verdict_confidence(text_of(clear), clear, "inferred", evidence_decides=True) == pytest.approx({"F1": 0.9})


def test_alternatives_after_the_grammar_mask_give_what_they_give_before_it():
    """transformers and llama.cpp report the model's alternatives before the grammar's mask, vLLM after
    it (the allowed ones renormalised, the rest at -inf). Both decisions are allowed where the judge
    decides, and the reading counts only alternatives that write the output's own text up to the
    deciding character: the mask's renormalisation cancels and the forbidden ones were not counted."""
    before_mask = {'":': 0.6, '": ': 0.3, '":"': 0.08, '"': 0.02}
    word_before = {"true": 0.3, "tr": 0.1, "t": 0.05, "false": 0.1, " true": 0.2, "the": 0.1, "null": 0.15}

    def after_mask(alternatives: dict[str, float], allowed: set[str]) -> dict[str, float]:
        total = sum(p for a, p in alternatives.items() if a in allowed)
        return {a: p / total if a in allowed else 0.0 for a, p in alternatives.items()}

    def read(colon: dict[str, float], word: dict[str, float]) -> dict[str, float]:
        pieces = tokens('{"F3":{"inferred', ('":', colon), ("true", word), ',"sentence_ids":[1],"justification":"x"}}')
        return verdict_confidence(text_of(pieces), pieces, "inferred", evidence_decides=False)

    raw = read(before_mask, word_before)
    masked = read(after_mask(before_mask, {'":', '"'}), after_mask(word_before, {"true", "tr", "t", "false"}))
    assert raw == pytest.approx({"F3": 0.45 / 0.55}) and masked == pytest.approx(raw)


def test_a_side_missing_from_the_alternatives_counts_at_the_least_likely_one_and_a_forced_word_is_no_decision():
    confident = tokens('{"F1":{"inferred', ('":', {'":': 1.0}), ("true", {"true": 0.97, "tr": 0.02, "ok": 0.01}), "}}")
    assert verdict_confidence(text_of(confident), confident, "inferred", evidence_decides=False) == pytest.approx(
        {"F1": 0.99 / 1.0})
    # A word the grammar forces (vLLM: the other at -inf) has no other side: nothing is offered.
    forced = tokens('{"F1":{"sentence_ids":[2],"inferred', ('":', {'":': 1.0}), ("true", {"true": 1.0, "false": 0.0}),
                    "}}")
    assert verdict_confidence(text_of(forced), forced, "inferred", evidence_decides=False) == {}


def test_version_2_reads_after_the_justification_and_says_it_is_not_a_confidence():
    """Version 2 decides at the cited list, after a justification that already states the verdict:
    the number is still read the same way, but it is never offered as a confidence."""
    pieces = tokens('{"F1":{"justification":"The summary says the factory opened.","sentence_ids',
                    ('":', {'":': 1.0}), ("[", {"[": 1.0}), ("2", {"2": 0.99, "]": 0.01}), '],"inferred":true}}')
    assert verdict_confidence(text_of(pieces), pieces, "inferred", evidence_decides=True) == pytest.approx({"F1": 0.99})
    assert all(method_version(n).not_a_confidence for n in (1, 2))
    assert not any(method_version(n).not_a_confidence for n in (3, 4, 5))
    assert "not the judge's confidence" in method_version(2).not_a_confidence


def test_weights_and_thresholds_need_a_version_that_decides_before_its_justification(responder_config, small_input,
                                                                                     tmp_path):
    with pytest.raises(ValueError, match="method version 2.*not the judge's confidence"):
        Pipeline(responder_config, tmp_path / "store", method=2, weighted_verdicts=True)
    fields = {**responder_config.model_dump(), "verdict_confidence": True, "decision_threshold": 0.5}
    with pytest.raises(ValueError, match="method version 2.*not the judge's confidence"):
        ModelConfig.model_validate({**fields, "method_version": 2})
    # the one threshold of earlier configs reads as facts' and questions' under their method version
    assert ModelConfig.model_validate({**fields, "method_version": 5}).thresholds == {5: {"facts": 0.5, "questions": 0.5}}
    with pytest.raises(ValueError, match="need verdict_confidence"):
        ModelConfig.model_validate({**fields, "verdict_confidence": False, "method_version": 5})
    with pytest.raises(ValueError, match="unknown kind sentences"):
        ModelConfig.model_validate({**responder_config.model_dump(), "thresholds": {7: {"sentences": 0.5}}})
    # method version 7 reads its verdicts: its thresholds need no token probabilities of written verdicts
    assert ModelConfig.model_validate({**responder_config.model_dump(), "thresholds": {7: {"faithfulness": 0.4}}})


def test_check_judge_and_meta_eval_say_p_kept_is_not_a_confidence_under_version_2(tmp_path):
    from scaffold_local.metaeval.realsumm import AlignmentItems, _alignment_result

    store = tmp_path / "store"
    result = CliRunner().invoke(app, ["check-judge", "-m", str(RESPONDER_CONFIG), "--store", str(store),
                                      "--method-version", "2", "--verdict-confidence"], terminal_width=250)
    assert result.exit_code == 0, result.output
    assert "not the judge's confidence" in " ".join(result.output.split())
    items = AlignmentItems(p_kept_note=method_version(2).not_a_confidence)
    items.add({"keyfacts": ["a", "b"]}, {"system": "s", "summary": "a",
                                         "human": {"scu_presence": [1, 0], "litepyramid_recall": 0.5,
                                                   "scu_presence_per_annotator": [[1, 0], [1, 0], [1, 0]]}},
              "d", [1, 0], {"F1": 0.9, "F2": 0.2})
    summary = _alignment_result("judge", 1, items, 0)
    line = next(s for s in summary.summary if "AUROC" in s)
    assert "not a confidence" in line and "decision_threshold" not in line
    assert "not a confidence" in summary.tables["confidence"][0]["p_kept"]


def test_the_responder_confidence_still_sides_with_its_verdicts(responder_config, small_input, tmp_path):
    """The test double's alternatives (backends/responder.py) read the same under the new rule."""
    from scaffold_local import runs

    outcome = Pipeline(responder_config, tmp_path / "store", method=4, weighted_verdicts=True).score(
        load_input(small_input))
    facts = runs.load(outcome.run_dir).records_for("factory", "details")["facts"]
    assert facts.confidence is not None and set(facts.confidence) == set(facts.parsed)
    for item, verdict in facts.parsed.items():
        assert (facts.confidence[item] >= 0.5) == verdict["inferred"]
