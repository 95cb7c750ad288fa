#!/usr/bin/env bash
# Install Debian's chromium for the viewer's browser test (tests/integration/test_http_browser.py), with
# apt-get, the ordinary client; print the browser's path on stdout. Nothing is done when it is there.
# Where it cannot be installed (not Debian/Ubuntu, not root and no password-less sudo, no network), say why
# on stderr and exit 1: `make test` goes on and the browser test skips, saying the same.
set -euo pipefail

for name in chromium chromium-browser; do
  if command -v "$name" >/dev/null; then command -v "$name"; exit 0; fi
done
command -v apt-get >/dev/null || { echo "install-chromium: no apt-get here (not Debian or Ubuntu)" >&2; exit 1; }
if [ "$(id -u)" -eq 0 ]; then
  run=()
elif sudo -n true 2>/dev/null; then
  run=(sudo -n)
else
  echo "install-chromium: apt-get needs root (run make test as root, or with password-less sudo)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${run[@]}" apt-get install -y --no-install-recommends chromium >&2 ||
  { "${run[@]}" apt-get update >&2 && "${run[@]}" apt-get install -y --no-install-recommends chromium >&2; } ||
  { echo "install-chromium: apt-get could not install chromium" >&2; exit 1; }
command -v chromium
