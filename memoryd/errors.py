"""One exception root for everything memoryd raises on purpose.

Third-party errors (apsw, httpx, OS errors) are translated into these where they enter memoryd;
the edges (CLI, MCP tools, socket protocol) translate these into exit codes, tool errors and
JSON-RPC errors. Anything else reaching an edge is a bug and is logged as one.

    MemorydError
    ├── ConfigError              invalid settings; names the key and the bad value
    ├── SourceError              a memory file or transcript could not be read
    ├── AccessDeniedError        a path outside the agent's memory roots, a symlink, not markdown
    │   └── RefusedFileError (memoryd.sources.safefile)  not a regular file, too large, a hard link
    ├── NotFoundError            an unknown agent, a missing file
    ├── WriteRefusedError        memory_write will not save this text there (a secret, the size limit,
    │                            a symlink, a file that is not regular, a workspace it cannot write)
    ├── StoreError               SQLite failed
    │   ├── CorruptDatabaseError   the database file is damaged (it is moved aside and rebuilt)
    │   └── ReadonlyDatabaseError  the database cannot be written (readonly recovery applies)
    ├── EmbeddingError           an embedding provider failed
    │   ├── EmbeddingAuthError     bad or missing API key: never retried
    │   ├── EmbeddingQuotaError    the account's quota is used up: never retried
    │   ├── EmbeddingRateLimitError  429 / overload: retried with backoff (retry_after in seconds)
    │   └── EmbeddingInputTooLargeError  the request was refused as too large (a media file is skipped)
    ├── DaemonError              the daemon could not be reached or started
    │   ├── DaemonRunningError     another daemon holds the state directory (a second `serve` exits)
    │   └── NotPrivateError        a directory, socket, record or listener that must be this user's alone is not
    ├── ProtocolError            a malformed request from a client
    └── QmdError (memoryd.qmd.errors)  the QMD backend failed: missing binary, timeout, exit, bad output
"""

from __future__ import annotations


class MemorydError(Exception):
    """Root of every error memoryd raises on purpose."""


class ConfigError(MemorydError):
    """Invalid configuration; the message names the key and the bad value."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"config {key}: {message}")
        self.key = key


class SourceError(MemorydError):
    """A memory file or session transcript could not be read."""


class AccessDeniedError(MemorydError):
    """A path the caller may not read: outside the roots, a symlink, or not a memory file."""


class NotFoundError(MemorydError):
    """Something named by the caller does not exist (an agent, a file)."""


class WriteRefusedError(MemorydError):
    """memory_write refuses the text or its target; the message says why, never echoing a secret."""


class StoreError(MemorydError):
    """SQLite failed."""


class CorruptDatabaseError(StoreError):
    """The database file is damaged."""


class ReadonlyDatabaseError(StoreError):
    """The database cannot be written."""


class EmbeddingError(MemorydError):
    """An embedding provider failed."""


class EmbeddingAuthError(EmbeddingError):
    """The provider rejected the credentials (401/403); retrying cannot help."""


class EmbeddingQuotaError(EmbeddingError):
    """The account's quota is exhausted (e.g. insufficient_quota); retrying cannot help."""


class EmbeddingRateLimitError(EmbeddingError):
    """Rate limited or overloaded; worth retrying after `retry_after` seconds when given."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class EmbeddingInputTooLargeError(EmbeddingError):
    """The provider refused an input as too large (413, payload or token limit); retrying cannot help."""


class DaemonError(MemorydError):
    """The daemon could not be reached or started."""


class DaemonRunningError(DaemonError):
    """Another memoryd daemon holds the state directory; the message names its pid and socket."""


class NotPrivateError(DaemonError):
    """Something that must be this user's alone is not (the socket or state directory, the socket, the
    daemon record, the process listening): refused, and the message says why."""


class ProtocolError(MemorydError):
    """A client sent a malformed request."""


def first_error(exc: BaseException) -> BaseException:
    """The first leaf of (nested) exception groups: what task groups wrap, edges want to report."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """What went wrong, in the words of the error that really happened: never the text of the
    exception group a task group wrapped it in ("unhandled errors in a TaskGroup")."""
    inner = first_error(exc)
    text = str(inner).strip()
    if isinstance(inner, MemorydError):
        return text or type(inner).__name__
    return f"{type(inner).__name__}: {text}" if text else type(inner).__name__


class RerankError(MemorydError):
    """The optional reranker failed (HTTP error, bad answer, no connection); the search goes on without it."""
