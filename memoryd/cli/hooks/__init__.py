"""The hook side of memoryd: a thin client the hosts run on every prompt (`memoryd hook HOST EVENT`).

Light by design: the standard library, orjson and the CLI's raw JSON-RPC client only (no daemon,
index, embedding or MCP SDK import); tests/cli/test_imports.py holds that line.
"""
