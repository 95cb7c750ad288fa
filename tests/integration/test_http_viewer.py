"""The memory viewer through the real daemon: login and its cookie, search with highlights, notes and
sessions as memory_get serves them (escaped, redacted), the write form's CSRF token, and the refusals
(another agent, path traversal, a foreign Origin, a revoked token)."""

from __future__ import annotations

import re
import socket

import anyio
import httpx2
import pytest

from tests.integration.conftest import SECRET, Http

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


async def login(http: Http, client: httpx2.AsyncClient, token: str) -> httpx2.Response:
    return await client.post(f"{http.base}/login", data={"token": token})


def csrf_of(page: str) -> str:
    match = re.search(r'name=csrf value="([^"]+)"', page)
    assert match, page
    return match.group(1)


async def test_login_sets_a_strict_http_only_cookie_that_is_not_the_token(http: Http) -> None:
    token = http.token("alpha")
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(base_url=http.base) as client:
            first = await client.get("/")
            wrong = await login(http, client, token[:-3] + ("BBB" if token.endswith("AAA") else "AAA"))
            right = await login(http, client, token)
            home = await client.get("/", follow_redirects=True)
    assert first.status_code == 303 and first.headers["location"] == "/login"
    assert wrong.status_code == 401 and "not valid" in wrong.text
    assert right.status_code == 303
    cookie = right.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert token not in cookie and token.split("_", 2)[2] not in cookie  # the secret may hold "_" itself
    assert home.status_code == 200 and "<h1>alpha</h1>" in home.text
    assert "content-security-policy" in home.headers
    assert re.search(r"<th>files indexed</th><td>[1-9]", home.text)  # status: what is indexed
    assert "last sync" in home.text and "sessions/s1.jsonl" in home.text  # browse: notes and sessions


async def test_search_highlights_terms_and_shows_scores_and_escapes_notes(http: Http) -> None:
    token = http.token("alpha")
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(base_url=http.base) as client:
            await login(http, client, token)
            found = await client.get("/a/alpha/search", params={"q": "bees roof"})
            odd = await client.get("/a/alpha/search", params={"q": "wasps script bold"})
            note = await client.get("/a/alpha/file", params={"path": "memory/xss.md", "q": "wasps"})
    assert found.status_code == 200
    assert "<mark>bees</mark>" in found.text and "<mark>roof</mark>" in found.text
    assert re.search(r"score \d\.\d{3}", found.text)
    for page in (odd.text, note.text):
        assert "<script>" not in page and "<b>bold</b>" not in page
        assert "&lt;" in page
    assert "<mark>wasps</mark>" in note.text


async def test_a_session_shows_its_redacted_text_never_raw_jsonl(http: Http) -> None:
    token = http.token("alpha")
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(base_url=http.base) as client:
            await login(http, client, token)
            page = await client.get("/a/alpha/file", params={"path": "sessions/s1.jsonl"})
            hits = await client.get("/a/alpha/search", params={"q": "hive warm", "corpus": "sessions"})
    assert page.status_code == 200, page.text
    assert "keep the hive warm" in page.text
    assert SECRET not in page.text and SECRET not in hits.text
    assert '"type"' not in page.text and "&quot;type&quot;" not in page.text


async def test_the_write_form_needs_its_csrf_token(http: Http) -> None:
    token = http.token("alpha")
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(base_url=http.base) as client:
            await login(http, client, token)
            home = await client.get("/a/alpha")
            csrf = csrf_of(home.text)
            missing = await client.post("/a/alpha/write", data={"text": "Forged entry one."})
            forged = ("y" if csrf[0] == "x" else "x") + csrf[1:]  # one character off (a token may start with x)
            wrong = await client.post("/a/alpha/write", data={"text": "Forged entry two.", "csrf": forged})
            right = await client.post("/a/alpha/write", data={"text": "The viewer saved the hive key.", "csrf": csrf})
            after = await client.get("/a/alpha")
    assert missing.status_code == wrong.status_code == 403
    assert "Recent saves" in after.text and re.search(r"memory/20\d\d-\d\d-\d\d\.md#L\d+", after.text)
    assert right.status_code == 200 and "Saved" in right.text
    saved = "".join(p.read_text() for p in (http.daemon.root / "alpha" / "memory").glob("20*.md"))
    assert "The viewer saved the hive key." in saved and "Forged" not in saved


