"""Security of the real daemon: no read outside an agent's roots, no agent reaching another, no other
user, private files, no secret in the database, no query or snippet in the logs.

Escape attempts go through the socket as `memory_get` calls. Outside the roots sit canary files
whose content is a random marker; an attempt is blocked when its answer is an error and carries no
marker (a successful read of a memory file is fine, if it is one). Symlinked folders are swapped in
and out while the same path is read over and over, to catch a check-then-open race.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import stat
import subprocess
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest
from mcp.client import Client

from memoryd.errors import MemorydError
from memoryd.server.client import request_sync, unix_client
from memoryd.sources.readfile import read_memory_file
from tests.conftest import transcript_line, write
from tests.integration.daemon_fixture import Daemon
from tests.privileges import needs_root
from tests.sources.secret_formats import FAMILIES, STATISTICAL
from tests.survival.conftest import DaemonFactory, query
from tests.survival.test_fuzz import Line

pytestmark = pytest.mark.integration

CANARY = f"CANARY-{uuid.uuid4().hex}"
# Transcript reads are redacted, and a random token is masked: this marker is made of words, which survive.
SPOKEN_CANARY = "canary " + " ".join(
    random.Random(CANARY).sample(["walrus", "ember", "quince", "lantern", "otter", "saffron", "marble", "heron"], 5)
)
CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch_debounce_ms = 100
[agents.alpha]
workspace = "{root}/alpha"
extra_paths = ["{root}/vault", "{root}/vault-link", "{root}/single.md"]
[agents.beta]
workspace = "{root}/beta"
"""


def layout(root: Path) -> None:
    """Two agents, an extra vault, and canaries outside every root reachable only by escaping."""
    write(root / "alpha" / "MEMORY.md", "# Alpha\n\nThe alpha agent keeps bees.\n")
    write(root / "alpha" / "memory" / "a.md", "alpha note\n")
    write(root / "alpha" / "memory" / "sub" / "deep.md", "a deep alpha note\n")
    write(root / "alpha" / "memory" / "a.txt", f"not markdown {CANARY}\n")
    write(root / "alpha" / "notes.md", f"inside the workspace but not memory {CANARY}\n")
    write(
        root / "alpha" / "sessions" / "chat.jsonl", transcript_line("user", "a transcript memory_get may read") + "\n"
    )
    write(root / "vault" / "v.md", "a vault note\n")
    write(root / "single.md", "a single extra file\n")
    write(root / "beta" / "MEMORY.md", f"# Beta\n\nbetaonly {CANARY}\n")
    outside = root / "outside"
    write(outside / "canary.md", f"{CANARY}\n")
    write(outside / "deep.md", f"{CANARY}\n")
    write(outside / "secret.txt", f"{CANARY}\n")
    write(outside / "said.jsonl", transcript_line("user", SPOKEN_CANARY) + "\n")
    write(outside / "sub" / "said.jsonl", transcript_line("user", SPOKEN_CANARY) + "\n")
    (root / "alpha" / "sessions" / "link.jsonl").symlink_to(outside / "said.jsonl")
    (root / "alpha" / "sessions" / "linkdir").symlink_to(outside, target_is_directory=True)
    (root / "alpha" / "memory" / "link.md").symlink_to(outside / "canary.md")
    (root / "alpha" / "memory" / "linkdir").symlink_to(outside, target_is_directory=True)
    (root / "alpha" / "memory" / "nested").mkdir()
    (root / "alpha" / "memory" / "nested" / "up").symlink_to(root / "alpha", target_is_directory=True)
    (root / "vault" / "v-link.md").symlink_to(outside / "canary.md")
    (root / "vault-link").symlink_to(outside, target_is_directory=True)
    (root / "alpha" / "memory" / "dangling.md").symlink_to(root / "nowhere.md")
    os.mkfifo(root / "alpha" / "memory" / "fifo.md")
    # Names that only look like memory paths (a prefix test let them through), and a hard link out.
    for lookalike in (".memory/x.md", "..memory/x.md", ".MEMORY.md", "..MEMORY.md"):
        write(root / "alpha" / lookalike, f"{CANARY}\n")
    write(outside / "hard.md", f"{CANARY}\n")
    os.link(outside / "hard.md", root / "alpha" / "memory" / "hard.md")


