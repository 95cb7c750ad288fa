"""The viewer in a real browser: headless Chromium (Debian's `chromium`, installed by `make browser`) logs in
through the form, searches, opens a session, and its screenshots show a hit highlighted and the index's
status. Skipped, saying why, where Chromium is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.browser import Browser, chromium
from tests.integration.conftest import SECRET, Http

pytestmark = pytest.mark.integration

MARK = (255, 224, 102)
"""The highlight's background in viewer.css (`--mark: #ffe066`)."""


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    binary = chromium()
    if binary is None:
        pytest.skip("Debian's chromium is not installed (make browser could not install it: see its message)")
    b = Browser(binary, tmp_path / "profile")
    try:
        yield b
    finally:
        b.close()


def share(pixels: list[tuple[int, int, int]], colour: tuple[int, int, int], tolerance: int = 6) -> float:
    near = sum(1 for p in pixels if all(abs(a - b) <= tolerance for a, b in zip(p, colour, strict=True)))
    return near / max(1, len(pixels))


def test_login_search_and_a_session_in_a_real_browser(http: Http, browser: Browser, tmp_path: Path) -> None:
    token = http.token("alpha")
    browser.goto(f"{http.base}/", "/login")
    browser.evaluate(
        f"document.querySelector('input[name=token]').value = {token!r};"
        "document.querySelector('form.login').requestSubmit(); true"
    )
    browser.wait_loaded("/a/alpha")
    status_text = browser.evaluate("document.querySelector('#status').innerText")
    assert "files indexed" in status_text and "last sync" in status_text
    status = browser.screenshot("#status", tmp_path / "status.png")
    assert share(status, (255, 255, 255)) < 0.98  # text drawn, not a blank box
    assert browser.evaluate("document.cookie") == ""  # HttpOnly: the page's scripts cannot read the session

    browser.evaluate(
        "document.querySelector('input[name=q]').value = 'bees roof';"
        "document.querySelector('form.search').requestSubmit(); true"
    )
    browser.wait_loaded("/a/alpha/search")
    assert browser.evaluate("[...document.querySelectorAll('mark')].map(m => m.textContent).join(' ')") == "bees roof"
    mark = browser.screenshot("mark", tmp_path / "mark.png")
    assert share(mark, MARK) > 0.3, "the first hit's highlight is not drawn in the stylesheet's colour"

    browser.goto(f"{http.base}/a/alpha/file?path=sessions/s1.jsonl", "/a/alpha/file")
    text = browser.evaluate("document.querySelector('table.file').innerText")
    assert "keep the hive warm" in text and SECRET not in text and '"type"' not in text

    browser.goto(f"{http.base}/a/alpha/file?path=memory/xss.md", "/a/alpha/file")
    assert browser.evaluate("document.querySelectorAll('script').length") == 0
    assert "<script>alert('wasps')</script>" in browser.evaluate("document.querySelector('table.file').innerText")
