"""Public text for the redaction benchmark: realistic transcript messages and a prose+code corpus.

Everything comes from what this interpreter ships or has installed, so the same environment always
gives the same bytes and nothing is downloaded: the Python reference documentation
(`pydoc_data.topics`), the standard library's sources (tests excluded: they plant keys on purpose),
and the README of every installed distribution (its `METADATA` long description: markdown prose,
shell commands, URLs, version strings).
"""

from __future__ import annotations

import importlib.metadata
import pydoc_data.topics
import random
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_SKIP_DIRS = frozenset({"test", "tests", "idlelib", "lib2to3", "site-packages", "dist-packages", "__pycache__"})


@dataclass(frozen=True, slots=True)
class Sources:
    prose: list[str]
    """Paragraphs of documentation and READMEs."""
    code: list[str]
    """Blocks of standard library source (blank-line separated)."""


def _paragraphs(text: str) -> Iterator[str]:
    for block in text.split("\n\n"):
        paragraph = block.strip()
        if 40 <= len(paragraph) <= 4000:
            yield paragraph


def load_sources() -> Sources:
    prose: list[str] = []
    for key in sorted(pydoc_data.topics.topics):
        prose.extend(_paragraphs(pydoc_data.topics.topics[key]))
    for dist in sorted(importlib.metadata.distributions(), key=lambda d: d.metadata["Name"] or ""):
        if dist.metadata["Name"] == "memoryd":
            continue  # its README changes with every commit; the corpus must not
        description = dist.metadata.get_payload() if hasattr(dist.metadata, "get_payload") else ""
        if isinstance(description, str):
            prose.extend(_paragraphs(description))
    code: list[str] = []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.rglob("*.py")):
        if _SKIP_DIRS & set(path.relative_to(stdlib).parts):
            continue
        try:
            code.extend(_paragraphs(path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return Sources(prose, code)


def transcript_messages(sources: Sources, megabytes: float, seed: int = 7) -> list[str]:
    """Messages shaped like an agent session's: short user questions in prose, assistant answers of
    prose paragraphs, often with a fenced code block, a command or a file path."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        if len(out) % 2 == 0:
            sentences = rng.choice(sources.prose).split(". ")
            message = ". ".join(sentences[: rng.randint(1, 3)])
        else:
            parts = [rng.choice(sources.prose) for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.6:
                parts.insert(rng.randint(0, len(parts)), "```python\n" + rng.choice(sources.code) + "\n```")
            message = "\n\n".join(parts)
        out.append(message)
        size += len(message.encode())
    return out


def prose_and_code(sources: Sources, megabytes: float, seed: int = 11) -> list[str]:
    """Half documentation prose, half source code, as units (paragraphs / code blocks)."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        unit = rng.choice(sources.prose if len(out) % 2 == 0 else sources.code)
        out.append(unit)
        size += len(unit.encode())
    return out
