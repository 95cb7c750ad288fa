"""kill -9 during delta syncs and full rebuilds of the real daemon, and torn WALs: nothing is lost.

Each trial changes the sources while the daemon is down (edits, deletions, new notes, a grown and a
rewritten transcript), starts the daemon armed with a crash point picked by a seeded RNG (and which
hit of it, `MEMORYD_CRASH_SKIP`), and checks what the kill left: the index opens, is intact, and
every file's rows are exactly its previous or its new version (a rebuild: all previous or all new).
Then a clean start must remove every temporary file and converge: the new content is found, the
deleted content is gone. The random-delay trials kill the daemon from outside at a random moment
of a big sync instead. The power-loss trials cut the WAL at a random byte after a kill.
"""

from __future__ import annotations

import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memoryd.config import ChunkingSettings
from tests.conftest import transcript_line, write
from tests.integration.daemon_fixture import Daemon
from tests.survival.conftest import DaemonFactory, query
from tests.survival.consistency import Key, Version, check_database, leftovers, versions_of

pytestmark = pytest.mark.integration

CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch = false
[agents.main]
workspace = "{ws}"
chunking = {{ tokens = {tokens}, overlap = 8 }}
"""
TOKENS = (40, 56)  # alternating chunk sizes: a changed chunk size forces a full rebuild on start
OVERLAP = 8
DELTA_POINTS = ("store:before-commit", "sync:after-batch")
REINDEX_POINTS = (
    "store:before-commit",
    "reindex:building",
    "reindex:before-swap",
    "reindex:wal-removed",
    "reindex:after-swap",
)
# How many hits of each point a trial's sync passes at least (2 batches of files, then prune/meta).
HITS = {
    ("delta", "store:before-commit"): 3,
    ("delta", "sync:after-batch"): 2,
    ("reindex", "store:before-commit"): 3,
    ("reindex", "reindex:building"): 2,
}
WORDS = [
    "river",
    "lantern",
    "copper",
    "meadow",
    "signal",
    "harbor",
    "violet",
    "engine",
    "ladder",
    "orchard",
    "winter",
    "parcel",
]


class Corpus:
    """An agent's sources and every byte of them, changed by seeded random edits."""

    def __init__(self, ws: Path, rng: random.Random, files: int) -> None:
        self.ws = ws
        self.rng = rng
        self.generation = 0
        self.next_note = files
        self.current: dict[Key, bytes | None] = {}
        for i in range(files):
            self.current[("memory", f"memory/n{i:04d}.md")] = self._note(i)
        for j in range(3):
            self.current[("sessions", f"sessions/s{j}.jsonl")] = self._transcript(j, 4)
        self._write(self.current)

    def token(self, key: Key) -> str:
        """The word only the current version of this note contains."""
        return f"g{self.generation}n{int(key[1][-7:-3])}"

    def _note(self, i: int) -> bytes:
        g = self.generation
        lines = [f"# Note {i} generation {g}", "", f"Marker g{g}n{i} opens this note."]
        lines += [f"Line {k}: {' '.join(self.rng.choices(WORDS, k=6))} g{g}n{i}k{k}." for k in range(8)]
        return ("\n".join(lines) + "\n").encode()

    def _transcript(self, j: int, messages: int, start: int = 0) -> bytes:
        out = []
        for m in range(start, start + messages):
            role = "user" if m % 2 == 0 else "assistant"
            out.append(
                transcript_line(role, f"chat {j} message {m} gen {self.generation} about {self.rng.choice(WORDS)}")
            )
        return ("\n".join(out) + "\n").encode()

    def mutate(self) -> tuple[dict[Key, bytes | None], dict[Key, bytes | None]]:
        """Edit, delete, re-create and add notes, grow one transcript, rewrite another: (before, after)."""
        before = dict(self.current)
        self.generation += 1
        changes: dict[Key, bytes | None] = {}
        for key, data in before.items():
            if key[0] != "memory":
                continue
            roll = self.rng.random()
            index = int(key[1][-7:-3])
            if data is None:
                if roll < 0.5:
                    changes[key] = self._note(index)
            elif roll < 0.5:
                changes[key] = self._note(index)
            elif roll < 0.56:
                changes[key] = None
        for _ in range(4):
            changes[("memory", f"memory/n{self.next_note:04d}.md")] = self._note(self.next_note)
            self.next_note += 1
        grown = before[("sessions", "sessions/s0.jsonl")] or b""
        changes[("sessions", "sessions/s0.jsonl")] = grown + self._transcript(0, 2, start=grown.count(b"\n"))
        changes[("sessions", "sessions/s1.jsonl")] = self._transcript(1, 5)
        self.current.update(changes)
        self._write(changes)
        for key in changes:
            before.setdefault(key, None)
        return before, dict(self.current)

    def _write(self, changes: Mapping[Key, bytes | None]) -> None:
        for (_source, path), data in changes.items():
            target = self.ws / path
            if data is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)


