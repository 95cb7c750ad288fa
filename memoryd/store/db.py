"""Opening an agent's SQLite database with apsw: WAL, busy timeout, sqlite-vec, error translation.

apsw rather than the stdlib: the pyenv Pythons on our machines cannot load SQLite extensions
through `sqlite3`, and apsw ships a current SQLite (FTS5 contentless-delete, RETURNING, JSON).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import sqlite_vec
import structlog

from memoryd.errors import CorruptDatabaseError, ReadonlyDatabaseError, StoreError
from memoryd.runtime.private import make_private_dirs

log = structlog.get_logger(__name__)

BUSY_TIMEOUT_MS = 5000
PRIVATE_FILE_MODE = 0o600
"""An index holds the user's notes and transcripts: its folder (make_private_dirs) and files are the user's
alone, whatever the umask (SQLite gives the -wal and -shm files the database file's mode)."""


def private_dir(path: Path) -> None:
    """Create the folder `path` (and missing parents) if needed; a folder created here is 0700."""
    make_private_dirs(path)


def location_problem(path: Path) -> str | None:
    """Why a database cannot live at `path` (its folder cannot be created, or written), or None.

    Creates the folder (0700) as opening would; used before an agent is switched to a new `store.path`,
    so that a path that cannot work keeps the agent on the one that does.
    """
    try:
        private_dir(path.parent)
    except FileExistsError:
        return f"{path.parent} exists and is not a folder"
    except OSError as exc:
        return f"cannot create {path.parent}: {exc.strerror or exc}"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return f"cannot write in {path.parent}"
    if os.path.lexists(path) and not (os.path.isfile(path) and os.access(path, os.R_OK | os.W_OK)):
        return f"{path} exists and is not a database file memoryd can read and write"
    return None


def _create_private_file(path: Path) -> None:
    """Create an empty database file with mode 0600 unless it exists (SQLite would use 0644 & ~umask).

    Any failure is left for SQLite's own open to report, in the same words as always."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE_MODE))


@dataclass(slots=True)
class VecState:
    """Whether sqlite-vec loaded; a failure is kept and reported by status, never silent."""

    available: bool
    error: str | None
    extension_path: str | None


def translate(exc: BaseException, context: str) -> StoreError:
    """Map an apsw error onto memoryd's tree (readonly and corruption get their own types)."""
    message = f"{context}: {exc}"
    if isinstance(exc, apsw.ReadOnlyError) or "readonly" in str(exc).lower():
        return ReadonlyDatabaseError(message)
    if isinstance(exc, apsw.CorruptError | apsw.NotADBError):
        return CorruptDatabaseError(message)
    return StoreError(message)


@contextlib.contextmanager
def translated(context: str) -> Iterator[None]:
    """Re-raise apsw errors raised inside the block as memoryd StoreErrors."""
    try:
        yield
    except apsw.Error as exc:
        raise translate(exc, context) from exc


def _vec_extension_path(configured: str) -> str:
    if configured:
        return configured
    return str(sqlite_vec.loadable_path())


def load_vec(conn: apsw.Connection, configured_path: str = "", *, enabled: bool = True) -> VecState:
    """Load sqlite-vec into `conn`; return what happened instead of raising."""
    if not enabled:
        return VecState(available=False, error="vector store disabled by config", extension_path=None)
    try:
        path = _vec_extension_path(configured_path)
        conn.enable_load_extension(True)
        conn.load_extension(path)
        conn.enable_load_extension(False)
        conn.execute("SELECT vec_version()").fetchall()
    except (apsw.Error, ImportError, OSError) as exc:
        log.warning("sqlite-vec unavailable; vector search falls back to exact in-process scoring", error=str(exc))
        return VecState(available=False, error=str(exc), extension_path=configured_path or None)
    return VecState(available=True, error=None, extension_path=path)


def connect(
    path: Path,
    *,
    readonly: bool = False,
    journal: str = "wal",
    vec_path: str = "",
    vec_enabled: bool = True,
) -> tuple[apsw.Connection, VecState]:
    """Open (creating if needed) a database file configured the way memoryd always uses it."""
    if not readonly:
        private_dir(path.parent)
        _create_private_file(path)
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    with translated(f"opening {path}"):
        conn = apsw.Connection(str(path), flags=flags)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        if not readonly:
            conn.execute(f"PRAGMA journal_mode={journal}")
            conn.execute("PRAGMA synchronous=NORMAL" if journal == "wal" else "PRAGMA synchronous=OFF")
        conn.execute("PRAGMA temp_store=MEMORY")
        # 4 MiB per connection (a writer and a few readers per agent; a hybrid search holds two readers at
        # once): the OS page cache holds the rest. At 100k chunks, 600 hybrid searches from 4 clients took
        # the process 170 -> 280 MB at 8 MiB, 237 at 4, 222 at 2, for no search speed measurable on this
        # machine's noise (single-client p50 within +-1 ms); 32 MiB each cost the daemon ~100 MB more.
        conn.execute("PRAGMA cache_size=-4096")
    vec = load_vec(conn, vec_path, enabled=vec_enabled)
    return conn, vec


SQLITE_MAGIC = b"SQLite format 3\x00"


def is_corruption(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) says the database file is damaged: SQLITE_CORRUPT or SQLITE_NOTADB."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, CorruptDatabaseError | apsw.CorruptError | apsw.NotADBError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def header_problem(path: Path) -> str | None:
    """What is wrong with the database file's 100-byte header, or None (sound, or no file yet). One pread:
    cheap enough for every sync, and it catches a header overwritten while the daemon runs."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None  # missing, or unreadable: that is the open's error to report, not damage
    try:
        head = os.pread(fd, 100, 0)
    finally:
        os.close(fd)
    if not head:
        return None  # an empty file: SQLite makes it a database on first write
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        return "the file does not start with a SQLite header"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
        return f"the header gives an impossible page size ({page_size})"
    return None


def quick_check(conn: apsw.Connection) -> str | None:
    """SQLite's `PRAGMA quick_check` (every page of every b-tree, without cross-checking indexes: O(size),
    ~8 s for a 300 MB index on a loaded 2-core machine); the first problems it names, or None."""
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
    except apsw.InterruptError:
        raise  # the caller stopped it (memoryd.index.integrity): not a failure of the check
    except apsw.Error as exc:
        if isinstance(exc, apsw.CorruptError | apsw.NotADBError):
            return str(exc)
        raise translate(exc, "checking the index") from exc
    return None if rows == ["ok"] else "; ".join(rows)


def move_aside(path: Path, suffix: str, *, then: str = "it will be rebuilt from the sources") -> Path:
    """Rename a damaged database (and its -wal/-shm) out of the way; never delete user data."""
    target = path.with_name(f"{path.name}.{suffix}")
    for ext in ("", "-wal", "-shm"):
        src = Path(f"{path}{ext}")
        if src.exists():
            os.replace(src, Path(f"{target}{ext}"))
    log.warning(f"database moved aside; {then}", path=str(path), moved_to=str(target))
    return target


def fsync_dir(path: Path) -> None:
    """Make a rename durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def immediate_transaction(
    conn: apsw.Connection, what: str, before_commit: Callable[[], None] | None = None
) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT (rollback on any error): the writer takes the lock up front. `what` names
    the database in errors ("the index", "the retention store"); `before_commit` runs last (a crash point)."""
    with translated(f"writing {what}"):
        conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with contextlib.suppress(apsw.Error):
            conn.execute("ROLLBACK")
        raise
    if before_commit is not None:
        before_commit()
    with translated(f"committing {what}"):
        conn.execute("COMMIT")
