"""Test helpers and small hand-written inputs. No test reads the project's evaluation data folder."""

from __future__ import annotations

import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TESTS = Path(__file__).parent
SNAPSHOTS = TESTS / "snapshots"
RESPONDER_CONFIG = TESTS / "configs" / "responder.toml"


def assert_snapshot(name: str, text: str) -> None:
    """Compare with tests/snapshots/<name>; UPDATE_SNAPSHOTS=1 rewrites it (then review the diff and
    bump the prompt version when a template changed)."""
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing snapshot {path}; run with UPDATE_SNAPSHOTS=1 once and review it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; if intended, rerun with UPDATE_SNAPSHOTS=1"


# Two documents written for the tests. With the responder's rules (backends/responder.py):
#   factory: F1, F2 main; F3, F4 supporting; F5 "other" (starts with "Published").
#   library: F1, F2 main; F3 supporting; F4 "other" (starts with "Posted").
FACTORY = (
    "Alpha Corp opened a factory in Denton on Monday. The factory employs 200 local workers. "
    "It builds solar panels for homes and schools. The plant cost 50 million dollars to build. "
    "Published by the Denton Daily."
)
LIBRARY = (
    "The Oakvale library now lends bicycles to members. Each member may borrow a bicycle for seven days. "
    "The bicycles were donated by Oakvale Cycling Club. Posted in Town News."
)
SUMMARIES = [
    # factory/brief: both main facts, no supporting fact.
    ("factory", FACTORY, "brief", "Alpha Corp opened a factory in Denton on Monday. The factory employs 200 local workers."),
    # factory/details: one main fact, both supporting facts; the last sentence has an invented number.
    ("factory", FACTORY, "details",
     "Alpha Corp opened a factory in Denton on Monday. It builds solar panels for homes and schools. "
     "The plant cost 50 million dollars to build. It will export 900 panels."),
    # library/brief: both main facts.
    ("library", LIBRARY, "brief",
     "The Oakvale library now lends bicycles to members. Each member may borrow a bicycle for seven days."),
    # library/details: the supporting fact only.
    ("library", LIBRARY, "details", "The bicycles were donated by Oakvale Cycling Club."),
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# The real-engine tests score this small input (2 documents x 2 systems: Ray needs two documents to split
# between its replicas), not the demo's examples/news.jsonl, which grows with the demo.
EXAMPLES = TESTS / "data" / "news.jsonl"
EXAMPLE_SUMMARIES = sum(1 for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip())
SMALL_NUMA_NODE = TESTS / "small_numa_node"


def small_numa_node_env(total_gib: float = 4, available_gib: float = 3) -> dict[str, str]:
    """Environment variables under which vLLM's CPU build, in every process it starts, sees a NUMA node
    of `total_gib` GiB (tests/small_numa_node/sitecustomize.py): the machines on which a KV cache sized
    as a fraction of the node failed. A config must start there whatever node the test machine has."""
    path = os.pathsep.join(p for p in (str(SMALL_NUMA_NODE), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "SCAFFOLD_TEST_NODE_GIB": f"{total_gib},{available_gib}"}


def failure_message(output: str) -> str:
    """What a failed command or server says first: the engine's own first error line, then the
    command's `error:` message, then the end of its output."""
    from scaffold_local.backends.child_stderr import first_error_line

    engine = first_error_line(output)
    command_error = re.findall(r"^(?:error|hint): .*$", output, flags=re.MULTILINE)
    parts = [f"engine: {engine}" if engine else "engine: (no error line found)", *command_error,
             "--- end of output:", output[-2000:]]
    return "\n".join(parts)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VllmServer:
    """A real OpenAI-compatible server (vLLM's, CPU build) on loopback, serving the embedded model, on a
    simulated small NUMA node (see `small_numa_node_env`)."""

    def __init__(self, log_path: Path, port: int | None = None):
        import subprocess

        from scaffold_local.backends.vllm_arguments import server_command
        from scaffold_local.judging.config import ModelConfig

        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        command = server_command(ModelConfig.load("smollm2-135m-vllm"), "127.0.0.1", self.port)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **small_numa_node_env()}
        # Own process group: the engine-core children die with the server when it is killed.
        self.process = subprocess.Popen(command, stdout=log_path.open("w"), stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)

    def wait_ready(self, timeout: float = 300) -> VllmServer:
        import time

        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM server exited:\n{failure_message(self.log_path.read_text())}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(1)
        self.stop()
        raise TimeoutError(f"vLLM server not ready after {timeout} s:\n{failure_message(self.log_path.read_text())}")

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """Abrupt death, as in a crash or an OOM kill."""
        import signal

        self._signal_group(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        import signal
        import subprocess

        self._signal_group(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        self._signal_group(signal.SIGKILL)  # any child left behind


def hosted_config_file(path: Path, base_url: str, method_version: int | None = None, **engine) -> Path:
    """A model config for the hosted backend pointing at `base_url` (a test server's port); `method_version` 2 for a
    stub server that answers written verdicts (a JSON schema in `response_format`) rather than readings."""
    settings = {"base_url": base_url, "concurrency": 16, "response_format": "json_schema",
                "tokenizer": "embedded:smollm2-135m-instruct", **engine}
    table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items())
    method = f"method_version = {method_version}\n" if method_version else ""
    path.write_text(f'extends = "smollm2-135m-hosted"\nname = "smollm2-135m-hosted"\n{method}\n[engine]\n{table}\n',
                    encoding="utf-8")
    return path


def minimal_instance(schema: dict):
    """The smallest JSON value valid for one of our judge-output schemas (the subset of JSON Schema
    that schemas.json_schema writes): what a fake server answers to keep a pipeline going."""
    if "anyOf" in schema:
        return minimal_instance(schema["anyOf"][0])
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema["type"]
    if kind == "object":
        return {key: minimal_instance(schema["properties"][key]) for key in schema.get("required", [])}
    if kind == "array":
        return [minimal_instance(schema["items"])] * schema.get("minItems", 0)
    if kind == "string":
        return "x" * schema.get("minLength", 0)
    if kind == "integer":
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    raise ValueError(f"unexpected schema: {schema}")


class LoopbackServer(ThreadingHTTPServer):
    # The default listen backlog of 5 overflows when 16 requests connect at once on a busy machine:
    # the kernel then holds or resets connections, which the client sees as timeouts or read errors.
    request_queue_size = 128


def serve(handler: type[BaseHTTPRequestHandler]) -> tuple[LoopbackServer, str]:
    """A threaded HTTP server on a free loopback port, and its OpenAI-style base URL."""
    server = LoopbackServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def send_reply(handler: BaseHTTPRequestHandler, status: int, content_type: str, data: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