@dataclass
class Tally:
    """Trials run and passed per crash point, and what failed."""

    run: Counter[str] = field(default_factory=Counter)
    passed: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def record(self, label: str, problems: list[str]) -> None:
        self.run[label] += 1
        if problems:
            self.failures.append(f"{label}: " + "; ".join(problems[:5]))
        else:
            self.passed[label] += 1

    def lines(self, title: str) -> list[str]:
        rows = [f"{title}: {sum(self.passed.values())}/{sum(self.run.values())} trials passed"]
        rows += [f"  {label:<40} {self.passed[label]:>4}/{self.run[label]:<4}" for label in sorted(self.run)]
        return rows


@dataclass
class Rig:
    """The daemon, its corpus and its current chunk size."""

    daemon: Daemon
    corpus: Corpus
    ws: Path
    tokens: int = TOKENS[0]
    build_s: float = 0.0
    """How long the first full build took: the window a random kill is aimed at."""

    @property
    def db(self) -> Path:
        return self.daemon.state / "agents" / "main" / "index.sqlite"

    def configure(self, tokens: int) -> None:
        self.tokens = tokens
        write(self.daemon.config, CONFIG.format(ws=self.ws, tokens=tokens))

    def chunking(self, tokens: int | None = None) -> ChunkingSettings:
        return ChunkingSettings(tokens=tokens or self.tokens, overlap=OVERLAP)


def make_rig(make_daemon: DaemonFactory, tmp_path: Path, seed: int, files: int) -> Rig:
    ws = tmp_path / "ws"
    daemon = make_daemon(CONFIG.format(ws=ws, tokens=TOKENS[0]))
    rig = Rig(daemon, Corpus(ws, random.Random(seed), files), ws)
    daemon.start()
    done = daemon.wait_for_line("sync done")
    daemon.stop()
    rig.build_s = int(done.split(" ms=", 1)[1].split()[0]) / 1000
    return rig


def allowed_versions(
    before: Mapping[Key, bytes | None], after: Mapping[Key, bytes | None], old: ChunkingSettings, new: ChunkingSettings
) -> dict[Key, list[Version | None]]:
    merged: dict[Key, list[Version | None]] = {}
    for snapshot, chunking, label in ((before, old, "before"), (after, new, "after")):
        for key, options in versions_of({k: [(label, v)] for k, v in snapshot.items()}, chunking).items():
            merged.setdefault(key, []).extend(options)
    return merged


def atomic_problems(report_matched: Mapping[Key, set[str]]) -> list[str]:
    """A rebuild is swapped in whole: every file must match the same side."""
    sides = set.intersection(*report_matched.values()) if report_matched else {"before"}
    return [] if sides else ["a rebuild left some files at their previous and some at their new version"]


