"""What `memory_get` reads for an agent: a transcript in one of its session roots, else a memory file.

Blocking; the engine puts the retention store (transcripts deleted from disk) in front of it.
"""

from __future__ import annotations

from memoryd.config import AgentConfig
from memoryd.sources.readfile import FileSlice, read_memory_file
from memoryd.sources.readtranscript import read_transcript


def read_agent_file(agent: AgentConfig, path: str, *, from_line: int | None, lines: int | None) -> FileSlice:
    """Lines of a memory file, or the messages of a transcript (a path in a session root), under the read rules."""
    settings = agent.settings
    rules = settings.files
    if "sessions" in settings.sources:
        found = read_transcript(
            path,
            agent.session_roots,
            from_line=from_line,
            lines=lines,
            subagents=settings.transcripts.subagents,
            max_bytes=rules.max_transcript_bytes,
            allow_hard_links=rules.allow_hard_links,
        )
        if found is not None:
            return found
    return read_memory_file(
        path,
        agent.workspace,
        agent.extra_paths,
        from_line=from_line,
        lines=lines,
        max_bytes=rules.max_markdown_bytes,
        allow_hard_links=rules.allow_hard_links,
    )
