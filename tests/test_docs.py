"""The documentation: the MkDocs site in docs/ builds in strict mode (a broken link or anchor, a page left out
of the nav fail it), the README stays short and states its results files' numbers, and the package stands alone: no
text in it points at a folder outside the repository."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 300
OUTSIDE = "../" + "shared"   # spelt in two parts so that this file does not mention it either


def test_the_site_builds_in_strict_mode(tmp_path):
    assert importlib.util.find_spec("mkdocs") is not None, "mkdocs comes with the dev extra: pip install -e '.[dev]'"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    assert "WARNING" not in done.stderr, done.stderr
    pages = [path.relative_to(ROOT / "docs").with_suffix("") for path in (ROOT / "docs").glob("*.md")]
    for page in pages:
        built = site / "index.html" if page.name == "index" else site / page / "index.html"
        assert built.is_file(), f"docs/{page}.md was not built"
    for page in (ROOT / "docs" / "api").glob("*.md"):  # every name a public module exports has its entry
        module = next((line.removeprefix("::: ").strip() for line in page.read_text().splitlines()
                       if line.startswith("::: ")), None)
        if module is None:
            continue
        built = (site / "api" / page.stem / "index.html").read_text(encoding="utf-8")
        exported = importlib.import_module(module)
        missing = [name for name in exported.__all__  # a submodule (scaffold_local.runs) has a page of its own
                   if not name.startswith("_") and not inspect.ismodule(getattr(exported, name))
                   and f'id="{module}.{name}"' not in built]
        assert missing == [], f"docs/api/{page.name} lacks {missing}"


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_nothing_points_outside_the_repository():
    files = [ROOT / "README.md"]
    for folder in ("docs", "scaffold_local", "tests"):
        files += [path for path in (ROOT / folder).rglob("*") if path.is_file() and "__pycache__" not in path.parts]
    offenders = []
    for path in files:
        if path == Path(__file__).resolve():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue   # images, compiled files
        if OUTSIDE in text:
            offenders.append(path.relative_to(ROOT).as_posix())
    assert not offenders, f"these mention {OUTSIDE}: {offenders}; name the folder neutrally (--data <eval-data>)"


def _cell(estimate: dict | None) -> str:
    return "-" if not estimate else f"{estimate['value']:.3f} [{estimate['low95']:.3f}, {estimate['high95']:.3f}]"


def test_the_readmes_validation_table_states_what_its_results_files_hold():
    """The README's numbers against people are its results files', not retyped: each row's sample, judge, word overlap
    and human ceiling as the file holds them (three digits)."""
    results = ROOT / "benchmarks" / "results"
    default = json.loads((results / "default_method_17_all_cpu.json").read_text())
    aggrefact = json.loads((results / "default_method_cpu.json").read_text())
    expected = {name: (len(default["documents"][name]), default["table"][name]["items"], default["table"][name],
                       "version 17") for name in ("REALSumm", "FRANK", "SummEdits")}
    expected["AggreFact"] = (len(aggrefact["documents"]["AggreFact"]), aggrefact["table"]["AggreFact"]["items"],
                             aggrefact["table"]["AggreFact"], "version 15")
    rows = {name: line for line in (ROOT / "README.md").read_text().splitlines() for name in expected
            if line.startswith("| ") and f"({name}" in line}
    assert set(rows) == set(expected)
    for name, (documents, items, row, version) in expected.items():
        cells = [c.strip() for c in rows[name].strip("|").split("|")]
        assert cells[1].startswith(f"{documents} documents, {items} "), (name, cells[1])
        assert cells[2:] == [_cell(row[version]), _cell(row["word overlap"]), _cell(row.get("human ceiling"))], name
