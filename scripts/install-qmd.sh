#!/usr/bin/env bash
# Install QMD (npm: @tobilu/qmd) with its own Node runtime (npm: node-<os>-<arch>) into a project-local
# folder, never globally, and print the path of the `qmd` launcher on stdout (npm's chatter goes to stderr).
#
# QMD needs Node >= 22; the node-<os>-<arch> package ships that runtime as an ordinary registry package,
# so nothing is downloaded from outside the npm registry. Install scripts are skipped on purpose:
# node-llama-cpp's would fetch llama.cpp builds, and the keyword path (`qmd search`) needs none of them.
#
#   scripts/install-qmd.sh               -> <repo>/.qmd/node_modules/.bin/qmd
#   QMD_PREFIX=/opt/qmd scripts/install-qmd.sh
#
# Point memoryd at it with `command = "<printed path>"` in the agent's [qmd] table.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${QMD_PREFIX:-$root/.qmd}"
qmd_version="${QMD_VERSION:-2.8.3}"
node_major="${QMD_NODE_MAJOR:-24}"

# shellcheck source=scripts/node-runtime.sh
. "$root/scripts/node-runtime.sh"
node_pkg="$(node_runtime_package install-qmd)"

bin="$prefix/node_modules/.bin"
private_prefix "$prefix"

installed() {
  [ -x "$bin/qmd" ] && [ -x "$bin/node" ] &&
    PATH="$bin:$PATH" "$bin/qmd" --version 2>/dev/null | grep -q "qmd $qmd_version"
}

if ! installed; then
  # An explicit QMD version: npm would otherwise pick an old one whose `engines` suit the system's Node.
  npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund --loglevel=error \
    "$node_pkg@$node_major" "@tobilu/qmd@$qmd_version" >&2
  installed || { echo "install-qmd: $bin/qmd does not run" >&2; exit 1; }
fi
echo "$bin/qmd"