def escape_paths(root: Path) -> list[str]:
    outside = root / "outside"
    ws = root / "alpha"
    return [
        "../outside/canary.md",
        "../../outside/canary.md",
        "memory/../../outside/canary.md",
        "memory/./../../outside/canary.md",
        "memory/../notes.md",
        "notes.md",
        "sessions/../notes.md",
        "sessions/../../outside/said.jsonl",
        "sessions/../sessions/../../outside/said.jsonl",
        "sessions//" + str(outside / "said.jsonl").lstrip("/"),
        "sessions/link.jsonl",
        "sessions/linkdir/said.jsonl",
        "sessions/linkdir/sub/said.jsonl",
        "sessions/chat.jsonl/../../../outside/said.jsonl",
        "sessions/..\\..\\outside\\said.jsonl",
        "sessions/%2e%2e/%2e%2e/outside/said.jsonl",
        str(outside / "said.jsonl"),
        "../outside/said.jsonl",
        "sessions/chat.json",
        "../beta/MEMORY.md",
        str(outside / "canary.md"),
        str(ws / "notes.md"),
        str(root / "beta" / "MEMORY.md"),
        "/etc/passwd",
        "//" + str(outside / "canary.md"),
        "memory/link.md",
        "memory/linkdir/canary.md",
        "memory/linkdir/deep.md",
        "memory/nested/up/notes.md",
        "memory/nested/up/memory/a.txt",
        "memory/dangling.md",
        "memory/fifo.md",
        ".memory/x.md",
        "..memory/x.md",
        ".MEMORY.md",
        "..MEMORY.md",
        "./.memory/x.md",
        str(ws / ".memory" / "x.md"),
        "memory/hard.md",
        str(root / "vault" / "v-link.md"),
        "../vault/v-link.md",
        str(root / "vault-link" / "canary.md"),
        "../vault-link/canary.md",
        "../vault/../outside/canary.md",
        str(root / "single.md") + "/../outside/canary.md",
        "memory/a.txt",
        "memory/a.md.txt",
        "memory/a.md\x00",
        "memory/a.md\x00../../outside/canary.md",
        "../outside/canary.md\x00.md",
        "..\\outside\\canary.md",
        "memory\\..\\..\\outside\\canary.md",
        "C:\\outside\\canary.md",
        "file://" + str(outside / "canary.md"),
        "~/../" + str(outside / "canary.md"),
        "$HOME/canary.md",
        "memory/%2e%2e/%2e%2e/outside/canary.md",
        "..%2Foutside%2Fcanary.md",
        "%2e%2e%2foutside%2fcanary.md",
        "..%252Foutside%252Fcanary.md",
        "memory/%2F..%2F..%2Foutside%2Fcanary.md",
        "\uff0e\uff0e/outside/canary.md",  # fullwidth full stops
        "\u2025/outside/canary.md",  # two dot leader
        "..\u2215outside\u2215canary.md",  # division slash
        "..\u2044outside\u2044canary.md",  # fraction slash
        "..\uff0foutside\uff0fcanary.md",  # fullwidth solidus
        ".\u0307./outside/canary.md",  # combining dot above
        "memory/../../outside/canary.m\u0064",
        "memory/../../outside/CANARY.MD",
        "MEMORY.md/../../outside/canary.md",
        "memory/" + "a/" * 3000 + "x.md",
        "../" * 2000 + str(outside / "canary.md").lstrip("/"),
        "memory/" + "x" * 100_000 + ".md",
        " ../outside/canary.md",
        "../outside/canary.md ",
        "\t../outside/canary.md\n",
        "memory/sub/../../../outside/canary.md",
    ]


@dataclass
class Tally:
    tried: int = 0
    blocked: int = 0
    allowed_reads: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)


async def memory_get(client: Client, path: str) -> tuple[bool, str]:
    """(is_error, every text the answer carries)."""
    result = await client.call_tool("memory_get", {"path": path})
    texts = [getattr(c, "text", "") for c in result.content]
    return bool(result.is_error), " ".join(texts) + repr(result.structured_content)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    layout(root)
    return root


@pytest.fixture
def daemon(make_daemon: DaemonFactory, root: Path) -> Daemon:
    d = make_daemon(CONFIG.format(root=root))
    d.start()
    d.wait_for_line("sync done")
    d.wait_for_line("sync done")
    return d


