"""A stand-in model hub on 127.0.0.1: serves files at hub-style URLs, can hold or cut a response."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from memoryd.embeddings.models import ALL_MINILM_L6_V2, HubFile, ModelSpec, PackagedFile, sha256_file

PACKAGED_ONNX = ALL_MINILM_L6_V2.packaged_files[0]
PACKAGED_TOKENIZER = ALL_MINILM_L6_V2.packaged_files[1]


@dataclass
class Hub:
    """Files by URL path; `requests` lists the paths asked for."""

    files: dict[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    cut_short: set[str] = field(default_factory=set)
    request_arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def __post_init__(self) -> None:
        self.release.set()


@contextmanager
def serve(hub: Hub) -> Iterator[Hub]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hub.requests.append(self.path)
            hub.request_arrived.set()
            if not hub.release.wait(timeout=30):
                return
            body = hub.files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.path in hub.cut_short:
                self.wfile.write(body[: len(body) // 2])
                self.close_connection = True
                return
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield hub
    finally:
        hub.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def packaged_path(file: PackagedFile) -> Path:
    """The installed copy of a packaged model file (the test environment installs both packages)."""
    import importlib.util

    found = importlib.util.find_spec(file.package)
    assert found is not None and found.submodule_search_locations
    return Path(next(iter(found.submodule_search_locations))) / file.resource


def hub_only_spec(*, tokenizer_sha256: str | None = None, name: str = "hub-test-model") -> ModelSpec:
    """The default model as if no package were installed: its files come from the hub only."""
    onnx = packaged_path(PACKAGED_ONNX)
    tokenizer = packaged_path(PACKAGED_TOKENIZER)
    return ModelSpec(
        name=name,
        dims=ALL_MINILM_L6_V2.dims,
        max_tokens=ALL_MINILM_L6_V2.max_tokens,
        pooling=ALL_MINILM_L6_V2.pooling,
        hub_repo="test-org/test-model",
        hub_revision="0123abcd",
        hub_files=(
            HubFile(
                role="tokenizer",
                path="tokenizer.json",
                sha256=tokenizer_sha256 or sha256_file(tokenizer),
                size=tokenizer.stat().st_size,
            ),
            HubFile(role="onnx", path="onnx/model.onnx", sha256=PACKAGED_ONNX.sha256, size=onnx.stat().st_size),
        ),
        packaged_files=(PackagedFile("onnx", "memoryd_test_no_such_package", "model.onnx", PACKAGED_ONNX.sha256),),
    )


def hub_files_for(spec: ModelSpec) -> dict[str, bytes]:
    """The URL paths a hub would serve for `spec`, with the packaged bytes."""
    onnx = packaged_path(PACKAGED_ONNX).read_bytes()
    tokenizer = packaged_path(PACKAGED_TOKENIZER).read_bytes()
    prefix = f"/{spec.hub_repo}/resolve/{spec.hub_revision}/"
    return {prefix + "tokenizer.json": tokenizer, prefix + "onnx/model.onnx": onnx}
