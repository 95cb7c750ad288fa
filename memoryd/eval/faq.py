"""Projects' FAQ pages as a markdown-notes corpus: questions about code and tools, answered in notes.

The shape LoCoMo lacks: long technical answers with commands, config and code blocks, in markdown
notes rather than chat turns. Input is a directory of FAQ markdown files (one per project, e.g.
ripgrep's FAQ.md, ruff's and poetry's docs/faq.md); each becomes `memory/<project>.md`.

Derived deterministically, since FAQs have no qrels: every question heading is a question, and its
evidence is the first line of its answer. So that a question cannot find itself, the notes keep the
answers but not the question headings (nor a table of contents linking to them): what remains is
what a user's notes on these tools would hold. Prose paragraphs are joined into one line each (as a
transcript holds one message per line), code blocks and list items keep their lines.

Question headings: the heading level most question-marked headings use is the question level; every
heading at that level is a question ("My requests are timing out!" too), deeper headings are part
of the answer unless they end with "?". Files are split into `groups` indexes round-robin by name,
so questions of one index can be asked of another that never mentions them (abstention).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from memoryd.errors import SourceError
from memoryd.eval.dataset import EvalSet, Group, Qrel

CATEGORY_NAMES: Mapping[int, str] = MappingProxyType({1: "faq"})
MEMORY_DIR = "memory"
DEFAULT_GROUPS = 2
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*(?:\{:[^}]*\})?\s*#*\s*$")
_HTML_HEADING = re.compile(r"^<h([1-6])\b[^>]*>\s*$")
_HTML_END = re.compile(r"^\s*</h[1-6]>\s*$")
_TOC_LINE = re.compile(r"^\s*[-*]\s*\[[^\]]*\]\(#[^)]*\)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*([-*+]|[0-9]+[.)])\s+")


@dataclass(frozen=True, slots=True)
class Entry:
    question: str
    answer: tuple[str, ...]  # the answer's note lines (paragraphs joined), blank lines kept


@dataclass(frozen=True, slots=True)
class Heading:
    line: int  # index into the file's lines where the heading starts
    end: int  # index just past it
    level: int
    text: str


def headings(lines: Sequence[str]) -> list[Heading]:
    """Markdown `#` headings and HTML `<hN>` blocks, outside code fences."""
    found: list[Heading] = []
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := _MD_HEADING.match(line)):
            found.append(Heading(i, i + 1, len(m.group(1)), _strip_markup(m.group(2))))
        elif not fenced and (h := _HTML_HEADING.match(line)):
            j = i + 1
            while j < len(lines) and not _HTML_END.match(lines[j]):
                j += 1
            found.append(Heading(i, j + 1, int(h.group(1)), _strip_markup(" ".join(lines[i + 1 : j]))))
            i = j
        i += 1
    return found


def _strip_markup(text: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their words
    return " ".join(text.replace("`", "").split())


def parse_faq(text: str) -> list[Entry]:
    """The questions of one FAQ page and their answers."""
    lines = text.splitlines()
    found = headings(lines)
    asked = Counter(h.level for h in found if h.text.endswith("?"))
    if not asked:
        return []
    level = min(lvl for lvl, n in asked.items() if n == max(asked.values()))
    questions = [h for h in found if h.level == level or (h.level > level and h.text.endswith("?"))]
    entries: list[Entry] = []
    for n, q in enumerate(questions):
        stop = len(lines)
        for h in found:
            if h.line > q.line and (h.level <= q.level or h in questions[n + 1 :]):
                stop = h.line
                break
        body = [line for line in lines[q.end : stop] if not _TOC_LINE.match(line)]
        entries.append(Entry(q.text, tuple(note_lines(body))))
    return entries


def note_lines(body: Sequence[str]) -> list[str]:
    """Answer lines as notes: a prose paragraph becomes one line, code and list items stay as written;
    leading and trailing blank lines dropped, runs of blank lines kept to one."""
    out: list[str] = []
    paragraph: list[str] = []
    fenced = False

    def flush() -> None:
        if paragraph:
            out.append(" ".join(p.strip() for p in paragraph))
            paragraph.clear()

    for line in body:
        if _FENCE.match(line):
            flush()
            fenced = not fenced
            out.append(line.rstrip())
        elif fenced:
            out.append(line.rstrip())
        elif not line.strip():
            flush()
            if out and out[-1] != "":
                out.append("")
        elif _LIST_ITEM.match(line) or line.startswith(("#", "<", "|", ">")) or line.startswith("    "):
            flush()
            out.append(line.rstrip())
        else:
            paragraph.append(line)
    flush()
    while out and out[-1] == "":
        out.pop()
    while out and out[0] == "":
        out.pop(0)
    return out


def note(project: str, entries: Sequence[Entry]) -> tuple[str, list[int]]:
    """The note of one project and, per entry, the 1-based line its answer starts on (0: empty answer)."""
    lines = [f"# {project}", ""]
    starts: list[int] = []
    for entry in entries:
        starts.append(len(lines) + 1 if entry.answer else 0)
        lines.extend(entry.answer)
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n", starts


def load_faq(path: Path, *, groups: int = DEFAULT_GROUPS) -> EvalSet:
    """Every `*.md` FAQ page in the directory `path`, split into `groups` indexes."""
    try:
        pages = sorted(p for p in path.iterdir() if p.suffix in (".md", ".mdx") and p.is_file())
    except OSError as exc:
        raise SourceError(f"cannot read the FAQ directory {path}: {exc.strerror or exc}") from exc
    if not pages:
        raise SourceError(f"no FAQ pages (*.md) in {path}")
    digest = hashlib.sha256()
    count = max(1, min(groups, len(pages)))
    files: list[dict[str, str]] = [{} for _ in range(count)]
    questions: list[list[Qrel]] = [[] for _ in range(count)]
    totals = {"pages": 0, "questions": 0, "skipped_no_evidence": 0, "lines": 0}
    for index, page in enumerate(pages):
        try:
            data = page.read_bytes()
        except OSError as exc:
            raise SourceError(f"cannot read FAQ page {page}: {exc.strerror or exc}") from exc
        digest.update(page.name.encode() + b"\0" + data)
        project = page.stem.lower()
        entries = parse_faq(data.decode("utf-8", errors="replace"))
        rel = f"{MEMORY_DIR}/{project}.md"
        text, starts = note(project, entries)
        files[index % count][rel] = text
        totals["pages"] += 1
        totals["lines"] += text.count("\n")
        for n, (entry, start) in enumerate(zip(entries, starts, strict=True), 1):
            totals["questions"] += 1
            if start == 0:
                totals["skipped_no_evidence"] += 1
                continue
            questions[index % count].append(Qrel(f"{project}:q{n:03d}", entry.question, 1, frozenset({(rel, start)})))
    built = tuple(Group(f"faq-{g + 1}", files[g], tuple(questions[g])) for g in range(count))
    return EvalSet("faq", "FAQ notes", built, CATEGORY_NAMES, digest.hexdigest(), totals)
