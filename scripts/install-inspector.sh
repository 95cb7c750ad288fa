#!/usr/bin/env bash
# Install the MCP Inspector (npm: @modelcontextprotocol/inspector) with its own Node runtime (npm:
# node-<os>-<arch>) into a project-local folder, never globally, and print the path of its launcher
# on stdout (npm's chatter goes to stderr). The acceptance suite drives memoryd with its CLI mode.
#
# The Inspector needs Node >= 22.19; the node-<os>-<arch> package ships that runtime as an ordinary
# registry package (as scripts/install-qmd.sh does for QMD), so nothing is fetched from outside the npm
# registry. Install scripts are skipped: the CLI mode needs none of them.
#
#   scripts/install-inspector.sh                  -> <repo>/.inspector/node_modules/.bin/mcp-inspector
#   INSPECTOR_PREFIX=/opt/inspector scripts/install-inspector.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${INSPECTOR_PREFIX:-$root/.inspector}"
inspector_version="${INSPECTOR_VERSION:-2.12.0}"
node_major="${INSPECTOR_NODE_MAJOR:-24}"

# shellcheck source=scripts/node-runtime.sh
. "$root/scripts/node-runtime.sh"
node_pkg="$(node_runtime_package install-inspector)"

bin="$prefix/node_modules/.bin"
private_prefix "$prefix"

installed() {
  [ -x "$bin/mcp-inspector" ] && [ -x "$bin/node" ] &&
    PATH="$bin:$PATH" "$bin/mcp-inspector" --version 2>/dev/null | grep -qx "$inspector_version"
}

if ! installed; then
  command -v npm >/dev/null || { echo "install-inspector: npm is not installed" >&2; exit 1; }
  npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund --loglevel=error \
    --fetch-retries=2 --fetch-retry-maxtimeout=20000 \
    "$node_pkg@$node_major" "@modelcontextprotocol/inspector@$inspector_version" >&2
  installed || { echo "install-inspector: $bin/mcp-inspector does not run" >&2; exit 1; }
fi
echo "$bin/mcp-inspector"
