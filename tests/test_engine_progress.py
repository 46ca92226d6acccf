"""Long engine calls are never silent: backends that can report steps reach the progress display
through the dispatcher, and a transformers row caught in a loop is stopped and recorded as such."""

from __future__ import annotations

import contextlib

from scaffold_local.backends.protocol import Result
from scaffold_local.backends.responder import ResponderBackend
from scaffold_local.backends.transformers_decoding import REPETITION_TIMES, close_after_last_item, repetition
from scaffold_local.data.loading import load_input
from scaffold_local.runs.pipeline import Pipeline


def test_a_block_repeated_at_the_end_of_an_output_is_a_loop():
    fact = [11, 12, 13, 14, 15, 16]  # one item of six tokens
    looping = [1, 2, 3] + fact * REPETITION_TIMES
    found = repetition(looping)
    assert found is not None and found.period == 6 and found.stopped_at == len(looping)
    assert repetition([1, 2, 3] + fact * (REPETITION_TIMES - 1)) is None  # once fewer: not yet
    # Items that share keys and punctuation but differ anywhere are not a loop.
    varied = [t for n in range(8) for t in (7, 8, 100 + n, 9, 10, 11)]
    assert repetition(varied) is None
    assert repetition([5, 5, 5, 5, 5, 5, 5, 5]) is None  # periods below 4 tokens are not checked
    assert repetition([]) is None


def test_a_looping_output_is_closed_after_its_last_complete_item():
    looped = '{"facts": [{"fact": "a ]} \\" quoted", "label": "main point"}, {"fact": "b", "label": "other"}, {"fact": "b'
    assert close_after_last_item(looped) == (
        '{"facts": [{"fact": "a ]} \\" quoted", "label": "main point"}, {"fact": "b", "label": "other"}]}')
    nested = '{"entities": [{"name": "A", "attributes": [{"key": "k", "value": "1"}, {"key": "k", "va'
    assert close_after_last_item(nested) == '{"entities": [{"name": "A", "attributes": [{"key": "k", "value": "1"}]}]}'
    assert close_after_last_item('{"facts": [{"fact": "a') is None  # no item finished: nothing to keep
    assert close_after_last_item('}') is None


class SteppingResponder(ResponderBackend):
    """The responder, reporting three decoding steps per call as the transformers engine does."""

    reports_steps = True

    def generate(self, requests):
        for step in (1, 2, 3):
            if self.on_step is not None:
                self.on_step(step - 1, len(requests), step * 10, 30)
        return super().generate(requests)


def test_engine_steps_show_in_the_progress_detail_and_clear_after_the_call(responder_config, small_input, tmp_path):
    shown: list[tuple[int, str]] = []

    @contextlib.contextmanager
    def progress(label, total):
        yield lambda n, detail="": shown.append((n, detail))

    pipeline = Pipeline(responder_config, tmp_path / "store", backend_factory=SteppingResponder, progress=progress)
    pipeline.score(load_input(small_input))
    details = [d for n, d in shown if d]
    assert details and all(n == 0 for n, d in shown if d)
    assert details[-1].startswith("engine call: 2/") and details[-1].endswith("30 tokens of at most 30")
    assert shown[-1][1] == "" and shown[-1][0] > 0  # the batch's advance clears the detail


def test_a_stopped_loop_is_a_validation_failure_with_its_raw_text(responder_config, small_input, tmp_path):
    class Looping(ResponderBackend):
        def generate(self, requests):
            return [Result(id=r.id, text='{"facts":[{"text":"x"},{"text":"x"}', finish_reason="error",
                           error="degenerate output stopped after 64 tokens: the same 8-token block 4 times in a row",
                           failure="validation") if r.id.endswith("/facts") and "/extract/" not in r.id else result
                    for r, result in zip(requests, super().generate(requests))]

    outcome = Pipeline(responder_config, tmp_path / "store", backend_factory=Looping).score(load_input(small_input))
    assert outcome.failures.get("validation") and not outcome.engine_errors
    from scaffold_local import runs

    record = runs.load(outcome.run_dir).records_for("factory", "details")["facts"]
    assert record.failure == "validation" and "degenerate" in record.error and record.text.startswith('{"facts"')
