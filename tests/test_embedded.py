"""Embedded judges from PyPI packages: chunks assembled in package order, every file checked against
its pinned SHA-256, and anything else refused before it is loaded. Fake packages written here stand
in for the real ones (no model is loaded)."""

from __future__ import annotations

import hashlib
import importlib
import tomllib
from pathlib import Path

import pytest

from scaffold_local.backends import embedded
from scaffold_local.backends.embedded import EMBEDDED_MODELS, EmbeddedModel, EmbeddedModelError, locate_gguf
from scaffold_local.backends.weights import resolve_model_path

ROOT = Path(__file__).resolve().parents[1]


def _install(site: Path, distribution: str, version: str, files: dict[str, bytes]) -> None:
    """A package as pip leaves it: the module folder and its dist-info (what importlib.metadata reads)."""
    module = site / distribution.replace("-", "_")
    (module / "data").mkdir(parents=True)
    (module / "__init__.py").write_text("")
    for name, content in files.items():
        (module / name).write_bytes(content)
    info = site / f"{distribution.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")


@pytest.fixture
def chunked(tmp_path, monkeypatch):
    """A fake model in 11 chunk packages (part10 and part11 sort before part2 as text: order must come
    from the package list), installed on sys.path, with a cache folder of its own."""
    site = tmp_path / "site"
    chunks = [bytes([i]) * (1000 + i) for i in range(1, 12)]
    names = tuple(f"fake-judge-part{i}" for i in range(1, 12))
    for i, (name, content) in enumerate(zip(names, chunks), 1):
        _install(site, name, "1.0.0", {f"data/part{i:02d}.bin": content})
    whole = b"".join(chunks)
    model = EmbeddedModel("fake-judge", "a fake", names, "1.0.0", hashlib.sha256(whole).hexdigest(), len(whole))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.setitem(EMBEDDED_MODELS, model.name, model)
    monkeypatch.setenv("SCAFFOLD_LOCAL_CACHE", str(tmp_path / "cache"))
    return model, site, whole


def test_chunks_are_assembled_in_package_order_once_and_verified(chunked, monkeypatch):
    model, _, whole = chunked
    path = locate_gguf(model.name)
    assert path.read_bytes() == whole
    assert path.parent == Path(embedded.cache_root()) / "models"
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no staging file left

    def no_second_assembly(*_):
        raise AssertionError("assembled twice")

    monkeypatch.setattr(embedded, "_copy_hashing", no_second_assembly)
    assert locate_gguf(model.name) == path


def test_a_corrupted_chunk_is_refused_naming_the_package_versions(chunked):
    model, site, _ = chunked
    part = site / "fake_judge_part7" / "data" / "part07.bin"
    part.write_bytes(b"\x00" + part.read_bytes()[1:])
    with pytest.raises(EmbeddedModelError) as refused:
        locate_gguf(model.name)
    message = str(refused.value)
    assert "refused" in message and model.sha256 in message and "fake-judge-part7 1.0.0" in message
    assert "not loaded" in message
    cache = embedded.cache_root() / "models"
    assert not list(cache.iterdir())  # neither the bad file nor a staging copy stays behind
    with pytest.raises(EmbeddedModelError):  # the engines' way in refuses it too, before any conversion
        resolve_model_path(f"embedded:{model.name}")


def test_a_cached_file_changed_after_assembly_is_assembled_again(chunked):
    model, _, whole = chunked
    path = locate_gguf(model.name)
    path.write_bytes(whole[:-1])  # size no longer the pinned one
    assert locate_gguf(model.name).read_bytes() == whole


def test_another_version_or_a_missing_chunk_is_refused_with_the_install_line(tmp_path, chunked, monkeypatch):
    model, site, _ = chunked
    info = site / "fake_judge_part3-1.0.0.dist-info" / "METADATA"
    info.write_text(info.read_text().replace("Version: 1.0.0", "Version: 1.0.1"))
    with pytest.raises(EmbeddedModelError, match=r"fake-judge-part3 1\.0\.1 is installed, but only 1\.0\.0"):
        locate_gguf(model.name)
    missing = EmbeddedModel("fake-missing", "", ("fake-judge-part1", "no-such-chunk-part2"), "1.0.0", "0" * 64, 1)
    monkeypatch.setitem(EMBEDDED_MODELS, missing.name, missing)
    with pytest.raises(EmbeddedModelError, match=r"no-such-chunk-part2==1\.0\.0, which is not installed: pip install"):
        locate_gguf(missing.name)


def test_a_single_file_package_is_verified_in_place(tmp_path, monkeypatch):
    content = b"GGUF" + bytes(range(256)) * 8
    _install(tmp_path / "site", "fake-single", "0.3.0", {"model.gguf": content})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    good = EmbeddedModel("fake-single", "", ("fake-single",), "0.3.0", hashlib.sha256(content).hexdigest(),
                         len(content), gguf_file="model.gguf")
    monkeypatch.setitem(EMBEDDED_MODELS, good.name, good)
    assert locate_gguf(good.name).read_bytes() == content
    monkeypatch.setitem(EMBEDDED_MODELS, good.name, EmbeddedModel(
        "fake-single", "", ("fake-single",), "0.3.0", "1" * 64, len(content), gguf_file="model.gguf"))
    with pytest.raises(EmbeddedModelError, match="fake-single 0.3.0"):
        locate_gguf(good.name)


def test_the_set_up_installs_exactly_the_pinned_packages():
    """The extra that installs a chunked judge pins the versions the code verifies, part for part."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for model in EMBEDDED_MODELS.values():
        if model.extra:
            assert sorted(extras[model.extra]) == sorted(f"{d}=={model.version}" for d in model.distributions)
