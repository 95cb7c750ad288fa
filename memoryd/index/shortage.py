"""Whether a sync failed for want of descriptors or memory (the scheduler then retries it with a backoff).

Such a failure says nothing about the files or the database: the process ran out of something, and the
same sync will succeed once it is free again.
"""

from __future__ import annotations

from memoryd.index.state import SyncReport
from memoryd.index.sync import TRANSIENT_ERRNOS

RESOURCE_RETRY_START_S = 1.0
RESOURCE_RETRY_MAX_S = 60.0
"""A sync that could not read a file (or open the database) for want of descriptors or memory is
retried after 1 s, doubling up to this, until one completes without such a failure: a note written
while the daemon was out of descriptors is indexed once they are free, with no further change."""


def short_of_resources(report: SyncReport | BaseException) -> bool:
    """Whether a sync failed (or left a file unread) because the process lacked descriptors or memory."""
    if isinstance(report, SyncReport):
        return report.counts.transient
    seen: BaseException | None = report
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in TRANSIENT_ERRNOS:
            return True
        if "too many open files" in str(seen).lower() or "unable to open database file" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False
