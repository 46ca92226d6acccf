"""Prior-free readings (method version 19): a verdict read as the gain of the summary's reading over the same reading
of an empty summary, the item's prior.

A small judge's P(yes) for an item says as much about the item (a plausible claim, a common question) as about the
summary: an edited attribute moves it by a few hundredths. The prior reading asks the same question with nothing to
read; it depends on the item alone, so it is planned with every summary, computed once per item (its cache key is
the same for every summary of the document) and shared. The verdict's confidence becomes
q = sigmoid(logit P - logit P0): the log-odds gain as a probability, 0.5 where the summary adds nothing. Thresholds
on q stay probabilities, so every rule written for P (weighted verdicts, calibration, the config's check) holds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ..method.views import VIEW_SPECS, judgment_kind
from ..records import Record
from .verdicts import join_records

PRIOR = "prior"  # a prior reading's planned task: "prior:<the view's alignment task>"
CLIP = 0.01  # P and P0 are read within [CLIP, 1 - CLIP]: a gain over a prior of 1e-6 is not a million-fold
# Where no threshold is calibrated, an item is kept when the summary at least triples the odds of yes: a gain just
# above none (0.5) is what reading noise gives a summary that does not say the item.
KEPT_GAIN = 0.75


def prior_task(task: str) -> str:
    return f"{PRIOR}:{task}"


def prior_kind(task: str) -> str | None:
    """The view a prior reading's task is about, or None for any other task."""
    purpose, _, rest = task.partition(":")
    return judgment_kind(rest) if purpose == PRIOR and rest else None


def gain(p: float, prior: float) -> float:
    """The log-odds gain of P over its prior, as a probability."""
    def logit(x: float) -> float:
        x = min(max(x, CLIP), 1 - CLIP)
        return math.log(x / (1 - x))
    return 1 / (1 + math.exp(-(logit(p) - logit(prior))))


def corrected(record: Record, prior: Record | None, kind: str) -> Record:
    """A view's joined record with each item's confidence the gain over its prior, and its verdict word whether the
    gain reaches KEPT_GAIN (what counts where no threshold is calibrated). An item whose prior reading failed or is
    missing fails: its verdict would be the prior's, not the summary's."""
    field = VIEW_SPECS[kind].reading.field  # type: ignore[union-attr]  # only views read item by item have priors
    confidence, parsed = dict(record.confidence or {}), dict(record.parsed or {})
    failed = dict(record.failed_items or {})
    priors = (prior.confidence or {}) if prior is not None and prior.parsed is not None else {}
    prior_failed = (prior.failed_items or {}) if prior is not None else {}
    for item, p in list(confidence.items()):
        if item in priors and item not in prior_failed:
            q = round(gain(p, priors[item]), 6)
            confidence[item], parsed[item] = q, {**parsed[item], field: q >= KEPT_GAIN}
        else:
            why = prior_failed.get(item) or (prior.validation_error if prior is not None else None) or "not read"
            failed[item] = f"its prior reading failed: {why}"
            del confidence[item]
            parsed.pop(item, None)
    return record.model_copy(update={"confidence": confidence or None, "parsed": parsed,
                                     "failed_items": failed or None})


def with_priors(joined: Mapping[str, Record], priors: Mapping[str, Iterable[Record]]) -> dict[str, Record]:
    """One summary's records by kind, each view with prior readings corrected by them."""
    out = dict(joined)
    for kind, records in priors.items():
        if kind in out:
            found = list(records)
            out[kind] = corrected(out[kind], join_records(found) if found else None, kind)
    return out
