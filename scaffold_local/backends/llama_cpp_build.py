"""How llama.cpp is built for this machine: natively, except on CPUs with AMX.

llama-cpp-python ships as source and llama.cpp compiles with `-march=native` by default. On Intel Xeons
with AMX (Sapphire Rapids and later) that also builds its AMX kernels: the 4-bit judge is repacked into
AMX buffers and the process dies at the first decode (SIGSEGV natively, SIGILL inside the AMX kernel with
AMX named; AMX instructions themselves run there). There the build names ggml's instruction sets one by
one from /proc/cpuinfo (AVX2, FMA, F16C, BMI2, AVX-512 with VBMI and VNNI, AVX-VNNI), AMX off: its
AVX-512 kernels prefill 1.53x as fast as ggml's portable AVX2 set. Every other CPU keeps the native
build, which has no AMX code where the CPU has no AMX, and which naming the same sets does not beat
(benchmarks/llama_cpp_build.py). The wheel is kept in the cache under a key of the version, the flags
and the CPU: pip's own wheel cache ignores CMAKE_ARGS, so a wheel built with other flags, or natively
for another CPU, is never reused.

Imports nothing outside the standard library: the set-up runs this file before the package is
installed (`python scaffold_local/backends/llama_cpp_build.py install`).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LLAMA_CPP_PYTHON = "0.3.36"  # the pin of the `llama-cpp` extra in pyproject.toml (a test keeps them equal)
# Without the multimodal library (mtmd) the backend never loads; it also halves the build.
BASE_ARGS = ("-DLLAVA_BUILD=OFF",)

# ggml's x86 options and the /proc/cpuinfo flags each needs (all of them), named where the CPU has AMX.
# AVX512_BF16 stays off there with AMX: it serves bf16 weights, which the GGUF judges do not have.
_X86_OPTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GGML_SSE42", ("sse4_2",)),
    ("GGML_AVX", ("avx",)),
    ("GGML_AVX2", ("avx2",)),
    ("GGML_FMA", ("fma",)),
    ("GGML_F16C", ("f16c",)),
    ("GGML_BMI2", ("bmi2",)),
    ("GGML_AVX_VNNI", ("avx_vnni",)),
    # ggml compiles its AVX-512 path with -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw
    ("GGML_AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    ("GGML_AVX512_VBMI", ("avx512f", "avx512vbmi")),
    ("GGML_AVX512_VNNI", ("avx512f", "avx512_vnni")),
)
_ALWAYS_OFF = ("GGML_AVX512_BF16", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")
AMX_FLAGS = frozenset({"amx_tile", "amx_int8", "amx_bf16"})


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The flags the kernel reports for this CPU (empty where there is no /proc/cpuinfo)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            # older kernels spell avx512_vbmi as avx512vbmi: accept both
            return frozenset(f.replace("avx512_vbmi", "avx512vbmi") for f in value.split())
    return frozenset()


def cpu_model(cpuinfo: str | None = None) -> str:
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return platform.processor() or platform.machine()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return platform.machine()


def cmake_args(flags: frozenset[str] | None = None, machine: str | None = None) -> list[str]:
    """CMAKE_ARGS for llama.cpp on this CPU: the native build, or on an x86 CPU with AMX, the instruction sets
    named from the CPU's flags with AMX off."""
    machine = machine or platform.machine()
    flags = cpu_flags() if flags is None else flags
    if machine.lower() not in ("x86_64", "amd64") or not flags & AMX_FLAGS:
        return list(BASE_ARGS)
    return named_instruction_sets(flags)


def named_instruction_sets(flags: frozenset[str]) -> list[str]:
    """CMAKE_ARGS of a build that compiles the x86 instruction sets the CPU has, one by one, and never AMX."""
    args = [*BASE_ARGS, "-DGGML_NATIVE=OFF"]
    args += [f"-D{option}={'ON' if set(needs) <= flags else 'OFF'}" for option, needs in _X86_OPTIONS]
    return args + [f"-D{option}=OFF" for option in _ALWAYS_OFF]


def pip_command(python: str = "python", args: list[str] | None = None) -> str:
    """The line that rebuilds llama-cpp-python for this CPU, for a person to run."""
    return (f'CMAKE_ARGS="{" ".join(cmake_args() if args is None else args)}" {python} -m pip install '
            f"--force-reinstall --no-deps --no-cache-dir llama-cpp-python=={LLAMA_CPP_PYTHON}")


def wheel_folder(args: list[str], cache: Path) -> Path:
    """Where the wheel built with these flags on this CPU is kept (a native build runs on the CPU it was built
    on: the CPU is part of the key)."""
    parts = [LLAMA_CPP_PYTHON, *args, cpu_model(), " ".join(sorted(cpu_flags()))]
    return cache / "llama-cpp-wheels" / f"{LLAMA_CPP_PYTHON}-{hashlib.sha256(chr(10).join(parts).encode()).hexdigest()[:16]}"


def build_wheel(python: str, args: list[str], folder: Path) -> Path:
    """llama-cpp-python built from source with these CMAKE_ARGS into `folder` (emptied first)."""
    print(f"building llama.cpp (llama-cpp-python {LLAMA_CPP_PYTHON}) for {cpu_model()}: about 5 minutes on 2 cores, "
          f"once\n  CMAKE_ARGS={' '.join(args)}", flush=True)
    env = {**os.environ, "CMAKE_ARGS": " ".join(args)}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([python, "-m", "pip", "wheel", "--disable-pip-version-check", "-q", "--no-deps",
                        "--no-cache-dir", "--no-binary", "llama-cpp-python", "-w", scratch,
                        f"llama-cpp-python=={LLAMA_CPP_PYTHON}"], env=env, check=True)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for built in Path(scratch).glob("llama_cpp_python-*.whl"):
            shutil.move(str(built), folder / built.name)
    (folder / "CMAKE_ARGS").write_text(" ".join(args) + "\n")
    return sorted(folder.glob("llama_cpp_python-*.whl"))[-1]


def install(python: str, cache: Path, rebuild: bool = False) -> Path:
    """The wheel for this CPU, built once (kept in `cache`; again when `rebuild`), installed into `python`'s
    environment."""
    args = cmake_args()
    folder = wheel_folder(args, cache)
    wheels = [] if rebuild else sorted(folder.glob("llama_cpp_python-*.whl"))
    wheel = wheels[-1] if wheels else build_wheel(python, args, folder)
    subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps",
                    "--force-reinstall", str(wheel)], check=True)
    return wheel


def _cache() -> Path:  # embedded.cache_root(), repeated here: this file runs before the package is installed
    return Path(os.environ.get("SCAFFOLD_LOCAL_CACHE", Path.home() / ".cache" / "scaffold_local"))


if __name__ == "__main__":
    command = sys.argv[1:]
    if command in (["install"], ["install", "--rebuild"]):
        install(sys.executable, _cache(), rebuild="--rebuild" in command)
    elif command in ([], ["args"]):
        print(" ".join(cmake_args()))
    else:
        sys.exit(f"usage: python {sys.argv[0]} [args | install [--rebuild]]   (install: into this Python's environment)")
