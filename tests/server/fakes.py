"""An in-memory MemoryService with two agents whose canned data never overlap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from memoryd.errors import AccessDeniedError, NotFoundError, WriteRefusedError
from memoryd.server.service import Corpus, WriteTarget


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    agent: str
    arguments: dict[str, object]


@dataclass
class FakeMemoryService:
    """Canned answers per agent; records every call; `slow` queries wait for `release`."""

    notes: dict[str, dict[str, str]] = field(
        default_factory=lambda: {
            "alpha": {"MEMORY.md": "# Alpha\nThe alpha door is blue.\nAlpha likes tea.\n"},
            "beta": {"MEMORY.md": "# Beta\nThe beta door is red.\n"},
        }
    )
    calls: list[Call] = field(default_factory=list)
    transcripts: list[tuple[str, str]] = field(default_factory=list)
    transcript_seen: anyio.Event = field(default_factory=anyio.Event)
    slow_started: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)
    write_off: set[str] = field(default_factory=set)
    """Agents whose `tools.write` is false."""

    def agent_ids(self) -> list[str]:
        return list(self.notes)

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
        files = self._files(agent)
        self.calls.append(
            Call(
                "search",
                agent,
                {
                    "query": query,
                    "max_results": max_results,
                    "min_score": min_score,
                    "corpus": corpus,
                    "wait_fresh_ms": wait_fresh_ms,
                    "session_key": session_key,
                },
            )
        )
        if query == "explode":
            raise RuntimeError("the fake index blew up")
        if query == "slow":
            self.slow_started.set()
            await self.release.wait()
        results = [
            {
                "path": path,
                "startLine": number,
                "endLine": number,
                "score": 0.9,
                "snippet": line,
                "source": "memory",
                "citation": f"{path}#L{number}",
            }
            for path, text in files.items()
            for number, line in enumerate(text.splitlines(), start=1)
            if any(word.lower() in line.lower() for word in query.split())
        ]
        return {
            "results": results[: max_results or 6],
            "mode": "keyword",
            "provider": None,
            "model": None,
            "fallback": None,
            "freshness": {"indexedAt": "2025-01-31T10:00:00Z", "pending": 0, "dirty": False},
        }

    async def get(self, agent: str, path: str, *, from_line: int | None, lines: int | None) -> dict[str, object]:
        files = self._files(agent)
        self.calls.append(Call("get", agent, {"path": path, "from_line": from_line, "lines": lines}))
        if path.startswith("/") or ".." in path:
            raise AccessDeniedError(f"{path} is outside the memory roots")
        if path not in files:
            raise NotFoundError(f"no memory file {path}")
        all_lines = files[path].splitlines()
        start = from_line or 1
        chosen = all_lines[start - 1 : start - 1 + lines if lines else None]
        return {
            "path": path,
            "text": "\n".join(chosen),
            "from": start,
            "lines": len(chosen),
            "totalLines": len(all_lines),
        }

    async def status(self, agent: str, *, deep: bool) -> dict[str, object]:
        files = self._files(agent)
        self.calls.append(Call("status", agent, {"deep": deep}))
        return {
            "agent": agent,
            "backend": "builtin",
            "files": len(files),
            "chunks": len(files),
            "dirty": False,
            "workspaceDir": f"/home/u/{agent}",
            "dbPath": f"/home/u/.local/state/memoryd/{agent}.sqlite",
            "provider": None,
            "model": None,
            "sources": ["memory", "sessions"],
            "sourceCounts": [{"source": "memory", "files": len(files), "chunks": len(files)}],
            "fts": {"enabled": True, "available": True, "error": None},
            "vector": {"enabled": False, "available": False, "loadError": None, "dims": None},
            "cache": {"enabled": True, "entries": 0, "maxEntries": None},
            "fallback": None,
            "searchMode": "keyword",
            "daemon": {"uptimeS": 12.5, "queueDepth": 0, "lastSync": None},
            "deep": deep,
        }

    async def sync(self, agent: str, *, force: bool, reason: str, sessions: Sequence[str] = ()) -> dict[str, object]:
        self._files(agent)
        self.calls.append(Call("sync", agent, {"force": force, "reason": reason, "sessions": list(sessions)}))
        return {"agent": agent, "force": force, "reason": reason, "indexed": len(self.notes[agent])}

    def write_enabled(self, agent: str) -> bool:
        self._files(agent)
        return agent not in self.write_off

    async def write(self, agent: str, text: str, *, target: WriteTarget, heading: str | None) -> dict[str, object]:
        files = self._files(agent)
        self.calls.append(Call("write", agent, {"text": text, "target": target, "heading": heading}))
        if agent in self.write_off:
            raise WriteRefusedError(f"memory_write is turned off for agent {agent!r} (tools.write = false)")
        path = "memory/2025-01-31.md" if target == "daily" else "MEMORY.md"
        before = files.get(path, "")
        start = before.count("\n") + 1
        files[path] = before + f"_2025-01-31 10:00 +00:00_\n{text}\n"
        end = start + text.count("\n") + 1
        return {
            "path": path,
            "startLine": start,
            "endLine": end,
            "citation": f"{path}#L{start}-L{end}",
            "target": target,
            "heading": heading,
            "createdFile": not before,
            "createdHeading": False,
            "savedAt": "2025-01-31T10:00:00+00:00",
            "indexed": True,
            "indexError": None,
        }

    async def transcript_updated(self, agent: str, path: str) -> None:
        self._files(agent)
        self.transcripts.append((agent, path))
        self.transcript_seen.set()

    async def reload(self, reason: str) -> dict[str, object]:
        self.calls.append(Call("reload", "", {"reason": reason}))
        return {"ok": True, "reason": reason, "agents": self.agent_ids()}

    async def forget(
        self, agent: str, *, paths: list[str], all: bool, before: str | None, after: str | None
    ) -> dict[str, object]:
        self._files(agent)
        self.calls.append(Call("forget", agent, {"paths": paths, "all": all, "before": before, "after": after}))
        return {"forgotten": paths, "chunks": 0, "stillOnDisk": [], "unknown": [], "durationMs": 0}

    def _files(self, agent: str) -> dict[str, str]:
        if agent not in self.notes:
            raise NotFoundError(f"unknown agent {agent!r}")
        return self.notes[agent]
