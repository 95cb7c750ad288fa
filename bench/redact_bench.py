"""Redaction: throughput on transcript-like text, planted secrets masked per family, false positives.

* Throughput: `redact()` over ~5 MB of transcript-shaped messages and ~5 MB of prose+code units
  (bench/redact_corpus.py: the Python docs, the stdlib's sources, installed packages' READMEs).
* Recall: every family of tests/sources/secret_formats.py planted N times (seeded) in its places; a
  plant counts as masked when no 6-character piece of any of its secrets survives.
* False positives: the share of lines and of whitespace-separated tokens of the prose+code corpus
  that `redact()` changes, and how many generated look-alikes (UUIDs, git SHAs, sha256 digests, file
  paths, base64 of text, version strings, long identifiers) are masked.
"""

from __future__ import annotations

import hashlib
import random
import string
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from bench.redact_corpus import load_sources, prose_and_code, transcript_messages
from memoryd.sources.redact import find_secrets, redact
from tests.sources.secret_formats import BIP39 as _BIP39
from tests.sources.secret_formats import FAMILIES

PLANTS = 200
WINDOW = 6


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


def throughput(messages: list[str]) -> tuple[float, float]:
    size = sum(len(m.encode()) for m in messages) / 1e6
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for message in messages:
            redact(message)
        best = min(best, time.perf_counter() - start)
    return size, size / best


def _survives(out: str, secret: str) -> bool:
    return any(secret[i : i + WINDOW] in out for i in range(max(1, len(secret) - WINDOW + 1)))


def recall(plants: int) -> list[tuple[str, int, int]]:
    rows = []
    for family, make in FAMILIES.items():
        rng = random.Random(family)
        masked = 0
        for _ in range(plants):
            planted = make(rng)
            out = redact(planted.text)
            masked += not any(_survives(out, s) for s in planted.secrets)
        rows.append((family, plants, masked))
    return rows


def _list_word_prose(r: random.Random) -> str:
    """60 words of BIP-39's list (common English nouns, verbs, adjectives) glued by the little words English
    puts between them every few words and which the list lacks (the, of, to, is, ...): ordinary prose."""
    words: list[str] = []
    while len(words) < 60:
        words += [r.choice(_BIP39) for _ in range(r.randint(2, 8))]
        words.append(r.choice(["the", "a", "to", "of", "and", "is", "we", "it", "in", "for", "was", "with"]))
    return " ".join(words)


LOOKALIKES: dict[str, Callable[[random.Random], str]] = {
    "UUID": lambda r: str(uuid.UUID(int=r.getrandbits(128))),
    "git SHA": lambda r: f"commit {r.getrandbits(160):040x}",
    "short SHA": lambda r: f"fixed in {r.getrandbits(28):07x}",
    "sha256 digest": lambda r: f"sha256:{hashlib.sha256(r.randbytes(16)).hexdigest()}",
    "md5 digest": lambda r: hashlib.md5(r.randbytes(16), usedforsecurity=False).hexdigest(),
    "file path": lambda r: (
        "/".join(
            ["", "home", "me", *(r.choice(["src", "memoryd", "sources", "tests", "docs", "lib"]) for _ in range(4))]
        )
        + f"/{r.choice(['engine', 'test_redact', 'README', 'config_loader'])}.{r.choice(['py', 'md', 'toml'])}"
    ),
    "base64 of text": lambda r: (
        __import__("base64")
        .b64encode(
            " ".join(r.choice(["the", "note", "memory", "agent", "search", "daily"]) for _ in range(12)).encode()
        )
        .decode()
    ),
    "version string": lambda r: f"v{r.randint(0, 30)}.{r.randint(0, 99)}.{r.randint(0, 999)}-rc.{r.randint(1, 9)}",
    "long identifier": lambda r: "".join(
        w.capitalize() for w in r.sample(["abstract", "async", "context", "manager", "factory", "handler", "base"], 5)
    ),
    "snake_case name": lambda r: "_".join(
        r.sample(["test", "the", "mask", "keeps", "four", "characters", "index", "rebuild"], 6)
    ),
    "public key / fingerprint in hex": lambda r: (
        f"{r.choice(['public key', 'key fingerprint', 'key id', 'sha256 of the key'])}: "
        f"{hashlib.sha256(r.randbytes(16)).hexdigest()}"
    ),
    "pin numbers in wiring": lambda r: (
        f"{r.choice(['pin', 'PIN', 'Pin'])} {r.randint(0, 40)} is {r.choice(['high', 'low', 'GND', 'an input'])}"
    ),
    "password talk (fr, de, es)": lambda r: r.choice(
        [
            f"le mot de passe est {r.choice(['incorrect', 'trop court', 'expiré', 'obligatoire'])}.",
            f"das Passwort ist {r.choice(['falsch', 'abgelaufen', 'zu kurz', 'sicher'])}!",
            f"la contraseña es {r.choice(['incorrecta', 'segura', 'obligatoria', 'demasiado corta'])}.",
        ]
    ),
    "English of list words, a little word every 2-8": _list_word_prose,
    "URL": lambda r: (
        f"https://github.com/{r.choice(['python', 'astral-sh'])}/{r.choice(['cpython', 'ruff'])}/blob/main/"
        f"{''.join(r.choices(string.ascii_lowercase, k=8))}.py#L{r.randint(1, 999)}"
    ),
}


