"""What the MCP edge needs from the daemon: one narrow interface, so transports never see the index.

The supervisor implements it; tests use a small in-memory fake. Every method takes the agent id
the connection is bound to — the edge resolves that, never a tool argument. Methods raise
`memoryd.errors` types for anything a caller can get wrong; the edge turns those into tool errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

Corpus = Literal["memory", "sessions", "all"]
WriteTarget = Literal["daily", "long-term"]


class MemoryService(Protocol):
    """The daemon's memory operations, per agent."""

    def agent_ids(self) -> list[str]:
        """The configured agents, in configuration order."""
        ...

    async def search(
        self,
        agent: str,
        query: str,
        *,
        max_results: int | None,
        min_score: float | None,
        corpus: Corpus,
        wait_fresh_ms: int | None,
        session_key: str | None = None,
    ) -> dict[str, object]:
        """Run `memory_search`; the result matches `protocol/memory_search.output.json`."""
        ...

    async def get(self, agent: str, path: str, *, from_line: int | None, lines: int | None) -> dict[str, object]:
        """Run `memory_get`; the result matches `protocol/memory_get.output.json`."""
        ...

    async def status(self, agent: str, *, deep: bool) -> dict[str, object]:
        """Run `status`; the result matches `protocol/status.output.json`."""
        ...

    def write_enabled(self, agent: str) -> bool:
        """Whether the agent serves `memory_write` (`tools.write`): tools/list shows it only then."""
        ...

    async def write(self, agent: str, text: str, *, target: WriteTarget, heading: str | None) -> dict[str, object]:
        """Run `memory_write`; the result matches `protocol/memory_write.output.json`."""
        ...

    async def sync(self, agent: str, *, force: bool, reason: str, sessions: Sequence[str] = ()) -> dict[str, object]:
        """Sync the agent's index now (a full reindex when `force`; only the transcripts `sessions` when
        they are named) and report what was done."""
        ...

    async def transcript_updated(self, agent: str, path: str) -> None:
        """A client says a session transcript grew; count it towards the session-delta thresholds."""
        ...

    async def reload(self, reason: str) -> dict[str, object]:
        """Reload the daemon's configuration now (as SIGHUP); what changed, or why it kept the old one."""
        ...

    async def forget(
        self, agent: str, *, paths: list[str], all: bool, before: str | None, after: str | None
    ) -> dict[str, object]:
        """Delete the agent's retained transcripts for good (named, all, or by when they ended)."""
        ...
