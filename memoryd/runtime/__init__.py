"""Finding the user's one daemon from any environment, and trusting only what is the user's own.

`private` checks directories, socket files and the process behind a socket; `claim` is the
daemon's side (a lock on its state directory for its lifetime, and a record of where it listens);
`locate` is the clients' side (which socket to use, whether a daemon holds the state directory).
Nothing here imports the MCP SDK, numpy or the server: the CLI's socket path imports it and must
start fast.
"""