def lookalike_rates(n: int) -> list[tuple[str, int, int]]:
    rows = []
    for name, make in LOOKALIKES.items():
        rng = random.Random(name)
        flagged = sum(bool(find_secrets(f"see {make(rng)} here")) for _ in range(n))
        rows.append((name, n, flagged))
    return rows


def false_positives(units: list[str]) -> tuple[int, int, int, int, list[str]]:
    lines = changed_lines = tokens = changed_tokens = 0
    examples: list[str] = []
    for unit in units:
        out = redact(unit)
        unit_lines = unit.split("\n")
        lines += len(unit_lines)
        tokens += len(unit.split())
        if out == unit:
            continue
        out_lines = out.split("\n")
        for before, after in zip(unit_lines, out_lines, strict=False):
            if before != after:
                changed_lines += 1
                changed_tokens += sum(a != b for a, b in zip(before.split(), after.split(), strict=False))
                if len(examples) < 12:
                    examples.append(before.strip()[:110])
    return lines, changed_lines, tokens, changed_tokens, examples


def main(out: Path, quick: bool) -> None:
    del out  # nothing is written: the corpus is read from this interpreter's own files
    megabytes = 1.0 if quick else 5.0
    sources = load_sources()
    _out("\n## Redaction (memoryd.sources.redact)\n")
    for name, messages in (
        ("transcript messages", transcript_messages(sources, megabytes)),
        ("prose + code units", prose_and_code(sources, megabytes)),
    ):
        size, rate = throughput(messages)
        _out(f"throughput, {name}: {size:.1f} MB, {len(messages)} messages, {rate:.1f} MB/s (best of 3)")
    rows = recall(40 if quick else PLANTS)
    planted = sum(r[1] for r in rows)
    masked = sum(r[2] for r in rows)
    _out(f"\nplanted secrets masked: {masked}/{planted} over {len(rows)} families")
    _out("| family | planted | masked |\n| --- | ---: | ---: |")
    for family, n, ok in rows:
        _out(f"| {family} | {n} | {ok} |")
    lines, bad_lines, tokens, bad_tokens, examples = false_positives(prose_and_code(sources, megabytes))
    _out(
        f"\nfalse positives on prose+code: {bad_lines}/{lines} lines changed ({100 * bad_lines / lines:.3f}%), "
        f"{bad_tokens}/{tokens} tokens ({100 * bad_tokens / tokens:.4f}%)"
    )
    for example in examples:
        _out(f"    {example}")
    _out("\nlook-alikes flagged as secrets\n| kind | generated | flagged |\n| --- | ---: | ---: |")
    for name, n, flagged in lookalike_rates(200 if quick else 1000):
        _out(f"| {name} | {n} | {flagged} |")
