"""llama.cpp on every x86-64 CPU: the build flags chosen from the CPU (AMX always off), and the smoke decode in a
child process that turns an engine dying in native code into an error with a rebuild hint, recorded once it passes."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold_local.backends import llama_cpp_build, llama_cpp_check
from scaffold_local.backends.embedded import locate_gguf
from scaffold_local.backends.llama_cpp_build import LLAMA_CPP_PYTHON, cmake_args, cpu_flags, pip_command, wheel_folder
from scaffold_local.backends.llama_cpp_check import ensure_llama_cpp_runs, record_path
from scaffold_local.cli import app
from scaffold_local.errors import BackendError

ROOT = Path(__file__).resolve().parents[1]
# /proc/cpuinfo's flags line of the two CPUs this project's machines have come with (shortened)
EPYC = ("fpu vme sse sse2 ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand hypervisor bmi1 avx2 "
        "smep bmi2 erms invpcid rdseed adx smap clflushopt clwb sha_ni vaes vpclmulqdq")
SAPPHIRE_RAPIDS = ("fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c bmi1 avx2 bmi2 avx512f avx512dq avx512ifma "
                   "avx512cd sha_ni avx512bw avx512vl avx_vnni avx512_bf16 avx512vbmi avx512_vbmi2 avx512_vnni "
                   "avx512_bitalg avx512_vpopcntdq amx_bf16 avx512_fp16 amx_tile amx_int8")


def _options(args: list[str]) -> dict[str, str]:
    return dict(a.removeprefix("-D").split("=") for a in args)


def test_a_cpu_without_amx_keeps_the_native_build():
    """llama.cpp compiles AMX code only where the CPU has AMX; natively is the fastest (measured in benchmarks/)."""
    flags = cpu_flags(f"processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: {EPYC}\n")
    assert "avx2" in flags and cmake_args(flags, "x86_64") == ["-DLLAVA_BUILD=OFF"]
    assert cmake_args(frozenset({"avx2", "avx512f", "avx512_bf16"}), "x86_64") == ["-DLLAVA_BUILD=OFF"]
    assert cmake_args(frozenset({"neon", "asimd"}), "aarch64") == ["-DLLAVA_BUILD=OFF"]
    assert cmake_args(frozenset(), "x86_64") == ["-DLLAVA_BUILD=OFF"]  # no /proc/cpuinfo: llama.cpp decides


def test_an_intel_cpu_with_amx_gets_its_instruction_sets_named_and_never_amx():
    """The set that ran on the Sapphire Rapids machine where the native build died at the first decode."""
    options = _options(cmake_args(cpu_flags(f"flags\t: {SAPPHIRE_RAPIDS}\n"), "x86_64"))
    assert options["GGML_NATIVE"] == "OFF" and options["LLAVA_BUILD"] == "OFF"
    assert {k for k, v in options.items() if v == "ON"} == {
        "GGML_SSE42", "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2", "GGML_AVX_VNNI",
        "GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI"}
    assert options["GGML_AMX_TILE"] == options["GGML_AMX_INT8"] == options["GGML_AMX_BF16"] == "OFF"
    assert options["GGML_AVX512_BF16"] == "OFF"
    # AVX-512 needs all five subsets ggml compiles it with
    assert _options(cmake_args(frozenset({"avx2", "avx512f", "avx512_vnni", "amx_tile"}), "x86_64"))["GGML_AVX512"] == "OFF"


def test_the_build_pins_the_version_the_extra_installs_and_keeps_one_wheel_per_set_of_flags(tmp_path):
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["llama-cpp"]
    assert extra == [f"llama-cpp-python=={LLAMA_CPP_PYTHON}"]
    amd, intel = (cmake_args(cpu_flags(f"flags: {f}"), "x86_64") for f in (EPYC, SAPPHIRE_RAPIDS))
    assert wheel_folder(amd, tmp_path) != wheel_folder(intel, tmp_path)
    assert wheel_folder(amd, tmp_path) == wheel_folder(list(amd), tmp_path)
    assert pip_command("/venv/bin/python", intel) == (
        f'CMAKE_ARGS="{" ".join(intel)}" /venv/bin/python -m pip install --force-reinstall --no-deps --no-cache-dir '
        f"llama-cpp-python=={LLAMA_CPP_PYTHON}")


def test_the_set_up_runs_the_build_file_before_the_package_is_installed():
    """Standard library only: run without site-packages (-S), it still prints this CPU's flags."""
    done = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "scaffold_local/backends/llama_cpp_build.py"), "args"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == " ".join(cmake_args())


