"""`memoryd model pull`: locate or download the local embedding model and prepare it now."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

import anyio

from memoryd import paths
from memoryd.cli.agents import choose
from memoryd.cli.exits import EXIT_OK
from memoryd.config import Config
from memoryd.embeddings.local import LoadState, LocalEmbeddingProvider
from memoryd.errors import DaemonError


def pull(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    local = choose(args, cfg).settings.local
    cache = Path(local.model_cache_dir).expanduser() if local.model_cache_dir else paths.cache_dir() / "models"
    model_path = Path(local.model_path).expanduser() if local.model_path else None

    def progress(name: str, done: int, total: int | None) -> None:
        if sys.stderr.isatty():
            size = f" of {total / 1e6:.1f} MB" if total else ""
            sys.stderr.write(f"\rdownloading {name}: {done / 1e6:.1f} MB{size}")

    async def load() -> LocalEmbeddingProvider:
        provider = LocalEmbeddingProvider(cache, model_path=model_path, progress=progress)
        await provider.load()
        return provider

    provider = anyio.run(load)
    if provider.state is not LoadState.READY:
        raise provider.error or DaemonError("the local model did not load")
    out.write(f"{provider.model}: ready ({provider.dims} dims, source: {provider.source})\n")
    anyio.run(provider.aclose)
    return EXIT_OK
