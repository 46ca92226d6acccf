"""The Python examples (```python blocks) of the README and of the documentation pages (docs/*.md) run as
written, with the responder in place of the judge they name: README.md first, then the pages by name.
Fragments that need what a test does not have (an Inspect model) are ```py blocks; what they show is tested
in their own files (test_inspect_scorer.py)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import scaffold_local

from .helpers import RESPONDER_CONFIG

ROOT = Path(__file__).resolve().parents[1]


def example_files() -> list[Path]:
    """README.md, then every documentation page in name order: the order the examples run in."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks_by_file() -> list[tuple[str, str]]:
    """Each distinct block once, where it first appears (a page may repeat the README's)."""
    found: dict[str, str] = {}
    for path in example_files():
        for block in re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S):
            found.setdefault(block, path.relative_to(ROOT).as_posix())
    return [(name, block) for block, name in found.items()]


def python_blocks() -> list[str]:
    return [block for _, block in python_blocks_by_file()]


def test_every_python_example_runs(tmp_path, monkeypatch, capsys):
    blocks = python_blocks_by_file()
    assert any(name == "README.md" for name, _ in blocks), "the README has Python examples"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for name, block in blocks:
        for judge in set(re.findall(r'ModelConfig\.load\("([^"]+)"\)', block)):
            block = block.replace(f'ModelConfig.load("{judge}")', f'ModelConfig.load("{RESPONDER_CONFIG}")')
        for field in ("judge", "model"):  # evaluate(judge=...), runs.JudgeOptions(model=...)
            for judge in set(re.findall(fr'{field}="([^"]+)"', block)):
                block = block.replace(f'{field}="{judge}"', f'{field}="{RESPONDER_CONFIG}"')
        exec(compile(block, name, "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    systems = {line.split()[0] for line in printed[:-1]}
    assert systems == {"concise", "contradicts", "drops-main", "lead-2", "verbose"}
    assert printed[-1] == "2 extracted by this run's judge complete"


def test_the_package_exports_what_the_readme_imports():
    imported = {name.strip() for block in python_blocks()
                for names in re.findall(r"^from scaffold_local import (.+)$", block, re.M) for name in names.split(",")}
    assert imported <= set(scaffold_local.__all__)
    assert all(hasattr(scaffold_local, name) for name in scaffold_local.__all__)
