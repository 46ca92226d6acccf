"""`doctor`: whether a judge's engine runs on this machine, before anything is scored."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ..runs import ModelConfig
from .options import ModelOpt
from .output import command_app, console

app = command_app()

# the instruction sets llama.cpp's CPU kernels are chosen by (AMX is the one its build leaves out)
SHOWN_FLAGS = ("avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512_vnni", "avx512vbmi", "avx512_bf16", "amx_tile")


@app.command(short_help="check this machine: CPU, llama.cpp build, a decode")
def doctor(model: ModelOpt = None) -> None:
    """The CPU, the llama.cpp build and a smoke decode of the judge's model in a child process (once per build,
    CPU and model; recorded in the cache): a build that cannot run here ends with an error and the rebuild line."""
    from ..backends.llama_cpp import check_build
    from ..backends.llama_cpp_build import cmake_args, cpu_flags, cpu_model

    config = ModelConfig.load(model)
    flags = cpu_flags()
    table = Table(title=f"Judge {config.name} on this machine", title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    table.add_row("CPU", cpu_model())
    table.add_row("instruction sets", " ".join(f"{f}{'' if f in flags else ' (no)'}" for f in SHOWN_FLAGS))
    if config.backend != "llama-cpp":
        table.add_row("engine", f"{config.backend}: the smoke check is for the llama-cpp engine")
        console.print(table)
        return
    table.add_row("the set-up builds llama.cpp with", escape("CMAKE_ARGS=" + " ".join(cmake_args())))
    check = check_build(config)  # an engine that dies raises here: error, signal and the rebuild hint
    table.add_row("llama.cpp built with", escape(check.system_info))
    table.add_row("smoke decode", f"passed in {check.seconds:.1f} s "
                                  + ("(just now)" if check.fresh else f"(recorded {check.passed_at})"))
    console.print(table)
