"""The default embedding provider: a small ONNX model on the CPU (onnxruntime + tokenizers, no torch).

Loading is lazy and can run in the background: the daemon starts `load()` and reports `state`
(idle → loading → ready, or error) without ever blocking start-up on a model download. Inference
runs in worker threads, so the event loop never waits on the CPU.

Limiters: document batches run one at a time (each already uses every core); queries have their
own limiter of one and run beside a batch in flight (onnxruntime sessions accept concurrent runs),
so a search during a big sync never queues behind the sync's batches.

The model itself (sessions, runs, window pooling, quantised graphs) is memoryd.embeddings.onnx_encoder.
"""

from __future__ import annotations

import functools
import threading
from enum import StrEnum
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread
import numpy as np
import structlog

from memoryd import heap
from memoryd.embeddings.base import Fingerprint, Vectors
from memoryd.embeddings.models import (
    ALL_MINILM_L6_V2,
    HF_HUB_URL,
    ModelSource,
    ModelSpec,
    ProgressCallback,
    locate_model,
)
from memoryd.embeddings.onnx_encoder import (
    DEFAULT_BATCH_TOKENS,
    Encoder,
    default_threads,
    load_encoder,
    onnx_available,
)
from memoryd.embeddings.quantize import quantized_model
from memoryd.errors import EmbeddingError

log = structlog.get_logger(__name__)


class LoadState(StrEnum):
    IDLE = "idle"
    LOADING = "loading"
    READY = "ready"
    ERROR = "error"


class LocalEmbeddingProvider:
    """`EmbeddingProvider` for a local ONNX model; see the module docstring for how it runs.

    `cache_dir` is the models cache root (files go to `cache_dir/<model name>/`); `threads` 0 means
    one per core; `quantize` None means "when the onnx package is installed". A configured model
    that is already dynamically quantised wants `quantize` on: it is then used as it is, one text
    per run.
    """

    def __init__(
        self,
        cache_dir: Path,
        *,
        model_path: Path | None = None,
        spec: ModelSpec = ALL_MINILM_L6_V2,
        threads: int = 0,
        quantize: bool | None = None,
        allow_download: bool = True,
        hub_url: str = HF_HUB_URL,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        progress: ProgressCallback | None = None,
        windows: bool = False,
    ) -> None:
        self._cache_dir = cache_dir
        self._windows = windows
        self._model_path = model_path
        self._spec = spec
        self._threads = threads if threads > 0 else default_threads()
        self._quantize = onnx_available() if quantize is None else quantize
        self._allow_download = allow_download
        self._hub_url = hub_url
        self._batch_tokens = batch_tokens
        self._progress = progress
        self._documents_limiter = anyio.CapacityLimiter(1)
        self._query_limiter = anyio.CapacityLimiter(1)
        self._load_lock = anyio.Lock()
        self._encoder: Encoder | None = None
        self._state = LoadState.IDLE
        self._error: EmbeddingError | None = None
        self._source: ModelSource | None = None

    @property
    def id(self) -> str:
        return "local"

    @property
    def model(self) -> str:
        """The model's name, suffixed `-int8` when it runs dynamically quantised (different vectors)."""
        return f"{self._spec.name}-int8" if self._quantize else self._spec.name

    @property
    def max_input_tokens(self) -> int:
        return self._spec.max_tokens

    @property
    def dims(self) -> int:
        return self._spec.dims

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def fingerprint(self) -> Fingerprint:
        key: dict[str, object] = {"provider": self.id, "model": self.model}
        if self._windows:  # whole-document vectors mean something else than truncated ones
            key["long_inputs"] = "windows"
        return Fingerprint(provider=self.id, model=self.model, key_data=key)

    @property
    def state(self) -> LoadState:
        return self._state

    @property
    def error(self) -> EmbeddingError | None:
        """Why the last load failed (while `state` is ERROR)."""
        return self._error

    @property
    def source(self) -> ModelSource | None:
        """Where the loaded model's files came from."""
        return self._source

    async def load(self) -> LoadState:
        """Locate (maybe download), quantise and open the model; never raises `EmbeddingError`.

        Safe to start in the background; concurrent callers share one load. After a failure the
        error is kept in `error` and embedding calls raise it until `load()` is called again.
        """
        async with self._load_lock:
            if self._encoder is not None:
                return self._state
            self._state = LoadState.LOADING
            self._error = None
            # Cancelling abandons the worker thread (a first-use download can take minutes); the event
            # stops its download at the next block, and its temporary file is removed.
            stop = threading.Event()
            try:
                encoder, source = await anyio.to_thread.run_sync(
                    partial(self._build_encoder, stop), limiter=self._documents_limiter, abandon_on_cancel=True
                )
            except EmbeddingError as exc:
                self._state = LoadState.ERROR
                self._error = exc
                log.warning("local embedding model unavailable", error=str(exc))
                return self._state
            finally:
                if self._state is LoadState.LOADING:
                    stop.set()
                    self._state = LoadState.IDLE
            self._encoder = encoder
            self._source = source
            self._state = LoadState.READY
            log.info("local embedding model ready", model=self.model, source=source.value, threads=self._threads)
            return self._state

    def _build_encoder(self, stop: threading.Event) -> tuple[Encoder, ModelSource]:
        def progress(name: str, done: int, total: int | None) -> None:
            if stop.is_set():
                raise EmbeddingError(f"download of {name} stopped: the model load was cancelled")
            if self._progress is not None:
                self._progress(name, done, total)

        files = locate_model(
            self._model_path,
            self._cache_dir,
            spec=self._spec,
            allow_download=self._allow_download,
            hub_url=self._hub_url,
            progress=progress,
        )
        onnx_file = quantized_model(files, self._cache_dir, self._spec) if self._quantize else None
        encoder = load_encoder(
            files,
            self._spec,
            threads=self._threads,
            batch_tokens=self._batch_tokens,
            one_text_per_run=self._quantize,
            onnx_file=onnx_file,
        )
        return encoder, files.source

    async def _ready_encoder(self) -> Encoder:
        if self._encoder is None and self._state is not LoadState.ERROR:
            await self.load()
        if self._encoder is None:
            raise self._error or EmbeddingError("local embedding model is not loaded")
        return self._encoder

    async def embed_query(self, text: str) -> Vectors:
        """Runs beside a batch of documents in flight rather than after it (see the module docstring)."""
        encoder = await self._ready_encoder()
        return await anyio.to_thread.run_sync(encoder.encode, [text], limiter=self._query_limiter)

    async def embed_documents(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._spec.dims), dtype=np.float32)
        encoder = await self._ready_encoder()
        encode = functools.partial(_encode_documents, encoder, list(texts), self._windows)
        return await anyio.to_thread.run_sync(encode, limiter=self._documents_limiter)

    async def aclose(self) -> None:
        """Drop the session once in-flight work is done; a later call loads the model again."""
        async with self._load_lock, self._documents_limiter, self._query_limiter:
            self._encoder = None
            self._source = None
            self._state = LoadState.IDLE
            self._error = None


def _encode_documents(encoder: Encoder, texts: list[str], windows: bool) -> Vectors:
    """One batch of documents, then the heap's free pages handed back: glibc keeps a batch's freed tensors
    and tokens in its arenas, so RSS between batches crept up over a long backlog. In-process on 1,600 history
    chunks: 128 MB between batches instead of 178-224, at the same rate (21.8 vs 22.3 chunks/s); the daemon's
    peak on the 316 MB bench history went 341 -> 313 MB with `memoryd.index.batching`'s bound."""
    vectors = encoder.encode(texts, windows=windows)
    heap.release_free_memory()
    return vectors
