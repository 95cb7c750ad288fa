"""`memoryd setup HOST`: the MCP server entry each host needs, and merging it into the host's config.

`entries` is the one source of truth for what a host runs (README's configs are these entries);
`locations` says where each host keeps its configuration; `jsonfile` and `tomlfile` merge an entry
into such a file, keeping every other entry and a timestamped backup. Nothing here imports the
daemon, the MCP SDK or the index: `memoryd setup` runs on the CLI's light path.
"""