def test_memory_get_never_reads_outside_the_roots(daemon: Daemon, root: Path, figures: list[str]) -> None:
    tally = Tally()

    async def attempt_all() -> None:
        with anyio.fail_after(60):
            async with Client(unix_client(daemon.socket, "alpha")) as client:
                await attempts(client)

    async def attempts(client: Client) -> None:
        for path in escape_paths(root):
            tally.tried += 1
            failed, text = await memory_get(client, path)
            if CANARY in text or SPOKEN_CANARY in text:
                tally.leaks.append(path)
            elif failed:
                tally.blocked += 1
            else:
                tally.allowed_reads.append(path)
        failed, text = await memory_get(client, "sessions/chat.jsonl")  # a transcript of the agent: readable
        assert not failed and "User: a transcript memory_get may read" in text, text

    anyio.run(attempt_all)
    figures.append(f"memory_get escapes: {tally.tried} tried, {tally.blocked} blocked, {len(tally.leaks)} leaked")
    assert tally.leaks == []
    assert tally.allowed_reads == []
    assert tally.blocked == tally.tried
    assert daemon.alive


def test_a_folder_swapped_for_a_symlink_during_reads_never_leaks(
    daemon: Daemon, root: Path, figures: list[str]
) -> None:
    """Check-then-open race: `memory/sub` flips between a real folder and a symlink to the canaries."""
    memory = root / "alpha" / "memory"
    sub, parked = memory / "sub", memory / "sub-parked"
    stop = threading.Event()
    flips = 0

    def flip() -> None:
        nonlocal flips
        while not stop.is_set():
            os.rename(sub, parked)
            sub.symlink_to(root / "outside", target_is_directory=True)
            sub.unlink()
            os.rename(parked, sub)
            flips += 1

    tally = Tally()

    async def read_repeatedly() -> None:
        with anyio.fail_after(120):
            async with Client(unix_client(daemon.socket, "alpha")) as client:
                for _ in range(READS):
                    tally.tried += 1
                    failed, text = await memory_get(client, "memory/sub/deep.md")
                    if CANARY in text:
                        tally.leaks.append(text[:80])
                    elif failed:
                        tally.blocked += 1

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        anyio.run(read_repeatedly)
    finally:
        stop.set()
        flipper.join()
    figures.append(
        f"memory_get during {flips} folder/symlink swaps: {tally.tried} reads, {tally.blocked} refused, "
        f"{len(tally.leaks)} leaked"
    )
    assert tally.leaks == []


READS = 1500
IN_PROCESS_READS = 5000


def test_the_check_then_open_race_is_closed_in_process_too(tmp_path: Path) -> None:
    """The same swap, without the socket in between: thousands of reads while the folder flips."""
    ws = tmp_path / "ws"
    write(ws / "memory" / "sub" / "deep.md", "legit\n")
    write(tmp_path / "out" / "deep.md", f"{CANARY}\n")
    sub, parked = ws / "memory" / "sub", ws / "memory" / "parked"
    stop = threading.Event()
    flips = 0

    def flip() -> None:
        nonlocal flips
        while not stop.is_set():
            os.rename(sub, parked)
            sub.symlink_to(tmp_path / "out", target_is_directory=True)
            sub.unlink()
            os.rename(parked, sub)
            flips += 1

    # A count of reads, not a time window: on a loaded machine the race is tried as often, only slower.
    # (About 7,600 reads and 11,000 flips fit in two seconds on 2 idle cores.)
    refused = leaks = 0
    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        for _ in range(IN_PROCESS_READS):
            try:
                leaks += CANARY in read_memory_file("memory/sub/deep.md", ws, []).text
            except MemorydError:
                refused += 1
    finally:
        stop.set()
        flipper.join()
    assert flips > 0 and refused > 0  # the swap really raced the reads
    assert leaks == 0


async def call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    result = await client.call_tool(name, arguments)
    return bool(result.is_error), " ".join(getattr(c, "text", "") for c in result.content) + repr(
        result.structured_content
    )


