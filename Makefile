# memoryd — everything a new machine needs is installed by these targets.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: what running needs (make run) and the test/lint tools on top (make test, make install).
RUNTIME_STAMP := $(VENV)/.runtime
DEV_STAMP := $(VENV)/.dev

QMD_BIN := .qmd/node_modules/.bin/qmd

.PHONY: install run test lint typecheck pytest bench stress clean test-qmd inspector browser

$(RUNTIME_STAMP): pyproject.toml Makefile scripts/install-venv.sh
	@bash scripts/install-venv.sh runtime $(VENV) $(PY)
	@touch $@

$(DEV_STAMP): $(RUNTIME_STAMP)
	@bash scripts/install-venv.sh dev $(VENV) $(PY)
	@touch $@

install: $(DEV_STAMP)

run: $(RUNTIME_STAMP)
	@echo "==> starting the daemon (Ctrl-C stops it; logs below)"
	$(BIN)/memoryd serve

lint: $(DEV_STAMP)
	$(BIN)/ruff check memoryd tests bench
	$(BIN)/ruff format --check memoryd tests bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

$(QMD_BIN): scripts/install-qmd.sh
	bash scripts/install-qmd.sh >/dev/null

# The MCP Inspector for the acceptance suite (tests/acceptance), installed once into .inspector/ with its own
# Node (~1 min, 300 MB). If npm cannot install it, make test says so and skips only the Inspector checks.
inspector:
	@bash scripts/install-inspector.sh >/dev/null || \
	  echo "make inspector: the MCP Inspector could not be installed; tests/acceptance skips its checks" >&2

# Debian's chromium for the viewer's browser test; where apt-get cannot install it, make test says so and
# tests/integration/test_http_browser.py skips, saying why.
browser:
	@bash scripts/install-chromium.sh >/dev/null || \
	  echo "make browser: chromium could not be installed; the viewer's browser test skips" >&2

# QMD=1 make test also installs QMD locally (.qmd/) and runs the tests against the real CLI.
pytest: $(DEV_STAMP) inspector browser $(if $(filter 1,$(QMD)),$(QMD_BIN))
	$(BIN)/python -m pytest -q -m "not slow"

test-qmd: $(DEV_STAMP) $(QMD_BIN)
	QMD=1 $(BIN)/python -m pytest -q tests/qmd

test: lint typecheck pytest

stress: $(DEV_STAMP)
	$(BIN)/python -m pytest -q

bench: $(DEV_STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
