"""llama.cpp builds side by side on the CPU judge, in one invocation: the set-up's build for this CPU against
llama.cpp's native build (`-march=native`, the set-up's on CPUs without AMX), the instruction sets named one by
one with AMX off (the set-up's on CPUs with AMX), ggml's portable AVX2 set and, on a CPU with AMX, the named
sets with AMX on: which kernels pay, and which build dies.

    .venv/bin/python benchmarks/llama_cpp_build.py [--wheel native=PATH ...] [--rounds 9]
                                                   [--out benchmarks/results/llama_cpp_build_<vendor>]

A build given no --wheel (a wheel, or a folder holding one) is compiled here first (about 4 min each on 2
cores; kept in the cache). Each build is installed into its own folder and measured in a child process of
its own, the builds taking turns round after round so that the machine's drift falls on all of them:
prefill of a 512-token prompt and 64 decode steps of one sequence (tokens/s), the median over rounds, and
each round's ratio to the set-up's build measured in the same round. A build whose child dies is tried once
and reported with its signal. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scaffold_local.backends.embedded import cache_root  # noqa: E402
from scaffold_local.backends.llama_cpp_build import (  # noqa: E402
    AMX_FLAGS,
    BASE_ARGS,
    build_wheel,
    cmake_args,
    cpu_flags,
    cpu_model,
    named_instruction_sets,
    wheel_folder,
)
from scaffold_local.backends.llama_cpp_model import gguf_path  # noqa: E402

# ggml's portable x86-64 set, which -DGGML_NATIVE=OFF alone compiles: any CPU with AVX2 runs it
PORTABLE = frozenset({"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"})


def builds(flags: frozenset[str]) -> dict[str, list[str]]:
    """The builds worth comparing on a CPU with these flags (duplicates left out)."""
    named = named_instruction_sets(flags)
    candidates = {"native": list(BASE_ARGS), "named": named, "portable AVX2": named_instruction_sets(flags & PORTABLE)}
    if flags & AMX_FLAGS:
        amx_on = {"-DGGML_AVX512_BF16=OFF": "-DGGML_AVX512_BF16=ON"} if "avx512_bf16" in flags else {}
        amx_on |= {f"-D{o}=OFF": f"-D{o}=ON" for o in ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")}
        candidates["named, AMX on"] = [amx_on.get(a, a) for a in named]
    out: dict[str, list[str]] = {}
    for name, args in candidates.items():
        if args not in out.values():
            out[name] = args
    return out


# One round in a child: the build's own llama_cpp on sys.path, nothing else of this venv's changes.
_CHILD = r"""
import json, sys, time
import llama_cpp
path, threads, prompt_tokens, decode_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
llm = llama_cpp.Llama(model_path=path, n_ctx=2048, n_batch=512, n_threads=threads, verbose=False)
text = " ".join(["The committee approved the new budget after a long debate about schools and roads."] * 64)
tokens = llm.tokenize(text.encode())[:prompt_tokens]
start = time.perf_counter(); llm.eval(tokens); prefill = time.perf_counter() - start
start = time.perf_counter()
for token in tokens[:decode_tokens]:  # one token per step; which tokens does not change the cost
    llm.eval([token])
decode = time.perf_counter() - start
print(json.dumps({"prefill_tok_s": len(tokens) / prefill, "decode_tok_s": decode_tokens / decode,
                  "system_info": llama_cpp.llama_print_system_info().decode().strip(),
                  "llama_cpp": llama_cpp.__file__}))