def test_a_connection_bound_to_one_agent_cannot_reach_another(daemon: Daemon, root: Path) -> None:
    beta_file = str(root / "beta" / "MEMORY.md")

    async def attempts() -> list[tuple[str, bool, str]]:
        out: list[tuple[str, bool, str]] = []
        tries: list[tuple[str, dict[str, Any]]] = [
            ("memory_search", {"query": "betaonly", "minScore": 0}),
            ("memory_search", {"query": "betaonly", "agent": "beta"}),
            ("memory_get", {"path": beta_file}),
            ("memory_get", {"path": "../beta/MEMORY.md"}),
            ("memory_get", {"path": "MEMORY.md", "agent": "beta"}),
            ("status", {"agent": "beta"}),
        ]
        with anyio.fail_after(60):
            async with Client(unix_client(daemon.socket, "alpha")) as client:
                for name, args in tries:
                    failed, text = await call(client, name, args)
                    out.append((f"{name} {args}", failed, text))
                status = await client.call_tool("status", {})
                assert isinstance(status.structured_content, dict)
                assert status.structured_content["agent"] == "alpha"
        return out

    results = anyio.run(attempts)
    assert [r for r in results if CANARY in r[2] or "betaonly" in r[2].replace("'betaonly'", "")] == []
    # A bind after the first message, and a second bind, are refused on the raw wire.
    client = Line(daemon.socket)
    try:
        first = client.request({"jsonrpc": "2.0", "id": "b1", "method": "memoryd/bind", "params": {"agent": "alpha"}})
        client.initialize()
        second = client.request({"jsonrpc": "2.0", "id": "b2", "method": "memoryd/bind", "params": {"agent": "beta"}})
        search = client.request(
            {
                "jsonrpc": "2.0",
                "id": "s",
                "method": "tools/call",
                "params": {"name": "memory_search", "arguments": {"query": "betaonly"}},
            }
        )
    finally:
        client.close()
    assert first is not None and first["result"] == {"agent": "alpha"}
    assert second is not None and "only accepted as the first message" in second["error"]["message"]
    assert search is not None and search["result"]["structuredContent"]["results"] == []
    # A transcript of another agent named in a notification is ignored.
    assert query(daemon, "betaonly", agent="beta") == ["MEMORY.md"]


NOBODY = 65534
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"
"""An interpreter the unprivileged user may run (the venv lives under a private home)."""
PEER_SCRIPT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print("connect-refused", exc.errno)
    sys.exit(0)
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\\n')
    print("answer", repr(s.recv(4096)))
except OSError as exc:
    print("hung up", exc.errno)
"""


def as_nobody(socket_path: Path) -> str:
    """Connect as uid 65534 — keeping only the capability to pass any file permission, so that the
    private socket folder cannot be what stops it: the daemon's peer-uid check must."""
    out = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "--inh-caps=+dac_override",
            "--ambient-caps=+dac_override",
            SYSTEM_PYTHON,
            "-I",
            "-c",
            PEER_SCRIPT,
            str(socket_path),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        cwd="/",
    )
    return out.stdout.strip()


@needs_root("setpriv --reuid=65534 to connect as another user")
def test_a_client_of_another_uid_is_refused(daemon: Daemon) -> None:
    answer = as_nobody(daemon.socket)
    assert answer == "answer b''" or answer.startswith("hung up"), answer
    daemon.wait_for_line("peer_refused", since_start=True)
    assert query(daemon, "bees", agent="alpha") == ["MEMORY.md"]


def modes(daemon: Daemon) -> dict[str, int]:
    agent_dir = daemon.state / "agents" / "alpha"
    found = {
        "socket": daemon.socket.stat().st_mode,
        "socket dir": daemon.socket.parent.stat().st_mode,
        "agent dir": agent_dir.stat().st_mode,
    }
    for f in agent_dir.iterdir():
        found[f.name] = f.stat().st_mode
    return {k: stat.S_IMODE(v) for k, v in found.items()}


def test_socket_and_index_files_stay_private_across_restarts_and_kills_whatever_the_umask(
    make_daemon: DaemonFactory, root: Path
) -> None:
    d = make_daemon(CONFIG.format(root=root), wrapper=("sh", "-c", 'umask 000 && exec "$@"', "sh"))
    seen: list[dict[str, int]] = []
    for stop in ("term", "kill", "term"):
        d.start()
        d.wait_for_line("sync done")
        seen.append(modes(d))
        if stop == "kill":
            d.kill()
        else:
            d.stop()
    for found in seen:
        assert found["socket"] == 0o600
        assert found["socket dir"] == 0o700
        assert found["agent dir"] == 0o700
        assert {name: mode for name, mode in found.items() if "sqlite" in name and mode & 0o077} == {}


