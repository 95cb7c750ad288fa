"""The exit codes of every command: 0 success, 1 a clear error on stderr, 2 bad configuration; `serve`
also exits 3 when another daemon already serves its state directory (memoryd.runtime.record)."""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