def converged_problems(rig: Rig, before: Mapping[Key, bytes | None]) -> list[str]:
    """After a clean start: no leftovers, the new content found, deleted content gone, index exact."""
    problems = [f"left behind: {name}" for name in leftovers(rig.db.parent)]
    corpus = rig.corpus
    present = [k for k, v in corpus.current.items() if k[0] == "memory" and v is not None and v != before.get(k)]
    deleted = [k for k, v in corpus.current.items() if k[0] == "memory" and v is None and before.get(k) is not None]
    for key in corpus.rng.sample(present, min(2, len(present))):
        found = query(rig.daemon, corpus.token(key))
        if found != [key[1]]:
            problems.append(f"search for the new {key[1]} returned {found}")
    for key in deleted[:1]:
        old = before[key]
        assert old is not None
        marker = old.split(b"Marker ", 1)[1].split(b" ", 1)[0].decode()
        if found := query(rig.daemon, marker):
            problems.append(f"deleted {key[1]} still found: {found}")
    rig.daemon.stop()
    final = check_database(rig.db, versions_of({k: [("now", v)] for k, v in corpus.current.items()}, rig.chunking()))
    problems += [f"after resync: {p}" for p in final.problems]
    return problems


def crash_trial(rig: Rig, rng: random.Random, kind: str, point: str, tally: Tally) -> None:
    """One armed start that must die at `point`, an offline check, then a clean start that converges."""
    old_chunking = rig.chunking()
    if kind == "reindex":
        rig.configure(TOKENS[1] if rig.tokens == TOKENS[0] else TOKENS[0])
    before, after = rig.corpus.mutate()
    skip = rng.randrange(HITS.get((kind, point), 1))
    rig.daemon.start(crash_at=point, crash_skip=skip, expect_ready=False)
    code = rig.daemon.wait_exit(60)
    problems = [] if code == -signal.SIGKILL else [f"daemon did not die at {point} (exit {code})"]
    report = check_database(rig.db, allowed_versions(before, after, old_chunking, rig.chunking()))
    problems += report.problems
    if kind == "reindex" and not report.problems:
        problems += atomic_problems(report.matched)
    rig.daemon.start()
    rig.daemon.wait_for_line("sync done")
    problems += converged_problems(rig, before)
    tally.record(f"{kind} {point}", problems)


def kill_trial(rig: Rig, rng: random.Random, window_s: float, tally: Tally) -> None:
    """Start a big sync (delta or rebuild), SIGKILL the daemon after a random delay, check, converge."""
    kind = rng.choice(("delta", "reindex"))
    old_chunking = rig.chunking()
    if kind == "reindex":
        rig.configure(TOKENS[1] if rig.tokens == TOKENS[0] else TOKENS[0])
    before, after = rig.corpus.mutate()
    delay = rng.uniform(0.0, window_s)
    rig.daemon.start()
    time.sleep(delay)  # the random moment of the kill is the experiment, not a synchronisation
    finished = "sync done" in "".join(rig.daemon.runs[-1].lines)
    rig.daemon.kill()
    report = check_database(rig.db, allowed_versions(before, after, old_chunking, rig.chunking()))
    problems = list(report.problems)
    if kind == "reindex" and not report.problems:
        problems += atomic_problems(report.matched)
    rig.daemon.start()
    rig.daemon.wait_for_line("sync done")
    problems += converged_problems(rig, before)
    tally.record(f"{kind} kill -9 {'after' if finished else 'during'} sync", problems)


