"""Named crash points for crash-consistency tests.

When `MEMORYD_CRASH_AT` names a point (e.g. `reindex:before-swap`), the process kills itself with
SIGKILL when it reaches it — the same as a power cut or `kill -9` at exactly that moment, but
reproducible. Unset (always, outside tests), a crash point is a dictionary lookup and nothing else.
"""

from __future__ import annotations

import os
import signal

ENV = "MEMORYD_CRASH_AT"

POINTS = (
    "sync:after-batch",  # a delta sync committed its first batch of files
    "reindex:building",  # a full rebuild wrote its first batch into the temporary database
    "reindex:before-swap",  # the temporary database is complete and closed, not yet renamed
    "reindex:after-swap",  # the rename happened, the new database is not yet reopened
)


def crash_point(name: str) -> None:
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