def test_a_kept_wheel_is_installed_without_a_build_and_rebuild_builds_anew(tmp_path, monkeypatch):
    commands: list[list[str]] = []
    monkeypatch.setattr(llama_cpp_build.subprocess, "run", lambda command, **kw: commands.append(command))
    built: list[Path] = []

    def build(python, args, folder):
        built.append(folder)
        return folder / "llama_cpp_python-0.3.36-new.whl"

    monkeypatch.setattr(llama_cpp_build, "build_wheel", build)
    folder = wheel_folder(cmake_args(), tmp_path)
    folder.mkdir(parents=True)
    (folder / "llama_cpp_python-0.3.36-kept.whl").touch()
    assert llama_cpp_build.install("/venv/bin/python", tmp_path).name == "llama_cpp_python-0.3.36-kept.whl"
    assert not built and commands[-1][:3] == ["/venv/bin/python", "-m", "pip"] and commands[-1][-1].endswith("kept.whl")
    assert llama_cpp_build.install("/venv/bin/python", tmp_path, rebuild=True).name.endswith("new.whl")
    assert built == [folder] and commands[-1][-1].endswith("new.whl")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SCAFFOLD_LOCAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SCAFFOLD_LOCAL_ENGINE_LOG", raising=False)
    return tmp_path / "cache"


# A child that dies in native code the way the AMX build did: a read of address 0 (SIGSEGV), after a log line.
SEGFAULT = [sys.executable, "-c", "import ctypes, sys; print('load_tensors: AMX model buffer', file=sys.stderr, "
                                  "flush=True); ctypes.string_at(0)"]


def test_an_engine_that_dies_by_a_signal_is_an_error_naming_it_with_the_rebuild_hint(cache, tmp_path):
    model = tmp_path / "judge.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(BackendError) as caught:
        ensure_llama_cpp_runs(model, 2, child=SEGFAULT)
    message = str(caught.value)
    assert message.startswith("[llama-cpp] llama.cpp (llama-cpp-python ") and "died with SIGSEGV (signal 11)" in message
    assert "judge.gguf" in message and "Nothing was scored" in message
    assert "make rebuild-llama-cpp" in caught.value.hint
    assert f"{sys.executable} -m scaffold_local.backends.llama_cpp_build install --rebuild" in caught.value.hint
    # the child's own log is kept where the message says, and nothing is recorded as passed
    log = Path(message.rsplit("llama.cpp's log: ", 1)[1])
    assert "AMX model buffer" in log.read_text()
    assert not (cache / "engine-checks").exists()


def test_a_smoke_decode_that_hangs_ends_in_an_error(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(llama_cpp_check, "TIMEOUT_S", 0.5)
    model = tmp_path / "judge.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(BackendError, match=r"did not finish in 0 s"):
        ensure_llama_cpp_runs(model, 1, child=[sys.executable, "-c", "import time; time.sleep(30)"])


def test_the_real_engine_passes_once_and_the_record_spares_every_later_run(cache):
    model = locate_gguf("smollm2-135m-instruct")
    check = ensure_llama_cpp_runs(model, 2)
    assert check.fresh and check.threads == 2 and "CPU :" in check.system_info and "AMX_INT8 = 1" not in check.system_info
    assert record_path(llama_cpp_check.check_key(model, 2)).is_file()
    # recorded: a child that would die is never started
    again = ensure_llama_cpp_runs(model, 2, child=SEGFAULT)
    assert not again.fresh and again.system_info == check.system_info and again.passed_at == check.passed_at
    # another thread count is another check
    with pytest.raises(BackendError, match="SIGSEGV"):
        ensure_llama_cpp_runs(model, 1, child=SEGFAULT)


def test_doctor_shows_the_check_and_ends_with_the_error_and_hint_when_the_engine_dies(cache, monkeypatch, wide_console):
    runner = CliRunner()
    shown = runner.invoke(app, ["doctor", "-m", "smollm2-135m-llama-cpp"])
    assert shown.exit_code == 0, shown.output
    assert "llama.cpp built with" in shown.output and "smoke decode" in shown.output and "passed in" in shown.output
    assert "(just now)" in shown.output
    assert "(recorded " in runner.invoke(app, ["doctor", "-m", "smollm2-135m-llama-cpp"]).output

    monkeypatch.setenv("SCAFFOLD_LOCAL_CACHE", str(cache / "elsewhere"))  # nothing recorded there
    monkeypatch.setattr(llama_cpp_check, "_CHILD", "import ctypes; ctypes.string_at(0)")
    died = runner.invoke(app, ["doctor", "-m", "smollm2-135m-llama-cpp"])
    assert died.exit_code == 1
    assert "error: [llama-cpp] llama.cpp (llama-cpp-python" in died.output and "died with SIGSEGV" in died.output
    assert "hint: rebuild llama.cpp for this CPU" in died.output