def trial_plan(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """Every (kind, point) pair once, then seeded random picks."""
    pairs = [("delta", p) for p in DELTA_POINTS] + [("reindex", p) for p in REINDEX_POINTS]
    plan = list(pairs)
    rng.shuffle(plan)
    plan += [rng.choice(pairs) for _ in range(count - len(plan))]
    return plan[:count] if count >= len(pairs) else plan


def test_ten_kills_at_seeded_crash_points_leave_a_consistent_index_that_converges(
    make_daemon: DaemonFactory, tmp_path: Path, figures: list[str]
) -> None:
    rng = random.Random(6)
    rig = make_rig(make_daemon, tmp_path, seed=6, files=300)
    tally = Tally()
    for kind, point in trial_plan(rng, 10):
        crash_trial(rig, rng, kind, point, tally)
    figures.extend(tally.lines("crash points (fast, seed 6)"))
    assert tally.failures == []


@pytest.mark.slow
def test_a_hundred_and_twenty_kills_at_seeded_crash_points(
    make_daemon: DaemonFactory, tmp_path: Path, figures: list[str]
) -> None:
    rng = random.Random(2026)
    rig = make_rig(make_daemon, tmp_path, seed=2026, files=300)
    tally = Tally()
    for kind, point in trial_plan(rng, 120):
        crash_trial(rig, rng, kind, point, tally)
    figures.extend(tally.lines("crash points (stress, seed 2026)"))
    assert tally.failures == []


@pytest.mark.slow
def test_forty_kills_after_random_delays_during_big_syncs(
    make_daemon: DaemonFactory, tmp_path: Path, figures: list[str]
) -> None:
    rng = random.Random(99)
    rig = make_rig(make_daemon, tmp_path, seed=99, files=2000)
    tally = Tally()
    for _ in range(40):
        kill_trial(rig, rng, window_s=1.2 * rig.build_s, tally=tally)
    figures.extend(tally.lines(f"random kill -9 delays within {1.2 * rig.build_s:.2f} s (stress, seed 99)"))
    assert tally.failures == []


WAL_HEADER = 32
FRAME_HEADER = 24
SHM_BACKFILL_OFFSET = 96  # WalCkptInfo.nBackfill follows the two 48-byte copies of the WAL-index header


def tear_wal(db: Path, rng: random.Random) -> str:
    """Power loss: the WAL's tail after a random byte never reached the disk (or holds garbage), and
    the shared-memory index is gone. Only frames not yet copied into the database file are torn —
    SQLite syncs the WAL before it checkpoints, so earlier frames survive any power cut."""
    wal = Path(f"{db}-wal")
    shm = Path(f"{db}-shm")
    data = wal.read_bytes()
    page_size = int.from_bytes(data[8:12], "big")
    backfilled = int.from_bytes(shm.read_bytes()[SHM_BACKFILL_OFFSET : SHM_BACKFILL_OFFSET + 4], sys.byteorder)
    safe = WAL_HEADER + backfilled * (FRAME_HEADER + page_size)
    cut = rng.randrange(min(safe, len(data)), len(data) + 1)
    if rng.random() < 0.5:
        with wal.open("r+b") as fh:
            fh.truncate(cut)
        how = f"truncated at {cut} of {len(data)} bytes"
    else:
        garbage = rng.randbytes(min(len(data) - cut, rng.randrange(1, 4 * page_size)))
        with wal.open("r+b") as fh:
            fh.seek(cut)
            fh.write(garbage)
        how = f"{len(garbage)} garbage bytes at {cut} of {len(data)}"
    shm.unlink()
    return how


def wal_trial(rig: Rig, rng: random.Random, tally: Tally) -> None:
    """Kill -9 after a committed batch, tear the WAL's tail, then the index must open and converge."""
    before, after = rig.corpus.mutate()
    rig.daemon.start(crash_at="store:before-commit", crash_skip=rng.randrange(1, 3), expect_ready=False)
    code = rig.daemon.wait_exit(60)
    problems = [] if code == -signal.SIGKILL else [f"daemon did not die (exit {code})"]
    how = tear_wal(rig.db, rng)
    report = check_database(rig.db, allowed_versions(before, after, rig.chunking(), rig.chunking()))
    problems += [f"{how}: {p}" for p in report.problems]
    rig.daemon.start()
    rig.daemon.wait_for_line("sync done")
    problems += converged_problems(rig, before)
    tally.record("power loss: torn WAL tail", problems)


def test_a_torn_wal_after_a_kill_loses_at_most_the_torn_transactions(
    make_daemon: DaemonFactory, tmp_path: Path, figures: list[str]
) -> None:
    rng = random.Random(11)
    rig = make_rig(make_daemon, tmp_path, seed=11, files=300)
    tally = Tally()
    for _ in range(3):
        wal_trial(rig, rng, tally)
    figures.extend(tally.lines("torn WAL (fast, seed 11)"))
    assert tally.failures == []


@pytest.mark.slow
def test_thirty_torn_wals(make_daemon: DaemonFactory, tmp_path: Path, figures: list[str]) -> None:
    rng = random.Random(12)
    rig = make_rig(make_daemon, tmp_path, seed=12, files=300)
    tally = Tally()
    for _ in range(30):
        wal_trial(rig, rng, tally)
    figures.extend(tally.lines("torn WAL (stress, seed 12)"))
    assert tally.failures == []