SECRET_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


SECRETS_SEED = int(os.environ.get("MEMORYD_SECRETS_SEED") or random.SystemRandom().getrandbits(32))
"""New secrets on every run, from one seed the figures print: `MEMORYD_SECRETS_SEED=<seed>` replays a run."""


def planted_secrets(seed: int = SECRETS_SEED) -> dict[str, tuple[str, str]]:
    """Format -> (the text carrying it, the secret). Every secret is random and at least 20 characters."""
    rng = random.Random(seed)

    def body(n: int = 28) -> str:
        raw = f"{rng.getrandbits(128):032x}{rng.getrandbits(128):032x}"
        return "".join(SECRET_ALPHABET[int(c, 16) * 3 % len(SECRET_ALPHABET)] for c in raw)[:n]

    s = {name: body() for name in ("env", "json", "cli", "auth", "bearer", "pem", "tg", "tgurl")}
    prefixed = {
        "sk-": "sk-" + body(),
        "ghp_": "ghp_" + body(36),
        "github_pat_": "github_pat_" + body(40),
        "xoxb-": "xoxb-" + body(),
        "xapp-": "xapp-" + body(),
        "gsk_": "gsk_" + body(),
        "AIza": "AIza" + body(35),
        "pplx-": "pplx-" + body(),
        "npm_": "npm_" + body(),
    }
    pem_body = "\n".join(body(60) for _ in range(4))
    out = {
        "ENV assignment": (f"export OPENAI_API_KEY={s['env']} then run it", s["env"]),
        "JSON field": (f'config: {{"apiKey": "{s["json"]}"}}', s["json"]),
        "CLI flag": (f"deploy --token {s['cli']} --verbose", s["cli"]),
        "Authorization header": (f"Authorization: Bearer {s['auth']}", s["auth"]),
        "bare Bearer": (f"use Bearer {s['bearer']} for the call", s["bearer"]),
        "PEM private key": (
            f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----",
            pem_body.split("\n")[1],
        ),
        "Telegram token": (f"the bot is 123456789:{s['tg']}", s["tg"]),
        "Telegram URL": (f"https://api.telegram.org/bot987654321:{s['tgurl']}/getMe", s["tgurl"]),
    }
    out.update({f"{prefix} token": (f"my key is {token} ok", token) for prefix, token in prefixed.items()})
    out.update(issue_13_families(rng))
    return out


def issue_13_families(rng: random.Random) -> dict[str, tuple[str, str]]:
    """One planted text per family of tests/sources/secret_formats.py (provider tokens glued, quoted
    and in JSON; PEM split, escaped and unterminated; PGP; URL passwords; Authorization headers;
    passwords in prose; values under secret keys; AWS key id + secret), each secret at least 8
    characters so its fragments can be looked for in the database."""
    out: dict[str, tuple[str, str]] = {}
    for family, make in FAMILIES.items():
        # A statistical family's one key is drawn from a fixed seed whose key the rule masks (its rate
        # is tested in tests/sources/test_redact.py): a rare word-like draw must not fail this run.
        planted = make(random.Random(family) if family in STATISTICAL else rng)
        for index, secret in enumerate(planted.secrets):
            if len(secret) < 8:  # a PIN of 4 digits occurs by chance in hashes and times: test_redact.py masks it
                continue
            out[f"{family} #{index}"] = (planted.text, secret)
    return out


def fragments(secret: str) -> list[str]:
    """Pieces of a secret that must never be stored: the whole, and what a mask hides (all but the
    first 4 characters; pieces of 8 so that a secret cut by a tokenizer is still found)."""
    hidden = secret[4:]
    return [secret, *(hidden[i : i + 8] for i in range(0, len(hidden) - 7, 4))]


