"""Session transcripts exported as markdown for QMD to index (spec §4.5 "Session export").

Each transcript becomes `<export_dir>/<name>.md`: `# Session <name>`, a blank line, then the same
`User: …` / `Assistant: …` text the builtin index uses — only user and assistant text, secrets
masked by the same redaction. Transcripts older than the retention are not exported, and exports
whose transcript is gone (or too old) are removed, so nothing forgotten lingers in QMD.

Unlike OpenClaw, each export keeps its line map: a QMD hit in an export is cited as the transcript
itself, `sessions/<name>.jsonl` at its JSONL lines, exactly as the builtin index cites it. Every
session root is exported (`sessions_dir` and the presets'); a transcript below the top of its root,
or in another root than `sessions_dir`, is named after its whole index path (`/` becomes `__`).

All functions here block (file I/O); callers run them in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from memoryd.config.settings import DEFAULT_MAX_TRANSCRIPT_BYTES
from memoryd.runtime.private import make_private_dirs
from memoryd.sources.discovery import list_all_session_files
from memoryd.sources.safefile import RefusedFileError, read_checked
from memoryd.sources.session_roots import SESSIONS_PREFIX, SessionRoot
from memoryd.sources.transcripts import parse_transcript

log = structlog.get_logger(__name__)

HEADER_LINES = 2  # "# Session <name>" and a blank line before the content
_DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class ExportedSession:
    """Where an export came from, so its lines can be cited as the transcript's."""

    transcript_path: str  # as the builtin index stores it: sessions/<name>
    line_map: tuple[int, ...]  # content line i (0-based) -> JSONL line
    mtime_ns: int
    hash: str

    def transcript_lines(self, start: int, end: int) -> tuple[int, int] | None:
        """JSONL lines for export lines start..end (1-based); None when the range holds no message."""
        first = max(start, HEADER_LINES + 1) - HEADER_LINES - 1
        last = min(end - HEADER_LINES - 1, len(self.line_map) - 1)
        if first > last or not self.line_map:
            return None
        return self.line_map[first], self.line_map[last]


@dataclass(slots=True)
class ExportReport:
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped_old: int = 0


def export_name(transcript_name: str) -> str:
    """`abc.jsonl` -> `abc.md`; archives keep their suffix: `abc.jsonl.deleted.<TS>` -> `abc.jsonl.deleted.<TS>.md`.

    An index path (`codex/2026/01/05/x.jsonl`) is flattened first; `sessions/<name>` is named by `<name>` alone.
    """
    name = transcript_name.removeprefix(f"{SESSIONS_PREFIX}/")
    name = name.replace("/", "__")
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return f"{stem}.md"


def render(name: str, content: str) -> str:
    body = content.strip() or "(empty)"
    return f"# Session {name}\n\n{body}\n"


@dataclass(slots=True)
class SessionExporter:
    """Keeps `export_dir` equal to the transcripts of `sessions_dir` (or of `roots`) within the retention."""

    sessions_dir: Path
    export_dir: Path
    retention_days: int = 0
    roots: tuple[SessionRoot, ...] = ()
    subagents: bool = False  # transcripts.subagents
    exported: dict[str, ExportedSession] = field(default_factory=dict)  # export file name -> origin
    max_bytes: int = DEFAULT_MAX_TRANSCRIPT_BYTES  # files.max_transcript_bytes
    allow_hard_links: bool = False  # files.allow_hard_links

    def export(self, now_s: float | None = None) -> ExportReport:
        report = ExportReport()
        make_private_dirs(self.export_dir)
        cutoff = None
        if self.retention_days > 0:
            cutoff = (time.time() if now_s is None else now_s) - self.retention_days * _DAY_S
        keep: dict[str, ExportedSession] = {}
        for source in list_all_session_files(self.roots or (SessionRoot(SESSIONS_PREFIX, self.sessions_dir),)):
            try:
                st = source.abs_path.stat()
            except OSError:
                continue
            if cutoff is not None and st.st_mtime < cutoff:
                report.skipped_old += 1
                continue
            name = export_name(source.path)
            known = self.exported.get(name)
            if known is not None and known.mtime_ns == st.st_mtime_ns and (self.export_dir / name).exists():
                keep[name] = known
                report.unchanged += 1
                continue
            try:
                data, _info = read_checked(
                    source.abs_path,
                    max_bytes=self.max_bytes,
                    allow_hard_links=self.allow_hard_links,
                    root=source.root,
                    shown=source.path,
                )
            except RefusedFileError as exc:
                log.warning("transcript refused; not exported", path=str(source.abs_path), error=str(exc))
                continue
            except OSError as exc:
                log.warning("transcript unreadable; not exported", path=str(source.abs_path), error=exc.strerror)
                continue
            transcript = parse_transcript(data, subagents=self.subagents)
            origin = ExportedSession(source.path, transcript.line_map, st.st_mtime_ns, transcript.hash)
            if known is None or known.hash != origin.hash or not (self.export_dir / name).exists():
                _write_atomic(self.export_dir / name, render(Path(name).stem, transcript.content))
                report.written += 1
            else:
                report.unchanged += 1
            keep[name] = origin
        for entry in os.scandir(self.export_dir):
            if entry.name.endswith(".md") and entry.name not in keep and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    report.removed += 1
        self.exported = keep
        return report


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
