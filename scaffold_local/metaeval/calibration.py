"""A judge's decision thresholds from the dev halves of human-labelled data: the threshold on P that agrees best
with people, per kind of judgment that has labels, written as a model config that extends the judge's.

- facts: REALSumm's key facts (is the fact in the summary?); questions and entity attributes take it, having no
  labels of their own here (under a version that reads them, each is a claim of the document the summary keeps
  or not, asked in the same prompt family);
- faithfulness: FRANK's summary sentences (is the sentence supported?);
- main (a version that reads main points): REALSumm's extracted facts (does the fact match a key fact of people's?).
Each threshold is the balanced-accuracy optimum over every dev item (`agreement.calibration`'s `threshold_all`);
how it does on documents it was not chosen on (chosen on half the documents, measured on the other half) is said
beside it. Only dev documents are read: test documents stay for checking."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from ..errors import UsageError
from ..runs.pipeline import Pipeline
from .tasks import run_task

DEV = "dev"


@dataclass(frozen=True)
class Calibrated:
    """One kind's threshold, and what it rests on."""

    kind: str
    threshold: float
    task: str
    documents: int
    items: int
    auroc: float | None
    held_out_balanced_accuracy: float | None

    def describe(self) -> str:
        auroc = "undefined" if self.auroc is None else f"{self.auroc:.3f}"
        held = "undefined" if self.held_out_balanced_accuracy is None else f"{self.held_out_balanced_accuracy:.3f}"
        return (f"{self.kind} {self.threshold:.3f}: {self.task} {DEV} half, {self.documents} documents, {self.items} "
                f"items with P; AUROC {auroc}; balanced accuracy {held} on half the documents at the other half's "
                "threshold")


# kind -> the meta-evaluation task whose dev half calibrates it, and the documents drawn by default
CALIBRATED_BY = {"facts": ("realsumm-alignment", 20), "faithfulness": ("frank", 40), "main": ("realsumm-importance", 20)}
SHARES = {"questions": "facts", "entities": "facts"}  # kinds without labels of their own, and whose threshold they take


def calibrate(pipeline: Pipeline, data: Path, documents: dict[str, int] | None = None, per_document: int | None = 5,
              seed: int = 0) -> list[Calibrated]:
    """Each kind's threshold for the pipeline's judge and method version, from the dev halves of `data`."""
    if not pipeline.method.reads("facts") or not pipeline.method.reads("faithfulness"):
        raise UsageError(f"method version {pipeline.method.number} does not read its fact and sentence verdicts: "
                         "there is no P to calibrate a threshold on", hint="calibrate a version that reads them (15)")
    found = []
    for kind, (task, default) in CALIBRATED_BY.items():
        if kind == "main" and not pipeline.method.reads_main:  # a version that writes its labels has no P(main)
            continue
        limit = (documents or {}).get(kind, default)
        result = run_task(pipeline, task, data, limit=limit, split=DEV, seed=seed,
                          per_document=per_document if task.startswith("realsumm") else None)
        row = (result.tables.get("confidence") or [{}])[0]
        if row.get("threshold_all_documents") is None:
            why = (f"its {row['items']} items with P hold one human label only" if row else
                   f"none of its {result.items} items has P ({result.failed} failed)")
            raise UsageError(f"{task} on {result.documents} {DEV} documents cannot calibrate {kind}: {why}",
                             hint="draw more documents")
        found.append(Calibrated(kind, round(float(row["threshold_all_documents"]), 3), task, result.documents,
                                row["items"], row.get("auroc"), row.get("held_out_balanced_accuracy")))
    return found


def thresholds_of(found: list[Calibrated]) -> dict[str, float]:
    """A config's `[thresholds.N]` table: the calibrated kinds, and the kinds that share one."""
    table = {c.kind: c.threshold for c in found}
    return table | {kind: table[like] for kind, like in SHARES.items()}


def config_text(judge: str, method: int, found: list[Calibrated]) -> str:
    """A model config extending `judge` with the thresholds, each kind's evidence in a comment above it."""
    lines = [f"# {judge} under method version {method}: thresholds calibrated on dev halves by `scaffold-local "
             f"calibrate` ({date.today().isoformat()}).",
             *(f"# {c.describe()}" for c in found),
             f"# {', '.join(SHARES)}: the facts' threshold (no labels of their own).",
             f'extends = "{judge}"', f"method_version = {method}", "", f"[thresholds.{method}]"]
    lines += [f"{kind} = {value}" for kind, value in thresholds_of(found).items()]
    return "\n".join(lines) + "\n"


def write_config(path: Path, judge: str, method: int, found: list[Calibrated]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config_text(judge, method, found), encoding="utf-8")
    return path
