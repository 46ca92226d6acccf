"""The package's layout, checked against its code: wings that import only downwards, no import circle,
one name per module, and files, classes and functions a reader can take in at once."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "scaffold_local"

# Bottom to top: a module may import from its own wing and the wings below it, never from one above.
WINGS = [
    ("errors", "records", "faults", "provenance"),  # what every layer shares
    ("method",),  # what the method is: versions, schemas, scaffold, views, metrics; no model, no disk
    ("data",),  # where data comes from (inputs, user scaffolds) and where runs go (the store)
    ("backends",),  # the engines behind one batch-first protocol
    ("judging",),  # how a judge is asked and read
    ("runs",),  # a run end to end, and reading it back
    ("analysis", "metaeval"),  # decisions from runs; agreement with people
    ("judge_check",),
    ("report", "evaluation", "integrations", "testing"),  # for people, notebooks and their tests
    ("cli",),
    ("__init__",),
]
WING_OF = {name: level for level, names in enumerate(WINGS) for name in names}


@functools.cache
def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path) -> set[str]:
    """The package's modules this module imports, anywhere in it (lazy and type-checking imports too)."""
    known = modules()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known] or [base]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in known and t != name)
    return out


def wing(module: str) -> int:
    parts = module.split(".")
    return WING_OF["__init__" if len(parts) == 1 else parts[1]]


def test_every_top_level_module_belongs_to_a_wing():
    top = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
           if (p.suffix == ".py" or (p / "__init__.py").is_file()) and p.name != "__pycache__"}
    assert top - set(WING_OF) == set()


def test_the_architecture_page_names_the_wings_in_their_order():
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    sentence = text[text.index("The package is"):text.index("Each wing imports")]
    assert f"{len(WINGS)} wings" in sentence
    positions = [[sentence.index(name) for name in names] for names in WINGS]
    assert positions == sorted(positions), "the page lists the wings out of order"


def test_no_import_points_up_a_wing():
    climbs = [f"{name} -> {target}" for name, path in modules().items() for target in imports(name, path)
              if wing(target) > wing(name)]
    assert climbs == []


FRONT_ENDS = ("cli", "evaluation", "integrations")
# The engine tools check or start an engine and score nothing: `doctor` and `serve`, and the root command that says
# where engines log.
ENGINE_TOOLS = {"scaffold_local.cli.doctor", "scaffold_local.cli.serve", "scaffold_local.cli.app"}


def test_front_ends_set_runs_up_through_the_run_service_alone():
    """A front end builds options and renders: everything it needs of a run (the judge, the input, the set-up, the
    outcome) comes through `runs`; below it, only what every layer shares."""
    below = [f"{name} -> {target}" for name, path in modules().items()
             if name.split(".")[1:2] and name.split(".")[1] in FRONT_ENDS and name not in ENGINE_TOOLS
             for target in imports(name, path) if wing(target) < WING_OF["runs"] and wing(target) > 0]
    assert below == []
    # nor does it take the set-up's steps itself: `runs.plan` / `plan_extraction` fit, describe and note once
    set_up = {"prepare", "document_scaffolds", "extract", "scaffolds_for", "score"}
    by_hand = [f"{name}: .{node.func.attr}()" for name, path in modules().items()
               if name.split(".")[1:2] and name.split(".")[1] in FRONT_ENDS
               for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in set_up
               and isinstance(node.func.value, ast.Name) and node.func.value.id == "pipeline"]
    assert by_hand == []


def test_no_import_circle():
    graph = {name: imports(name, path) for name, path in modules().items()}
    # A package's __init__ re-exporting its own modules is no circle: those edges are left out.
    graph = {n: {t for t in ts if not t.startswith(n + ".")} for n, ts in graph.items()}
    state: dict[str, int] = {}
    circles = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                circles.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif target not in state:
                visit(target, [*trail, target])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == []


def test_no_two_modules_share_a_name():
    names: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            names.setdefault(path.stem, []).append(str(path.relative_to(PACKAGE)))
    for path in PACKAGE.rglob("__init__.py"):  # a package's name counts as a module's
        if path.parent != PACKAGE:
            names.setdefault(path.parent.name, []).append(str(path.parent.relative_to(PACKAGE)) + "/")
    assert {name: where for name, where in names.items() if len(where) > 1} == {}


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's lines from its first statement after the docstring: what a reader follows. A command's signature
    declares its options one to a line, and a docstring is read as prose: neither is counted."""
    body = node.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return node.end_lineno - body[0].lineno + 1


# Design limits: split the module, class or function rather than raise one.
@pytest.mark.parametrize("limit", [("file", 300), ("class", 150), ("function", 40)], ids=lambda x: x[0])
def test_sizes_a_reader_takes_in_at_once(limit):
    kind, most = limit
    too_long = []
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text()
        if kind == "file":
            lines = len(source.splitlines())
            if lines > most:
                too_long.append(f"{path.relative_to(PACKAGE)}: {lines}")
            continue
        for node in ast.walk(ast.parse(source)):
            if kind == "class" and isinstance(node, ast.ClassDef):
                size = node.end_lineno - node.lineno + 1
            elif kind == "function" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = _code_lines(node)
            else:
                continue
            if size > most:
                too_long.append(f"{path.relative_to(PACKAGE)}:{node.name}: {size}")
    assert too_long == []


def test_every_subpackage_states_its_public_names():
    """Each subpackage's `__init__` names what other rooms may use (`__all__`), and each name is there; not
    integrations, whose modules are optional extras imported only when used."""
    import importlib

    for init in sorted(PACKAGE.glob("*/__init__.py")):
        if init.parent.name == "integrations":
            continue
        package = importlib.import_module(f"scaffold_local.{init.parent.name}")
        exported = getattr(package, "__all__", None)
        assert exported, f"{init.parent.name}/__init__.py has no __all__"
        assert [name for name in exported if not hasattr(package, name)] == [], init.parent.name


def test_the_lab_uses_the_packages_public_names():
    """benchmarks/ imports the package's public names (a subpackage's root, `scaffold_local.testing`) and nothing
    below them, except the engine modules of `scaffold_local.backends` that the engine benchmarks measure."""
    deep = []
    for path in sorted((PACKAGE.parent / "benchmarks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scaffold_local."):
                parts = node.module.split(".")
                if len(parts) > 2 and parts[1] != "backends":
                    deep.append(f"{path.name}: {node.module}")
    assert deep == []
