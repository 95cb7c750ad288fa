"""A deterministic synthetic memory corpus: markdown notes and JSONL transcripts.

Words are pronounceable syllable strings drawn from a Zipf distribution, mixed with real English
function words at natural rates, so FTS5 sees realistic term statistics (a few very common
terms, a long tail). The same seed always writes the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
FUNCTION_WORDS = ["the", "of", "and", "to", "a", "in", "is", "it", "that", "for", "on", "was", "with", "as", "at", "by"]


@dataclass(frozen=True, slots=True)
class CorpusSpec:
    notes: int = 10_000
    transcripts: int = 1_000
    note_paragraphs: tuple[int, int] = (20, 100)  # lines per note
    transcript_messages: tuple[int, int] = (80, 320)
    vocabulary: int = 20_000
    seed: int = 7
    vocabulary_seed: int = 7
    """The vocabulary has its own seed: a query writer (another `seed`) then asks in the corpus's words
    (with one seed for both, queries were made of words the corpus never holds)."""


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        n = int(rng.integers(2, 5))
        words.add("".join(SYLLABLES[int(i)] for i in rng.integers(0, len(SYLLABLES), n)))
    return sorted(words)


class Writer:
    def __init__(self, spec: CorpusSpec) -> None:
        self.spec = spec
        self.words = np.array(vocabulary(spec.vocabulary, np.random.default_rng(spec.vocabulary_seed)))
        self.rng = np.random.default_rng(spec.seed)
        ranks = np.arange(1, spec.vocabulary + 1, dtype=np.float64)
        p = 1.0 / ranks**1.07
        self.p = p / p.sum()
        self._stream: list[str] = []
        self._pos = 0

    def _draw(self, n: int) -> list[str]:
        """The next `n` words of one long pre-drawn Zipf stream (one rng.choice per million words)."""
        if self._pos + n > len(self._stream):
            idx = self.rng.choice(len(self.words), size=1_000_000, p=self.p)
            glue = self.rng.random(1_000_000) < 0.3
            fn = self.rng.integers(0, len(FUNCTION_WORDS), 1_000_000)
            words = self.words[idx].tolist()
            self._stream = [f"{FUNCTION_WORDS[f]} {w}" if g else w for w, g, f in zip(words, glue, fn, strict=True)]
            self._pos = 0
        out = self._stream[self._pos : self._pos + n]
        self._pos += n
        return out

    def sentence(self, n: int) -> str:
        return " ".join(self._draw(n)).capitalize() + "."

    def note(self, i: int) -> str:
        lo, hi = self.spec.note_paragraphs
        lines = [f"# Note {i}: {self.sentence(4)}", ""]
        for j in range(int(self.rng.integers(lo, hi))):
            if j % 7 == 6:
                lines.extend(["", f"## {self.sentence(3)}", ""])
            lines.append(f"- {self.sentence(int(self.rng.integers(8, 30)))}")
        return "\n".join(lines) + "\n"

    def transcript(self, i: int) -> str:
        lo, hi = self.spec.transcript_messages
        base = 1_767_225_600 + i * 3600  # 2026-01-01 plus an hour per session
        rows = [orjson.dumps({"type": "session", "id": f"s{i}"}).decode()]
        for j in range(int(self.rng.integers(lo, hi))):
            role = "user" if j % 2 == 0 else "assistant"
            text = self.sentence(int(self.rng.integers(6, 40)))
            rows.append(
                orjson.dumps(
                    {
                        "type": "message",
                        "timestamp": base + j * 30,
                        "message": {"role": role, "content": [{"type": "text", "text": text}]},
                    }
                ).decode()
            )
        return "\n".join(rows) + "\n"

    def query(self) -> str:
        """A natural question: a few content words among function words."""
        content = [str(w) for w in self.words[self.rng.choice(len(self.words), size=3, p=self.p)]]
        return f"what did we say about the {content[0]} and {content[1]} {content[2]}?"


def write_corpus(root: Path, spec: CorpusSpec) -> Path:
    """Write the corpus under `root/ws` once (a marker file records the spec); return the workspace."""
    ws = root / "ws"
    marker = root / "corpus.json"
    wanted = orjson.dumps(_spec_dict(spec)).decode()
    if marker.exists() and marker.read_text() == wanted:
        return ws
    w = Writer(spec)
    for i in range(spec.notes):
        folder = ws / "memory" / f"{i % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}-note-{i}.md").write_text(w.note(i))
    sessions = ws / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    for i in range(spec.transcripts):
        (sessions / f"session-{i:05d}.jsonl").write_text(w.transcript(i))
    marker.write_text(wanted)
    return ws


def _spec_dict(spec: CorpusSpec) -> dict[str, object]:
    return {name: getattr(spec, name) for name in spec.__slots__}
