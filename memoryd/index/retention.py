"""Memory outlives its source: a deleted transcript stays searchable and readable (`transcripts.retain`).

Claude Code deletes sessions older than `cleanupPeriodDays` (30 by default), and users lose transcripts in
other ways; pruning their rows would forget a decision exactly when it becomes hard to remember. So each
transcript the indexer reads is also kept, redacted, in the retention store (`memoryd.store.retained`),
and a listing pass that no longer finds a retained file marks it gone instead of pruning its rows. Gone
transcripts are a source the index reads like a file: when their rows are missing (a full rebuild into a
new database, after a model change, corruption or `--force`) they are chunked again from the store and
embedded and written as any file, so no rebuild loses them. Search results from them carry `retained:
true`; `memory_get` of their path serves the retained text with its original JSONL line numbers.

Markdown notes are never retained: a user who deletes a note means it. A transcript under a session root
that is no longer configured (or with `sources` lacking "sessions") is kept in the store but not served.
`transcripts.retain_days` drops gone transcripts whose last message is older; `forget` (memoryd.index.forget)
deletes them for good. Blocking code: the indexer and the engine call it in worker threads.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import structlog

from memoryd.config import AgentConfig, ChunkingSettings, FilesSettings
from memoryd.errors import CorruptDatabaseError, MemorydError, StoreError
from memoryd.index.sync import Outcome, Prepared, read_source
from memoryd.search.request import SearchResponse
from memoryd.sources.chunking import split_for_input_limit
from memoryd.sources.discovery import SourceFile
from memoryd.sources.readfile import FileSlice
from memoryd.sources.transcripts import Transcript, chunk_transcript, parse_transcript
from memoryd.store.db import connect, fsync_dir, move_aside, quick_check
from memoryd.store.index import now_ms
from memoryd.store.retained import Retained, RetentionStore, retained_path
from memoryd.store.salvage import salvage

log = structlog.get_logger(__name__)

DAY_MS = 86_400_000


class Retention:
    """One agent's retained transcripts: what the indexer keeps, marks gone and restores, and what is served."""

    def __init__(self, agent: AgentConfig) -> None:
        self.agent = agent
        self.enabled = agent.settings.transcripts.retain
        self.days = agent.settings.transcripts.retain_days
        self.path = retained_path(agent.db_path)
        self.gone: frozenset[str] = frozenset()
        """Index paths of the transcripts served from the store (their file is gone)."""
        self._gone_abs: dict[str, str] = {}
        self._store: RetentionStore | None = None
        self.last_check: dict[str, object] | None = None
        """The last integrity check of the store, and what a salvage kept (status)."""

    # ---------------------------------------------------------------- lifecycle

    def store(self) -> RetentionStore:
        """The writer connection, opened on first use; a damaged file is salvaged (`salvage`)."""
        if self._store is None:
            try:
                self._store = RetentionStore.open(self.path)
            except CorruptDatabaseError as exc:
                self._salvage(str(exc))
                self._store = RetentionStore.open(self.path)
        return self._store

    def check(self) -> str | None:
        """SQLite's quick_check over the store on a reader of its own (the writer carries on; blocking, O(size)):
        what it found, or None (`salvage` then, with no writer at work). Status says what the check found."""
        if not os.path.exists(self.path):
            return None
        try:
            conn, _vec = connect(self.path, readonly=True, vec_enabled=False)
        except CorruptDatabaseError as exc:
            problem: str | None = str(exc)
        else:
            try:
                problem = quick_check(conn)
            finally:
                conn.close()
        self.last_check = {"at": now_ms(), "result": problem or "ok"}
        return problem

    def salvage(self, problem: str) -> None:
        """A damaged store replaced by what can be read of it; the caller keeps every writer away meanwhile."""
        self.close()
        self._salvage(problem)

    def _salvage(self, problem: str) -> None:
        """Rows still readable into a new store, the damaged file moved aside beside it (never deleted)."""
        log.warning("retention store damaged; salvaging what it holds", path=str(self.path), error=problem)
        fresh = self.path.with_name(f"{self.path.name}.salvage-{now_ms()}")
        try:
            saved = salvage(self.path, fresh)
        except BaseException:  # the damaged file stays in place; no half-written copy is left beside it
            for ext in ("", "-wal", "-shm"):
                Path(f"{fresh}{ext}").unlink(missing_ok=True)
            raise
        moved = move_aside(self.path, f"corrupt-{now_ms()}", then="what could be read of it is in a new store")
        os.replace(fresh, self.path)
        fsync_dir(self.path.parent)
        self.last_check = {
            "at": now_ms(),
            "result": problem,
            "salvaged": saved.kept,
            "unreadable": saved.unreadable,
            "movedTo": str(moved),
        }
        if self.active:
            self.refresh()

    def open(self) -> None:
        """Learn which transcripts are served from the store (when there is one: nothing is created here)."""
        if os.path.exists(self.path):
            try:
                self.refresh()
            except StoreError as exc:
                log.warning("cannot read the retention store", path=str(self.path), error=str(exc))

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def refresh(self) -> None:
        gone = {p: a for p, a in self.store().gone().items() if self.served(p)} if self.active else {}
        self._gone_abs = gone
        self.gone = frozenset(gone)

    @property
    def active(self) -> bool:
        """Whether deleted transcripts are kept and served for this agent now."""
        return self.enabled and "sessions" in self.agent.settings.sources

    def served(self, path: str) -> bool:
        """A transcript of a session root the agent still has (its prefix names one)."""
        prefix = path.split("/", 1)[0]
        return any(root.prefix == prefix for root in self.agent.session_roots)

    # ---------------------------------------------------------------- the indexer's hooks

    def known(self) -> dict[str, str]:
        """Index path -> hash of every retained transcript ({} when retention is off)."""
        return self.store().known() if self.active else {}

    def record(self, items: Sequence[Prepared], known: dict[str, str], rules: FilesSettings, subagents: bool) -> int:
        """Keep what this batch read of each transcript (new or changed; a file already indexed before
        retention existed is read once more here). Returns how many were written."""
        if not self.active:
            return 0
        entries: list[Retained] = []
        stamp = now_ms()
        for item in items:
            f = item.file
            if f.source != "sessions" or item.outcome not in (Outcome.CHANGED, Outcome.TOUCHED, Outcome.UNCHANGED):
                continue
            if known.get(f.path) == item.hash and f.path not in self.gone:
                continue
            transcript, total = item.transcript, item.total_lines
            if transcript is None:
                transcript, total = _read(f, rules, subagents)
            if transcript is None or not transcript.content:
                continue
            entries.append(Retained(f.path, str(f.abs_path), transcript, total, item.size, item.mtime_ns, stamp))
            known[f.path] = transcript.hash
        if entries:
            store = self.store()
            with store.transaction():
                store.put(entries)
            if self.gone & {e.path for e in entries}:
                self.refresh()  # a deleted transcript is back on disk
        return len(entries)

    def keep_vanished(self, items: list[Prepared], known: dict[str, str]) -> list[Prepared]:
        """A retained transcript deleted before it was read (a targeted sync of a deleted file, or one gone
        between listing and reading) keeps its rows, served from the store from now on."""
        if not self.active:
            return items
        gone = {
            i.file.path
            for i in items
            if i.outcome is Outcome.VANISHED and i.file.source == "sessions" and i.file.path in known
        }
        gone = {p for p in gone if self.served(p)}
        if not gone:
            return items
        store = self.store()
        with store.transaction():
            store.mark_gone(sorted(gone), now_ms())
        self.refresh()
        log.info("transcripts deleted from disk; kept from the retention store", agent=self.agent.id, n=len(gone))
        return [
            Prepared(i.file, Outcome.UNCHANGED, hash=known[i.file.path]) if i.file.path in gone else i for i in items
        ]

    def vanished(self, listed: Iterable[str], known: dict[str, str], keep: Callable[[str], bool]) -> frozenset[str]:
        """After a listing pass: retained transcripts it did not find (and not in a place that could not be
        listed) are gone from disk; returns every transcript served from the store now."""
        if not self.active:
            return frozenset()
        seen = set(listed)
        newly = [p for p in known if p not in seen and p not in self.gone and self.served(p) and not keep(p)]
        if newly:
            store = self.store()
            with store.transaction():
                store.mark_gone(newly, now_ms())
            log.info(
                "transcripts deleted from disk; kept from the retention store", agent=self.agent.id, count=len(newly)
            )
        if newly or self.gone:
            self.refresh()
        return self.gone

    def restorable(self, indexed: set[str]) -> list[str]:
        """Gone transcripts whose rows the index lacks (a new database after a rebuild), oldest-expiry first."""
        return sorted(p for p in self.gone if p not in indexed)

    def prepare_restored(
        self, paths: Sequence[str], chunking: ChunkingSettings, max_input_bytes: int | None
    ) -> list[Prepared]:
        """Retained transcripts as prepared files: chunked from the store exactly as their file was."""
        out: list[Prepared] = []
        for entry in self.store().entries(paths):
            t = entry.transcript
            chunks = chunk_transcript(t, chunking.tokens, chunking.overlap, chunking.transcripts)
            if max_input_bytes is not None:
                chunks = split_for_input_limit(chunks, max_input_bytes)
            file = SourceFile("sessions", entry.path, Path(entry.abs_path))
            out.append(
                Prepared(
                    file,
                    Outcome.CHANGED,
                    hash=t.hash,
                    mtime_ns=entry.mtime_ns,
                    size=entry.size,
                    bad_lines=t.malformed_lines,
                    chunks=chunks,
                    format=t.format,
                )
            )
        return out

    def expired(self) -> list[str]:
        """Gone transcripts older than `retain_days` (none when it is 0)."""
        if not self.active or self.days <= 0 or not self.gone:
            return []
        return self.store().expired(now_ms() - self.days * DAY_MS)

    def drop(self, paths: Sequence[str]) -> None:
        """Delete transcripts from the store (their index rows are the caller's)."""
        if not paths:
            return
        store = self.store()
        with store.transaction():
            store.delete(paths)
        self.refresh()

    def report(self) -> dict[str, object]:
        """Status: whether deleted transcripts are kept, how many are served from the store, where it is."""
        out: dict[str, object] = {
            "enabled": self.active,
            "retained": len(self.gone),
            "retainDays": self.days,
            "path": str(self.path),
        }
        if self.last_check is not None:
            out["integrityCheck"] = self.last_check
        return out

    # ---------------------------------------------------------------- serving

    def lookup(self, raw: str) -> str | None:
        """The index path of a served transcript named as results name it, or by where it was on disk."""
        text = raw.strip().replace("\\", "/")
        if text in self.gone:
            return text
        if os.path.isabs(text):
            target = os.path.normpath(text)
            return next((p for p, a in self._gone_abs.items() if os.path.normpath(a) == target), None)
        return None

    def read(self, raw: str, *, from_line: int | None, lines: int | None) -> FileSlice | None:
        """`memory_get` of a transcript served from the store; None when `raw` names none."""
        path = self.lookup(raw) if self.gone else None
        if path is None:
            return None
        reader = RetentionStore.open(self.path, readonly=True)
        try:
            entry = reader.get(path)
        finally:
            reader.close()
        if entry is None:
            return None
        t = entry.transcript
        start = max(1, from_line or 1)
        end = start + max(1, lines) - 1 if lines else entry.total_lines
        texts = t.content.split("\n") if t.content else []
        picked = [(n, text) for n, text in zip(t.line_map, texts, strict=True) if start <= n <= end]
        return FileSlice(
            path=path,
            text="\n".join(text for _, text in picked),
            from_line=start,
            lines=len(picked),
            total_lines=entry.total_lines,
            line_numbers=tuple(n for n, _ in picked),
            format=t.format,
            retained=True,
        )

    def mark(self, resp: SearchResponse) -> SearchResponse:
        """Flag results whose transcript is served from the store (`retained: true`)."""
        gone = self.gone
        if not gone or not any(r.source == "sessions" and r.path in gone for r in resp.results):
            return resp
        results = [
            dataclasses.replace(r, retained=True) if r.source == "sessions" and r.path in gone else r
            for r in resp.results
        ]
        return dataclasses.replace(resp, results=results)


def _read(file: SourceFile, rules: FilesSettings, subagents: bool) -> tuple[Transcript | None, int]:
    """A transcript indexed before retention existed, read once to keep it (None when it cannot be)."""
    try:
        data, _st = read_source(file, rules)
    except (OSError, MemorydError) as exc:  # gone, unreadable or refused: not kept, as it is not indexed
        log.debug("transcript not retained", path=file.path, error=str(exc))
        return None, 0
    return parse_transcript(data, subagents=subagents), data.count(b"\n") + 1
