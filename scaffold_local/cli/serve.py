"""`serve`: vLLM's OpenAI-compatible server for a vLLM config (for the hosted backend)."""

from __future__ import annotations

import os
import subprocess
from typing import Annotated

import typer

from ..backends.vllm_arguments import CPU_ENGINE_ENVIRONMENT, server_command
from ..errors import UsageError
from ..runs import ModelConfig
from .output import command_app, err

app = command_app()
SERVED = "qwen2.5-coder-1.5b-vllm-cpu"  # the CPU judge on vLLM's CPU build


@app.command(short_help="start vLLM's OpenAI-compatible server for a judge")
def serve(
    model: Annotated[str, typer.Option("--model", "-m", help="a vLLM model config (`models` lists them)")] = SERVED,
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
) -> None:
    """Start vLLM's OpenAI-compatible server for a vLLM config (for the hosted backend)."""
    config = ModelConfig.load(model)
    if config.backend != "vllm":
        raise UsageError(f"{config.name} is a {config.backend} config; `serve` needs a vllm config")
    command = server_command(config, host, port)
    err.print(" ".join(command), highlight=False)
    environment = {**CPU_ENGINE_ENVIRONMENT, **os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    raise typer.Exit(subprocess.call(command, env=environment))
