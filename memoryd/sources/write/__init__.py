"""`memory_write`: append-only saves to the agent's daily note or MEMORY.md (see `entry` and `append`)."""

from memoryd.sources.write.append import Target, Written, append_entry
from memoryd.sources.write.entry import MAX_TEXT_BYTES, Entry, check_entry

__all__ = ["MAX_TEXT_BYTES", "Entry", "Target", "Written", "append_entry", "check_entry"]
