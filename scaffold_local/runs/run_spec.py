"""What a run folder says of its run: the spec (the run's identity, the input, judge, prompts, schemas and scaffold
source, and its provenance) and each summary's row."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..data.inputs import Candidate, LoadedInput
from ..data.store.run_folder import now
from ..judging.judge import Judge
from ..method.schemas import json_schema, schema_sha256
from ..method.views import direct_score, labelling
from ..provenance import package_versions, platform_info
from ..records import RunSpec, ScaffoldSource
from .sources import ScaffoldSet


def run_spec(judge: Judge, source: ScaffoldSource, loaded: LoadedInput, command: Sequence[str] | None,
             weighted_verdicts: bool = False) -> RunSpec:
    """What the run is: its identity (input, judge, prompts, schemas, scaffold source) and provenance."""
    config = judge.config
    limits = config.limits
    if loaded.chunks:
        judge.template(labelling.TASK)  # its prompt is part of the run
    static_schemas = {spec.extract_task: schema_sha256(json_schema(spec.extraction_model(limits, judge.method)))
                      for spec in judge.views.values()}
    static_schemas[direct_score.TASK] = schema_sha256(json_schema(direct_score.direct_score_model(limits, judge.method)))
    spec = RunSpec(
        input={"source": loaded.source, "fingerprint": loaded.fingerprint,
               "fields": loaded.fields.model_dump(), "split": loaded.split},
        judge=config.model_dump(),
        judge_fingerprint=judge.fingerprint,
        method=judge.method.describe(),
        prompts={task: {"ref": p.ref, "sha256": p.sha256} for task, p in sorted(judge.prompts.items())},
        schemas={"version": str(judge.method.number), "static_sha256": static_schemas,
                 "per_request": "alignment schemas are built per scaffold; each record holds its schema_sha256"},
        scaffold_source=source,
        weighted_verdicts=weighted_verdicts,
        decision_threshold=None if weighted_verdicts else judge.decision_threshold,
        # the thresholds of the kinds it reads (versions 3-6 and 9 decide facts and questions by decision_threshold)
        thresholds={} if weighted_verdicts else {k: v for k, v in judge.thresholds.items() if judge.method.reads(k)},
        created_at=now(),
        command=list(command) if command is not None else sys.argv,
        counts={"documents": len(loaded.documents), "candidates": len(loaded.candidates),
                "input_issues": len(loaded.issues), **({"groups": len(loaded.groups)} if loaded.groups else {}),
                **({"chunked_documents": len(loaded.chunks)} if loaded.chunks else {})},
        versions=package_versions(),
        platform=platform_info(),
    )
    stem = Path(loaded.source).stem or "input"
    return spec.model_copy(update={"run_id": f"{stem}-{config.name}-{spec.identity_hash()[:8]}"})


def candidate_rows(judge: Judge, candidates: list[Candidate], scaffolds: ScaffoldSet, failed: dict[str, str],
                    groups: dict[str, tuple[str, ...]]) -> list[dict[str, Any]]:
    return [
        {"record": c.record, "doc_id": c.doc_id, "system": c.system, "summary": c.summary,
         "sentences": judge.sentences(c.summary), "references": list(c.references),
         "scaffold_key": scaffolds.scaffolds[c.doc_id].key if c.doc_id in scaffolds.scaffolds else None,
         "failed": failed.get(c.key), **({"members": list(groups[c.doc_id])} if c.doc_id in groups else {})}
        for c in candidates
    ]
