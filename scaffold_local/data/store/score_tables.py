"""A run's scores as files for machines: per-summary metrics (CSV, Parquet) and per-system means (CSV):
over all summaries and paired, with why summaries were left out of each."""

from __future__ import annotations

import csv
import io
import json
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ... import faults
from ...method.metrics import METRICS, SummaryScores, SystemScores
from .scaffolds import atomic_write


def write_tables(run_dir: Path, summaries: Sequence[SummaryScores], systems: Sequence[SystemScores]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {"doc_id": s.doc_id, "system": s.system, "n_sentences": s.n_sentences, **s.values,
         "undefined": json.dumps(s.undefined, ensure_ascii=False), "notes": json.dumps(s.notes, ensure_ascii=False)}
        for s in summaries
    ]
    columns = ["doc_id", "system", "n_sentences", *METRICS, "undefined", "notes"]
    schema = pa.schema([("doc_id", pa.string()), ("system", pa.string()), ("n_sentences", pa.int64()),
                        *[(k, pa.float64()) for k in METRICS], ("undefined", pa.string()), ("notes", pa.string())])
    # Whole or nothing, as every file of a run folder: a temporary file, then a rename (a kill while
    # writing once left a half table under the final name).
    parquet = run_dir / "summaries.parquet"
    tmp = parquet.with_name(f".{parquet.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
    faults.point("write", parquet.name)  # tests kill here: the table written, not yet renamed
    os.replace(tmp, parquet)
    write_csv(run_dir / "summaries.csv", rows, columns)

    system_rows = []
    for s in systems:
        row: dict[str, Any] = {"system": s.system, "n_summaries": s.n_summaries}
        for key, m in s.metrics.items():
            row[key] = m.mean  # over all summaries where defined
            row[f"{key}_n"] = m.n
            row[f"{key}_excluded"] = m.excluded
            row[f"{key}_excluded_reasons"] = json.dumps(m.excluded_reasons, ensure_ascii=False)  # reason -> summaries
            row[f"{key}_paired"] = m.paired_mean  # over the documents every system has a value for
            row[f"{key}_paired_documents"] = m.paired_documents
            row[f"{key}_paired_left_out"] = json.dumps(m.paired_left_out, ensure_ascii=False)
        system_rows.append(row)
    suffixes = ("", "_n", "_excluded", "_excluded_reasons", "_paired", "_paired_documents", "_paired_left_out")
    system_columns = ["system", "n_summaries", *[k + suffix for k in METRICS for suffix in suffixes]]
    write_csv(run_dir / "systems.csv", system_rows, system_columns)


def write_csv(path: Path, rows: Sequence[dict[str, Any]], columns: list[str] | None = None) -> None:
    """Rows as CSV; columns default to every key, in order of first appearance."""
    columns = columns if columns is not None else list(dict.fromkeys(k for row in rows for k in row))
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path, text.getvalue())  # whole or nothing
