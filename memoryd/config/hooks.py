"""`[hooks]`: how `memoryd hook <host> <event>` recalls before a prompt and captures at a session's end.

A top-level table (not per agent): the hook process reads it from the local configuration, while the
search itself runs on the daemon with the agent's served settings. Ranges: `ranges.HOOKS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HookScope = Literal["project", "all"]
SessionStartMode = Literal["auto", "on", "off"]


@dataclass(frozen=True, slots=True)
class HooksSettings:
    """What the hooks inject and how long they may take (README: Configuration, `hooks.*`)."""

    max_chars: int = 1500
    """Characters of recalled snippets injected before one prompt, the block's frame included."""
    max_results: int = 4
    """Snippets injected before one prompt, at most."""
    timeout_ms: int = 2000
    """How long a recall or session-start brief waits for the daemon; past it nothing is injected."""
    capture_timeout_ms: int = 15000
    """How long a capture (SessionEnd, Stop, PreCompact) waits for the daemon's sync report."""
    follow_up_words: int = 6
    """A prompt of fewer words is a follow-up: the previous user turn is searched with it."""
    scope: HookScope = "project"
    """`project`: transcripts of other projects are never injected; `all`: they are, after this project's."""
    session_start: SessionStartMode = "auto"
    """The session-start brief: `auto` unless the host already loads the workspace's MEMORY.md itself."""
    session_start_chars: int = 1200
    """Characters of the session-start brief (MEMORY.md's head and the newest daily notes' headings)."""
    flush: bool = False
    """After a compaction, ask the model to save the durable facts with memory_write (hosts that can carry it)."""
