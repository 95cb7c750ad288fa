"""What `memory_write` appends, and where in the file: pure functions, no file system.

`check_entry` turns a model's text and heading into an `Entry` or refuses them (`WriteRefusedError`
says why and never repeats a secret). `place` computes the exact bytes to append to a file's current
content and the lines the entry will occupy.

Append only, also "under a heading": an entry is filed under `## heading` by appending it when that
heading is the file's last heading, and otherwise by appending a new `## heading` section at the end
of the file. It is never inserted in the middle: that would rewrite every byte after the insertion
point (not append-only, and not atomic against an editor saving at the same moment). A heading used
in several sessions of a daily note therefore appears once per run of entries, each time at the end.

Headings are ATX headings (`#` to `######`, up to 3 spaces of indentation) outside fenced code;
setext headings (`Title` over `===`) are not looked for. Fences follow CommonMark: 3+ backticks or
tildes, closed by the same character at least as long.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from memoryd.errors import WriteRefusedError
from memoryd.sources.redact import secret_kinds

MAX_TEXT_BYTES = 16 * 1024
"""The largest entry, in UTF-8 bytes (16 KiB)."""
MAX_HEADING_CHARS = 200

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


@dataclass(frozen=True, slots=True)
class Entry:
    """Checked text (line endings `\\n`, no leading blank lines, no trailing whitespace) and heading."""

    text: str
    heading: str | None


@dataclass(frozen=True, slots=True)
class Placement:
    """The bytes to append and, counted in the content they were computed for, the entry's lines."""

    block: bytes
    start_line: int
    end_line: int
    entry_offset: int
    """Where the entry (its time stamp line) starts inside `block`."""
    created_heading: bool


def check_entry(text: str, heading: str | None) -> Entry:
    """The entry to save, or WriteRefusedError naming what is wrong (a secret by its kind only)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    body = "\n".join(lines).rstrip()
    if not body:
        raise WriteRefusedError("text is empty: give the memory to save")
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise WriteRefusedError(
            f"text is {size:,} bytes of UTF-8; an entry holds at most {MAX_TEXT_BYTES:,} (16 KiB): "
            "shorten it, or save it as several entries"
        )
    _refuse_unwritable(body, "text")
    open_fence = _open_fence_line(body.split("\n"))
    if open_fence is not None:
        raise WriteRefusedError(
            f"text opens a code fence on its line {open_fence} and does not close it: close it, so the "
            "rest of the file stays outside the code block"
        )
    return Entry(body, _check_heading(heading))


def _check_heading(heading: str | None) -> str | None:
    if heading is None:
        return None
    name = heading.strip().lstrip("#").strip()
    if not name:
        raise WriteRefusedError("heading is empty: give the section's name, e.g. 'Decisions', or leave it out")
    if "\n" in name or "\r" in name:
        raise WriteRefusedError("heading must be one line")
    if len(name) > MAX_HEADING_CHARS:
        raise WriteRefusedError(f"heading is {len(name)} characters; at most {MAX_HEADING_CHARS}")
    _refuse_unwritable(name, "heading")
    return name


def _refuse_unwritable(value: str, field: str) -> None:
    control = _CONTROL.search(value)
    if control is not None:
        raise WriteRefusedError(
            f"{field} contains a control character (U+{ord(control.group()):04X}); only tabs and line breaks are kept"
        )
    kinds = secret_kinds(value)
    if kinds:
        raise WriteRefusedError(
            f"{field} contains what looks like a secret ({', '.join(kinds)}): memory files are plain text that "
            "gets synced, shared and pasted into prompts, so memory_write never saves secrets. Remove it (you "
            "may note where it is kept, e.g. 'the key is in the password manager') and write again"
        )


def stamp_line(now: datetime) -> str:
    """The entry's first line: when it was saved, in the agent's local time with its UTC offset."""
    offset = now.strftime("%z") or "+0000"
    return f"_{now:%Y-%m-%d %H:%M} {offset[:3]}:{offset[3:]}_"


def place(existing: bytes, entry: Entry, stamp: str, *, title: str) -> Placement:
    """What to append to a file whose content is `existing`, so that `entry` ends up as its last block.

    `title` (a `# ...` line) starts a file that is empty or blank. A file that ends inside an open
    code fence gets the fence closed first, so the entry is not swallowed by it.
    """
    text = existing.decode("utf-8", "replace")
    parts: list[str] = []
    if text and not text.endswith("\n"):
        parts.append("\n")
    lines = (text + "".join(parts)).split("\n")[:-1]  # complete lines
    if not text.strip():
        parts.append(f"# {title}\n\n")
    else:
        fence = _trailing_open_fence(lines)
        if fence is not None:
            parts.append(f"{fence}\n\n")
        elif lines[-1].strip():
            parts.append("\n")  # one blank line between the last block and the entry
    created_heading = False
    if entry.heading is not None and not _same_heading(_last_heading(lines), entry.heading):
        parts.append(f"## {entry.heading}\n\n")
        created_heading = True
    prefix = "".join(parts)
    start = (text + prefix).count("\n") + 1
    entry_text = f"{stamp}\n{entry.text}\n"
    block = (prefix + entry_text).encode("utf-8", "surrogatepass")
    return Placement(
        block=block,
        start_line=start,
        end_line=start + entry_text.count("\n") - 1,
        entry_offset=len(prefix.encode("utf-8")),
        created_heading=created_heading,
    )


def _same_heading(found: tuple[int, str] | None, wanted: str) -> bool:
    return found is not None and found[0] == 2 and _normal(found[1]) == _normal(wanted)


def _normal(name: str) -> str:
    return " ".join(name.split()).casefold()


def _last_heading(lines: list[str]) -> tuple[int, str] | None:
    """(level, text) of the last ATX heading outside fenced code, or None."""
    last: tuple[int, str] | None = None
    fence: str | None = None
    for line in lines:
        fence, is_code = _step_fence(fence, line)
        if is_code:
            continue
        match = _ATX.match(line)
        if match is not None:
            last = (len(match.group(1)), (match.group(2) or "").strip())
    return last


def _trailing_open_fence(lines: list[str]) -> str | None:
    """The closing line a file needs when it ends inside a fenced code block, or None."""
    fence: str | None = None
    for line in lines:
        fence, _ = _step_fence(fence, line)
    return fence


def _open_fence_line(lines: list[str]) -> int | None:
    """The 1-based line of a fence that `lines` open and never close, or None."""
    fence: str | None = None
    opened = 0
    for number, line in enumerate(lines, start=1):
        before = fence
        fence, _ = _step_fence(fence, line)
        if before is None and fence is not None:
            opened = number
    return opened if fence is not None else None


def _step_fence(fence: str | None, line: str) -> tuple[str | None, bool]:
    """Fence state after `line` (the opening run, or None outside code) and whether `line` is code or fence."""
    match = _FENCE.match(line)
    if fence is None:
        if match is None:
            return None, False
        run, info = match.group(1), match.group(2)
        if run[0] == "`" and "`" in info:
            return None, False  # not a fence: a backtick fence's info string has no backticks
        return run, True
    closes = match is not None and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence)
    if closes and match is not None and not match.group(2).strip():
        return None, True
    return fence, True
