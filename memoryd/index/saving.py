"""`memory_write` for one agent: check the agent may save, append the entry, report where it went.

The actor (daemon, standalone MCP) and the in-process CLI both save through `save`, then sync the
one file they wrote before they answer, so the entry is searchable when the reply arrives. A failed
sync does not undo a save: the reply says the entry is saved but not yet indexed, and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import anyio
import anyio.to_thread

from memoryd.config import AgentConfig
from memoryd.errors import WriteRefusedError
from memoryd.sources.write import Target, Written, append_entry, check_entry


@dataclass(frozen=True, slots=True)
class SaveReport:
    """A saved entry and whether the index holds it yet: what `memory_write` answers."""

    written: Written
    target: Target
    heading: str | None
    indexed: bool
    index_error: str | None = None

    def to_dict(self) -> dict[str, object]:
        w = self.written
        return {
            "path": w.path,
            "startLine": w.start_line,
            "endLine": w.end_line,
            "citation": w.citation,
            "target": self.target,
            "heading": self.heading,
            "createdFile": w.created_file,
            "createdHeading": w.created_heading,
            "savedAt": w.saved_at.isoformat(timespec="seconds"),
            "indexed": self.indexed,
            "indexError": self.index_error,
        }


def write_allowed(agent: AgentConfig) -> None:
    """Raise WriteRefusedError when this agent does not take writes (off, or its notes are not indexed)."""
    if not agent.settings.tools.write:
        raise WriteRefusedError(
            f"memory_write is turned off for agent {agent.id!r} (tools.write = false in its configuration)"
        )
    if "memory" not in agent.settings.sources:
        raise WriteRefusedError(
            f"agent {agent.id!r} does not index its memory notes (sources = {list(agent.settings.sources)}), "
            "so a saved entry could never be found: add 'memory' to its sources"
        )


async def save(
    agent: AgentConfig, text: str, *, target: Target, heading: str | None, now: datetime | None = None
) -> tuple[Written, str | None]:
    """Check and append the entry in a worker thread; (where it went, the heading it was filed under)."""
    write_allowed(agent)
    moment = now if now is not None else datetime.now().astimezone()

    def work() -> tuple[Written, str | None]:
        entry = check_entry(text, heading)
        files = agent.settings.files
        written = append_entry(
            agent.workspace,
            target,
            entry,
            now=moment,
            max_bytes=files.max_markdown_bytes,
            allow_hard_links=files.allow_hard_links,
        )
        return written, entry.heading

    return await anyio.to_thread.run_sync(work)