def schema_sql(directory: Path) -> str:
    """The CREATE statements of every database in `directory` (fixed text, stored whatever the transcript says)."""
    parts = []
    for db in sorted(directory.glob("*.sqlite")):
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            parts += [str(sql) for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")]
        finally:
            conn.close()
    return "\n".join(parts)


def files_bytes(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


def fts_terms(db: Path) -> list[str]:
    """Every term of every FTS index (on a copy: a vocab table must be created to list them)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy.sqlite"
        for ext in ("", "-wal"):
            if Path(f"{db}{ext}").exists():
                shutil.copyfile(f"{db}{ext}", f"{copy}{ext}")
        conn = apsw.Connection(str(copy))
        try:
            terms: list[str] = []
            for table in ("chunks_fts", "chunks_cjk"):
                conn.execute(f"CREATE VIRTUAL TABLE v_{table} USING fts5vocab('{table}', 'row')")
                terms += [str(t) for (t,) in conn.execute(f"SELECT term FROM v_{table}")]
            return terms
        finally:
            conn.close()


def test_planted_secrets_never_reach_the_database_nor_the_logs(
    make_daemon: DaemonFactory, root: Path, figures: list[str]
) -> None:
    planted = planted_secrets()
    lines = [transcript_line("user" if i % 2 else "assistant", text) for i, (text, _) in enumerate(planted.values())]
    transcript = root / "alpha" / "sessions" / "secrets.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    before = hashlib.sha256(transcript.read_bytes()).hexdigest()
    d = make_daemon(CONFIG.format(root=root))
    d.start()
    d.wait_for_line("sync done")
    d.wait_for_line("sync done")
    assert "sessions/secrets.jsonl" in query(d, "deploy verbose", agent="alpha")
    agent_dir = d.state / "agents" / "alpha"
    snapshots = [files_bytes(agent_dir)]
    anyio.run(force_rebuild, d)
    snapshots.append(files_bytes(agent_dir))
    d.stop()
    snapshots.append(files_bytes(agent_dir))
    terms = fts_terms(agent_dir / "index.sqlite")
    leaked = []
    # What the transcript says around its secrets is stored as it is: a piece found there (" connect" of a
    # BIP-39 phrase beside "connect with ftp://…", seed 2466293149) proves nothing.
    # Nor is the databases' own schema ("source, " of a phrase beside "PRIMARY KEY(source, path)", seed 540115278).
    prose = "\n".join([*(text.replace(secret, " ") for text, secret in planted.values()), schema_sql(agent_dir)])
    for fmt, (_text, secret) in planted.items():
        for piece in fragments(secret):
            if piece.strip() in prose:  # also as a speaker prefix puts it: "Assistant: connect"
                continue
            if any(piece.encode() in blob for blob in snapshots) or any(piece.lower() in t for t in terms):
                leaked.append(fmt)
        if secret in d.log_text():
            leaked.append(f"{fmt} (log)")
    figures.append(
        f"secrets: {len(planted)} formats planted in a transcript, {len(set(leaked))} leaked "
        f"(database and WAL bytes after sync, rebuild and shutdown; FTS terms; daemon log; seed {SECRETS_SEED})"
    )
    assert sorted(set(leaked)) == [], f"replay with MEMORYD_SECRETS_SEED={SECRETS_SEED}"
    assert hashlib.sha256(transcript.read_bytes()).hexdigest() == before


async def force_rebuild(d: Daemon) -> None:
    with anyio.fail_after(60):
        await request_sync(d.socket, "alpha", force=True)


def test_logs_at_the_default_level_carry_no_query_text_and_no_snippet(make_daemon: DaemonFactory, root: Path) -> None:
    write(root / "alpha" / "memory" / "private.md", "The snippetmarker91 lives in this private note.\n")
    d = make_daemon(CONFIG.format(root=root))
    d.start(log_level="info")
    d.wait_for_line("sync done")
    d.wait_for_line("sync done")

    async def traffic() -> None:
        with anyio.fail_after(60):
            async with Client(unix_client(d.socket, "alpha")) as client:
                await client.call_tool("memory_search", {"query": "querymarker17 snippetmarker91"})
                await client.call_tool("memory_search", {"query": "snippetmarker91", "maxResults": 3})
                await client.call_tool("memory_search", {"query": "querymarker17", "corpus": "nowhere"})
                await client.call_tool("memory_search", {"query": "querymarker17", "maxResults": "many"})
                await client.call_tool("memory_get", {"path": "memory/private.md"})
                await client.call_tool("memory_get", {"path": "memory/private.md", "from": "x"})

    anyio.run(traffic)
    d.stop()
    log = d.log_text()
    assert "querymarker17" not in log
    assert "snippetmarker91" not in log
    assert "private note" not in log