"""
KEYS = ("prefill_tok_s", "decode_tok_s")


def install(wheel: Path, target: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                    "--target", str(target), str(wheel)], check=True)


def died(returncode: int) -> str:
    try:
        return f"died with {signal.Signals(-returncode).name}" if returncode < 0 else f"exited {returncode}"
    except ValueError:
        return f"died with signal {-returncode}"


def vendor() -> str:
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    return "intel" if "GenuineIntel" in text else "amd" if "AuthenticAMD" in text else "cpu"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", action="append", default=[], metavar="NAME=PATH",
                        help="a built wheel (or a folder holding one) for build NAME")
    parser.add_argument("--model", default="embedded:qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / f"llama_cpp_build_{vendor()}")
    a = parser.parse_args()
    given = dict(w.split("=", 1) for w in a.wheel)
    model = gguf_path(a.model)
    set_up = cmake_args()
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as scratch:
        targets = {}
        for name, args in builds(cpu_flags()).items():
            if name in given:
                wheel = Path(given[name])
                wheel = sorted(wheel.glob("llama_cpp_python-*.whl"))[-1] if wheel.is_dir() else wheel
            else:
                folder = wheel_folder(args, cache_root() / "benchmark")
                kept = sorted(folder.glob("llama_cpp_python-*.whl"))
                wheel = kept[-1] if kept else build_wheel(sys.executable, args, folder)
            targets[name] = Path(scratch) / name
            install(wheel, targets[name])
            rows[name] = {"cmake_args": " ".join(args), "set_up": args == set_up, "wheel": wheel.name, "rounds": []}
        for round_ in range(a.rounds):
            for name, target in targets.items():
                if "died" in rows[name]:
                    continue
                env = {**os.environ, "PYTHONPATH": str(target)}
                done = subprocess.run([sys.executable, "-c", _CHILD, str(model), str(a.threads), str(a.prompt_tokens),
                                       str(a.decode_tokens)], env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    rows[name]["died"] = died(done.returncode)
                    rows[name]["log_tail"] = done.stderr[-600:]
                    print(f"round {round_ + 1} {name}: {rows[name]['died']}", flush=True)
                    continue
                measured = json.loads(done.stdout.strip().splitlines()[-1])
                assert measured.pop("llama_cpp").startswith(str(target)), "the child imported another llama_cpp"
                rows[name]["system_info"] = measured.pop("system_info")
                rows[name]["rounds"].append(measured)
                print(f"round {round_ + 1} {name}: prefill {measured['prefill_tok_s']:.1f} tok/s, "
                      f"decode {measured['decode_tok_s']:.1f} tok/s", flush=True)
    base = next(row for row in rows.values() if row["set_up"])
    for row in rows.values():
        if "died" in row:
            continue
        for key in KEYS:
            row[key] = statistics.median(r[key] for r in row["rounds"])
            # each round's ratio to the set-up's build in the same round: drift cancels within a round
            ratios = [mine[key] / theirs[key] for mine, theirs in zip(row["rounds"], base["rounds"])]
            row[key.replace("tok_s", "ratio")] = {"median": statistics.median(ratios), "min": min(ratios),
                                                   "max": max(ratios)}
    result = {"cpu": cpu_model(), "cpu_flags": sorted(f for f in cpu_flags() if f.startswith(("avx", "amx", "fma", "f16c"))),
              "model": a.model, "threads": a.threads, "prompt_tokens": a.prompt_tokens, "decode_tokens": a.decode_tokens,
              "rounds": a.rounds, "builds": rows}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    a.out.with_suffix(".md").write_text(markdown(result) + "\n")
    print(markdown(result))


def markdown(result: dict) -> str:
    lines = [f"# llama.cpp builds side by side ({result['cpu']}, {result['threads']} threads, {result['model']})", "",
             f"CPU flags: {' '.join(result['cpu_flags'])}.", "",
             f"Median of {result['rounds']} rounds, the builds taking turns; prefill of {result['prompt_tokens']} tokens, "
             f"{result['decode_tokens']} decode steps of one sequence; ratios to the set-up's build in the same round.", "",
             "| build | prefill tok/s | decode tok/s | prefill / set-up's, per round: median [min, max] | "
             "decode / set-up's | the set-up's here | CMAKE_ARGS |", "| --- | --- | --- | --- | --- | --- | --- |"]

    def ratio(r: dict) -> str:
        return f"{r['median']:.3f} [{r['min']:.3f}, {r['max']:.3f}]"

    for name, row in result["builds"].items():
        cells = ([row["died"], "", "", ""] if "died" in row else
                 [f"{row['prefill_tok_s']:.1f}", f"{row['decode_tok_s']:.1f}", ratio(row["prefill_ratio"]),
                  ratio(row["decode_ratio"])])
        lines.append(f"| {name} | {' | '.join(cells)} | {'yes' if row['set_up'] else 'no'} | `{row['cmake_args']}` |")
    lines += ["", "Instruction sets each build reports (llama_print_system_info):", ""]
    lines += [f"- {name}: `{row['system_info']}`" for name, row in result["builds"].items() if "system_info" in row]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
