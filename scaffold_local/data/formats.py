"""The raw records of an input, per format: JSONL, CSV, Parquet and datasets saved on disk. Only a file
that cannot be read at all is an InputError (missing, unknown format, UTF-16/32, an unreadable CSV
header); a bad record is yielded with its problem, for the record reader to report."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError

# (record number, fields or None, problem, line the record starts on where it differs from the number)
RawRecord = tuple[int, dict[str, Any] | None, str | None, int | None]

_UTF16_32_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
                  (b"\xfe\xff", "UTF-16"))
_ENCODING_HINT = "is the file in another encoding, e.g. Latin-1 or Windows-1252? Convert it to UTF-8"


def _check_encoding(path: Path, head: bytes) -> None:
    """A file in UTF-16 or UTF-32 would fail on every line; say so once, for the whole file."""
    for bom, encoding in _UTF16_32_BOMS:
        if head.startswith(bom):
            raise InputError(f"{path} is {encoding} (it starts with a {encoding} byte-order mark); input must be "
                             f"UTF-8: convert it, e.g. `iconv -f {encoding} -t UTF-8`")


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) < len(pairs):
        keys = [k for k, _ in pairs]
        repeated = next(k for k in keys if keys.count(k) > 1)
        raise _RepeatedKey(repeated)
    return value


class _RepeatedKey(ValueError):
    pass


def _looks_like_csv_header(line: str) -> bool:
    """A first line of comma- or tab-separated names: a CSV file saved under .jsonl gives one error per
    line otherwise."""
    stripped = line.strip()
    try:
        cells = next(csv.reader([stripped], dialect="excel-tab" if "\t" in stripped else "excel"), [])
    except csv.Error:  # a line no CSV reader reads (a lone carriage return inside it) is not a CSV header either
        return False
    return (not stripped.startswith(("{", "[", '"{')) and len(cells) >= 2
            and all(cell.strip() and len(cell) <= 64 for cell in cells))


def _jsonl_records(path: Path) -> Iterator[RawRecord]:
    # Decode line by line: one line in another encoding is one bad record, not a failed file.
    with path.open("rb") as handle:
        _check_encoding(path, handle.read(4))
        handle.seek(0)
        seen_json = False  # a CSV header is told apart only before the first JSON line
        for number, raw in enumerate(handle, 1):
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark (Windows editors write one)
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield (number, None, f"line {number} is not valid UTF-8 (byte {raw[exc.start]:#04x} at column "
                                     f"{exc.start + 1}; {_ENCODING_HINT})", None)
                continue
            try:
                value = json.loads(line, object_pairs_hook=_no_repeated_keys)
            except _RepeatedKey as exc:
                yield number, None, f"line {number} has the key {exc.args[0]!r} twice (which value is meant?)", None
                continue
            except json.JSONDecodeError as exc:
                if not seen_json and _looks_like_csv_header(line):
                    raise InputError(f"{path} looks like CSV, not JSON Lines (its first line is "
                                     f"{line.strip()[:80]!r}): rename it to .csv, or write one JSON object per "
                                     "line") from None
                yield number, None, f"line {number} is not valid JSON: {exc.msg} (column {exc.colno})", None
                continue
            except ValueError as exc:  # e.g. an integer longer than Python converts (4300 digits)
                yield number, None, f"line {number} is not valid JSON: {exc}", None
                continue
            except RecursionError:
                yield number, None, f"line {number} is not valid JSON: nested too deeply", None
                continue
            seen_json = True
            if not isinstance(value, dict):
                yield number, None, f"line {number} is a JSON {type(value).__name__}, expected an object", None
                continue
            yield number, value, None, None


# Documents are long: csv's default limit (128 KiB per field) would stop a whole file at one long
# document. 2**31 - 1 is the largest value every platform's csv module accepts.
_CSV_FIELD_LIMIT = 2**31 - 1


def _csv_problem(exc: csv.Error, number: int, first: int, last: int) -> str:
    where = f"row {number} (line {first})" if first == last else f"row {number} (lines {first}-{last})"
    message = str(exc)
    if "unexpected end of data" in message:
        return (f"{where}: a quoted field opened there is never closed: it runs to the end of the file, so the "
                "rows after it are not read (a stray \" in a field? quote the field and double every \" inside it)")
    if "expected after" in message:
        return (f"{where}: a quoted field goes on after its closing quote (a \" inside a quoted field must be "
                "written twice: \"\")")
    return f"{where} is not readable as CSV: {message}"


def _csv_header(path: Path, reader: Any) -> list[str]:
    """The header row, or an InputError where it is unreadable, not UTF-8 or names a column twice."""
    try:
        header: list[str] = next(reader, [])
    except csv.Error as exc:
        raise InputError(f"{path}: the header row is not readable as CSV: {exc}") from None
    bad_header = [i for i, name in enumerate(header, 1) if has_surrogates(name)]
    if bad_header:
        raise InputError(f"{path}: the header row is not valid UTF-8 (column {bad_header[0]}; {_ENCODING_HINT})")
    repeated = sorted({name for name in header if name and header.count(name) > 1})
    if repeated:
        raise InputError(f"{path}: the header names the column {repeated[0]!r} twice "
                         f"(columns {', '.join(str(i) for i, n in enumerate(header, 1) if n == repeated[0])})")
    return header


def _csv_records(path: Path) -> Iterator[RawRecord]:
    data = path.read_bytes()
    _check_encoding(path, data[:4])
    # surrogateescape keeps undecodable bytes as lone surrogates, so each bad field is found and named.
    text = data.decode("utf-8", errors="surrogateescape")
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    # strict: a malformed quote is an error for its row (which the reader then skips), never a silent
    # merge of the following rows into one field.
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    header = _csv_header(path, reader)
    number = 0
    while True:
        first = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # strict mode: the row is skipped, and reading goes on after it
            number += 1
            yield number, None, _csv_problem(exc, number, first, max(first, reader.line_num)), first
            continue
        if not row:  # a blank line
            continue
        number += 1
        line = first if first != number else None
        where = f"row {number}" + (f" (line {first})" if line else "")
        extra = row[len(header):]
        if any(value.strip() for value in extra):  # (empty ones: trailing commas, harmless)
            yield (number, None, f"{where} has {len(row)} fields but the header names {len(header)} "
                                 f"(an unquoted comma?)", line)
            continue
        values = dict(zip(header, row))  # a short row lacks its last columns: named as missing if needed
        bad = [name for name, value in values.items() if has_surrogates(value)]
        if bad:
            yield number, None, f"{where}: field {bad[0]!r} is not valid UTF-8 ({_ENCODING_HINT})", line
            continue
        yield number, values, None, line


def has_surrogates(value: str) -> bool:
    # Lone surrogates: undecodable bytes (surrogateescape) or "\\ud800"-style escapes in JSON.
    return any("\ud800" <= ch <= "\udfff" for ch in value)


def _arrow_records(table: Any) -> Iterator[RawRecord]:
    for number, row in enumerate(table.to_pylist(), 1):
        yield number, row, None, None


def raw_records(path: Path, split: str | None) -> Iterator[RawRecord]:
    if path.is_dir():
        try:
            import datasets  # only needed for datasets saved with save_to_disk
        except ImportError as exc:  # pragma: no cover - datasets is a core dependency
            raise InputError(f"{path} looks like a saved dataset, but `datasets` is not installed") from exc
        try:
            loaded = datasets.load_from_disk(str(path))
        except Exception as exc:  # datasets raises several types for foreign folders
            raise InputError(f"{path} is not a dataset saved with `save_to_disk`: {exc}") from None
        if isinstance(loaded, datasets.DatasetDict):
            names = list(loaded)
            if split is None and len(names) != 1:
                raise InputError(f"{path} has splits {names}; choose one with --split")
            loaded = loaded[split or names[0]]
        elif split is not None:
            raise InputError(f"{path} is a single dataset; --split {split!r} does not apply")
        return _arrow_records(loaded.data.table)
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".ndjson"}:
        return _jsonl_records(path)
    if suffix == ".csv":
        return _csv_records(path)
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return _arrow_records(pq.read_table(path))
    raise InputError(f"{path}: unknown input format {suffix!r} (use .jsonl, .csv, .parquet or a saved dataset folder)")


def fingerprint_path(path: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
