"""Which file names are session transcripts (spec §3.6 "Eligible names")."""

from __future__ import annotations

import re

_ARCHIVE_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}(?:\.[0-9]{3})?Z")
_LEGACY_STORE_BACKUP = re.compile(r"sessions\.json\.bak\.[0-9]+")


def _has_archive_suffix(name: str, reason: str) -> bool:
    marker = f".{reason}."
    index = name.rfind(marker)
    return index >= 0 and _ARCHIVE_TIMESTAMP.fullmatch(name, index + len(marker)) is not None


def is_transcript_name(name: str) -> bool:
    """True for `*.jsonl` transcripts and their `.reset.<TS>` / `.deleted.<TS>` archives.

    `.bak.<TS>` archives and `sessions.json` (with its `.bak.<n>` backups) are not transcripts.
    """
    if _LEGACY_STORE_BACKUP.fullmatch(name):
        return False
    if name.endswith(".jsonl"):
        return True
    return _has_archive_suffix(name, "reset") or _has_archive_suffix(name, "deleted")
