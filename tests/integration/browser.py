"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: fd 3 in,
fd 4 out, NUL-separated JSON), so no WebSocket client or browser driver package is needed; and a small
PNG reader for the screenshots it takes."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import struct
import subprocess
import time
import zlib
from pathlib import Path
from typing import Any


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with one page; every call waits with a deadline."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_browser, self._to_browser = os.pipe()
        self._from_browser, from_browser = os.pipe()
        flags = [
            "--headless=new",
            "--no-sandbox",  # root in a container has no user namespace sandbox; the pages are our own
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "--window-size=1100,900",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser}', binary, *flags],
            pass_fds=(to_browser, from_browser),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.page("Page.enable")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)
        os.close(self._to_browser)
        os.close(self._from_browser)

    def call(self, method: str, timeout: float = 30.0, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive(timeout)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result
            self.events.append(reply)

    def page(self, method: str, **params: Any) -> dict[str, Any]:
        return self.call(method, session=self.session, **params)

    def evaluate(self, expression: str) -> Any:
        result = self.page("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result["result"].get("value")

    def wait_loaded(self, path: str, timeout: float = 30.0) -> None:
        """Until a page load ends at `path` (after redirects)."""
        deadline = time.monotonic() + timeout
        while True:
            while self.events:
                if self.events.pop(0).get("method") == "Page.loadEventFired" and self.path() == path:
                    return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no page load at {path}; at {self.path()}")
            self.events.append(self._receive(remaining))

    def goto(self, url: str, path: str) -> None:
        self.events.clear()
        self.page("Page.navigate", url=url)
        self.wait_loaded(path)

    def path(self) -> str:
        return str(self.evaluate("location.pathname"))

    def screenshot(self, selector: str, out: Path) -> list[tuple[int, int, int]]:
        """The pixels of the first element matching `selector` (also written to `out` as PNG)."""
        box = self.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
            " return [r.x, r.y, r.width, r.height]; })()"
        )
        x, y, w, h = box
        shot = self.page(
            "Page.captureScreenshot", format="png", clip={"x": x, "y": y, "width": w, "height": h, "scale": 1}
        )
        data = base64.b64decode(shot["data"])
        out.write_bytes(data)
        return png_pixels(data)

    def _receive(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_browser], [], [], max(0.0, remaining))
            if not ready:
                raise AssertionError("the browser did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise AssertionError("the browser closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed


def png_pixels(data: bytes) -> list[tuple[int, int, int]]:
    """The RGB pixels of an 8-bit RGB or RGBA PNG (what Chromium writes), row by row."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    pixels: list[tuple[int, int, int]] = []
    for row in range(height):
        start = row * (stride + 1)
        filt, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if filt == 1:
                line[i] = (line[i] + left) & 0xFF
            elif filt == 2:
                line[i] = (line[i] + up) & 0xFF
            elif filt == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif filt == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        pixels.extend((line[i], line[i + 1], line[i + 2]) for i in range(0, stride, channels))
        previous = line
    return pixels