async def test_a_read_only_token_gets_no_write_form_and_cannot_post(http: Http) -> None:
    token = http.token("alpha", read_only=True)
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(base_url=http.base) as client:
            await login(http, client, token)
            home = await client.get("/a/alpha")
            posted = await client.post("/a/alpha/write", data={"text": "Never.", "csrf": csrf_of(home.text)})
    assert "/a/alpha/write" not in home.text
    assert posted.status_code == 403


async def test_other_agents_traversal_and_foreign_origins_are_refused(http: Http) -> None:
    token = http.token("alpha")
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(base_url=http.base) as client:
            await login(http, client, token)
            beta = await client.get("/a/beta")
            ghost = await client.get("/a/ghost")
            up = await client.get("/a/alpha/file", params={"path": "../beta/MEMORY.md"})
            absolute = await client.get("/a/alpha/file", params={"path": "/etc/passwd"})
            static = await client.get("/static/viewer.py")
            negative = await client.get("/a/alpha/file", params={"path": "MEMORY.md", "from": "-3"})
            unknown = await client.get("/a/alpha/search", params={"q": "bees", "corpus": "everything"})
            huge_login = await client.post("/login", data={"token": "x" * 10_000})
            foreign = await client.post("/login", data={"token": token}, headers={"Origin": "https://evil.example"})
    assert beta.status_code == ghost.status_code == 403 and beta.text == ghost.text
    assert up.status_code == absolute.status_code == 403
    assert "chili" not in up.text and "root:" not in absolute.text
    assert static.status_code == 404
    assert huge_login.status_code == 413
    assert negative.status_code == unknown.status_code == 400  # the tools' own schemas check the viewer's values
    assert "from" in negative.text and "corpus" in unknown.text
    assert foreign.status_code == 403 and "set-cookie" not in foreign.headers
    for raw in ("/a/alpha/../../../etc/passwd", "/static/../../../../etc/passwd", "/a/alpha/file/../../beta"):
        assert await raw_status(http, raw) in (403, 404), raw


async def raw_status(http: Http, path: str) -> int:
    """GET `path` byte for byte (clients normalise `..` away before sending)."""
    host, port = http.base.removeprefix("http://").rsplit(":", 1)

    def get() -> int:
        with socket.create_connection((host, int(port)), timeout=20) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
            head = s.recv(4096).split(b"\r\n", 1)[0]
        return int(head.split()[1])

    return await anyio.to_thread.run_sync(get)


async def test_revoking_the_token_ends_its_viewer_session(http: Http) -> None:
    token = http.token("alpha")
    token_id = token.split("_")[1]
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(base_url=http.base) as client:
            await login(http, client, token)
            before = await client.get("/a/alpha")
            http.store.revoke(token_id)
            after = await client.get("/a/alpha")
    assert before.status_code == 200
    assert after.status_code == 303 and after.headers["location"] == "/login"


async def test_the_agent_page_shows_what_the_hooks_last_injected(http: Http) -> None:
    from memoryd.cli.hooks.state import record_run

    token = http.token("alpha")
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(base_url=http.base) as client:
            await login(http, client, token)
            before = await client.get("/a/alpha")
            # What `memoryd hook` notes after each run, with the hook's own writer (counts, never text).
            record_run(http.daemon.state, "claude-code", "UserPromptSubmit", injected=3, chars=612, outcome="injected")
            record_run(http.daemon.state, "codex", "Stop", injected=0, chars=0, outcome="captured")
            after = await client.get("/a/alpha")
    assert before.status_code == 200 and "No host hook has run on this machine." in before.text
    row = re.search(
        r"<tr><td>claude-code UserPromptSubmit</td><td>[0-9T:-]+Z</td><td>injected</td>"
        r"<td class=num>3</td><td class=num>612</td></tr>",
        after.text,
    )
    assert row, after.text
    assert "<td>codex Stop</td>" in after.text and "<td>captured</td>" in after.text
