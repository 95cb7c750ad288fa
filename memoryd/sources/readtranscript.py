"""`memory_get` of a transcript: its messages as the index holds them, never the raw JSONL.

A session hit is cited `<prefix>/<file>#L<a>-L<b>` with JSONL line numbers (the line map). Reading
that path serves the same redacted `User: …` / `Assistant: …` lines the index was built from, each
with the JSONL line it came from: `from` and `lines` count JSONL lines, so the citation's numbers
read back exactly the lines it cites (lines holding no message, such as tool calls, are left out).

Same path rules as memory files: the path names a session root by its prefix (or is absolute and
inside one), must not leave it, must be a transcript name outside ignored folders, and is read by
`memoryd.sources.safefile` from the root without following any symlink, checked on the opened
descriptor (a regular file within `files.max_transcript_bytes`, no hard link unless allowed).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from memoryd.config.settings import DEFAULT_MAX_TRANSCRIPT_BYTES
from memoryd.errors import AccessDeniedError, NotFoundError, SourceError
from memoryd.sources.readfile import FileSlice
from memoryd.sources.safefile import read_checked
from memoryd.sources.session_roots import SessionRoot, is_ignored, root_of, split_index_path
from memoryd.sources.transcripts import is_transcript_name, parse_transcript


def resolve_transcript(raw: str, roots: Sequence[SessionRoot]) -> tuple[Path, SessionRoot, str] | None:
    """(file, its root, the index path to report) when `raw` names a transcript in a session root; None when
    it is not a transcript path at all (no root of that prefix, or not a transcript name: the caller reads
    it as a memory file, which refuses what is not one). Raises AccessDeniedError for a transcript path
    that leaves its root or lies in an ignored folder."""
    if "\x00" in raw or not raw.strip():
        return None  # the memory reader refuses it, saying why
    text = raw.strip().replace("\\", "/")
    if not is_transcript_name(Path(text).name):
        return None
    if os.path.isabs(text):
        root = root_of(roots, text)
        if root is None:
            return None
        target = Path(os.path.normpath(text))
    else:
        found = split_index_path(roots, text)
        if found is None:
            return None
        root, rest = found
        base = os.path.normpath(root.path)
        target = Path(os.path.normpath(os.path.join(base, rest)))
        if not str(target).startswith(base.rstrip(os.sep) + os.sep) or ".." in rest.split("/"):
            raise AccessDeniedError(f"{raw}: outside the session folder {root.path}")
    shown = root.index_path(target)
    if is_ignored(shown.split("/")[1:-1]):
        raise AccessDeniedError(f"{raw}: in a folder memoryd never indexes")
    return target, root, shown


def read_transcript_bytes(root: Path, target: Path, shown: str, *, max_bytes: int, allow_hard_links: bool) -> bytes:
    """The bytes of a transcript below `root`, read by the safe reader; NotFoundError / SourceError as a
    client should see them (a refused file raises its RefusedFileError, an AccessDeniedError)."""
    try:
        data, _info = read_checked(
            target, max_bytes=max_bytes, allow_hard_links=allow_hard_links, root=root, shown=shown
        )
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise NotFoundError(f"{shown}: no such transcript") from None
    except OSError as exc:
        raise SourceError(f"cannot read {shown}: {exc.strerror or exc}") from None
    return data


def read_transcript(
    raw: str,
    roots: Sequence[SessionRoot],
    *,
    from_line: int | None = None,
    lines: int | None = None,
    subagents: bool = False,
    max_bytes: int = DEFAULT_MAX_TRANSCRIPT_BYTES,
    allow_hard_links: bool = False,
) -> FileSlice | None:
    """The messages on JSONL lines `from_line` .. `from_line + lines - 1` of a transcript; None when `raw` is
    not a transcript path (the caller then reads it as a memory file)."""
    resolved = resolve_transcript(raw, roots)
    if resolved is None:
        return None
    target, root, shown = resolved
    data = read_transcript_bytes(root.path, target, shown, max_bytes=max_bytes, allow_hard_links=allow_hard_links)
    transcript = parse_transcript(data, subagents=subagents)
    total = data.count(b"\n") + 1
    start = max(1, from_line or 1)
    end = start + max(1, lines) - 1 if lines else total
    texts = transcript.content.split("\n") if transcript.content else []
    picked = [(n, text) for n, text in zip(transcript.line_map, texts, strict=True) if start <= n <= end]
    return FileSlice(
        path=shown,
        text="\n".join(text for _, text in picked),
        from_line=start,
        lines=len(picked),
        total_lines=total,
        line_numbers=tuple(n for n, _ in picked),
        format=transcript.format,
    )
