"""What every retrieval dev set becomes: workspaces of files and questions with line-level evidence.

Each converter (`locomo`, `realtalk`, `faq`) turns its public data into an `EvalSet`: groups of
files, each group indexed as one agent's workspace, and the questions asked of that group with the
(file, line) pairs that answer them. The harness knows nothing else about a set.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from memoryd.errors import SourceError
from memoryd.eval.metrics import EvidenceLine

WORKSPACE_DIRS = ("sessions", "memory")
"""Where converted files live in a workspace: transcripts and markdown notes."""
_SUFFIXES = (".jsonl", ".md")


@dataclass(frozen=True, slots=True)
class Qrel:
    """A question and the lines (workspace-relative path, 1-based line) that answer it."""

    qid: str
    question: str
    category: int
    lines: frozenset[EvidenceLine]


@dataclass(frozen=True, slots=True)
class Group:
    """Files indexed together as one agent's workspace, and the questions asked of that index."""

    agent_id: str
    files: Mapping[str, str]
    questions: tuple[Qrel, ...]


@dataclass(frozen=True, slots=True)
class EvalSet:
    """A converted dev set: its groups, category names, source checksum and sizes worth printing."""

    name: str
    title: str
    groups: tuple[Group, ...]
    categories: Mapping[int, str]
    sha256: str
    counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def files(self) -> int:
        return sum(len(g.files) for g in self.groups)

    def sample(self, per_group: int) -> EvalSet:
        """At most `per_group` questions of each group, the same ones on every run and machine: those
        whose id hashes lowest (so the sample is spread over the categories as the set is)."""
        if per_group <= 0:
            return self
        groups = tuple(
            replace(g, questions=tuple(sorted(g.questions, key=stable_key)[:per_group])) for g in self.groups
        )
        return replace(self, groups=groups, counts={**self.counts, "sampled_per_group": per_group})


def stable_key(q: Qrel) -> str:
    """A question's place in every fixed sample: the sha256 of its id, the same on every run and machine."""
    return hashlib.sha256(q.qid.encode()).hexdigest()


def write_workspace(root: Path, files: Mapping[str, str]) -> None:
    """Write the files under `root`, leaving identical files untouched so a reused index stays valid,
    and removing converted files left from an earlier conversion."""
    wanted = {root / rel for rel in files}
    try:
        for name in WORKSPACE_DIRS:
            folder = root / name
            if folder.is_dir():
                for stale in _converted_in(folder):
                    if stale not in wanted:
                        stale.unlink()
        for rel, text in files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            data = text.encode()
            if not target.is_file() or target.read_bytes() != data:
                target.write_bytes(data)
    except OSError as exc:
        raise SourceError(f"cannot write the workspace {root}: {exc.strerror or exc}") from exc


def _converted_in(directory: Path) -> Iterable[Path]:
    with os.scandir(directory) as entries:
        return [Path(e.path) for e in entries if e.name.endswith(_SUFFIXES)]
