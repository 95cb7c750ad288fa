"""Named crash points for crash-consistency tests.

When `MEMORYD_CRASH_AT` names a point (e.g. `reindex:before-swap`), the process kills itself with
SIGKILL when it reaches it — the same as a power cut or `kill -9` at exactly that moment, but
reproducible. `MEMORYD_CRASH_SKIP=n` lets the first n hits of that point pass, so a test can pick
the k-th transaction of a sync at random. Unset (always, outside tests), a crash point is a
dictionary lookup and nothing else.
"""

from __future__ import annotations

import os
import signal

ENV = "MEMORYD_CRASH_AT"
SKIP_ENV = "MEMORYD_CRASH_SKIP"

POINTS = (
    "store:before-commit",  # any write transaction (a batch, a prune, the cache, meta) is complete but not committed
    "sync:after-batch",  # a delta sync committed a batch that changed rows
    "reindex:building",  # a full rebuild wrote a batch into the temporary database
    "reindex:before-swap",  # the temporary database is complete and closed, not yet renamed
    "reindex:wal-removed",  # the live database's checkpointed WAL is removed, the rename not yet done
    "reindex:after-swap",  # the rename happened, the new database is not yet reopened
    "vectors:after-slice",  # a slice of chunks indexed keyword-first got its vectors, committed
)


def crash_point(name: str) -> None:
    if os.environ.get(ENV) != name:
        return
    skip = int(os.environ.get(SKIP_ENV) or 0)
    if skip > 0:
        # The process environment is the one place this count may live: crash points are
        # reached one at a time (one sync at a time), and nothing else reads the variable.
        os.environ[SKIP_ENV] = str(skip - 1)
        return
    os.kill(os.getpid(), signal.SIGKILL)
