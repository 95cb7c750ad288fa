"""The ONNX side of the local provider: tokenise, plan runs, run the session and pool (blocking).

Cores: one session serves documents and queries, with one intra-op thread per core. Its threads
spin between operators while a run is under way (turning spinning off altogether cost up to a
third of the indexing rate), but stop as soon as the last run returns (`session.force_spinning_stop`):
left spinning, they burnt ~30 ms of a core after each query embedding, taken from the keyword
and vector legs that run right after it. A second, single-threaded session for queries would
avoid the spinning too, but holds another ~35 MB of weights for nothing the first cannot do.

Speed (bench/local_model.py): when the `onnx` package is importable the model is rewritten once
into a dynamically quantised graph (quantize.quantized_model): ~1.5x the chunks/s, a third less
memory, every vector within cosine 0.99 of the stored model's (0.989 on an AVX2-only EPYC, whose
int8 kernels are less precise; the top results stay the same). Dynamic quantisation picks one
activation scale per run, so texts sharing a run would colour each other's vectors; a quantised
model therefore gets one text per run (no padding at all), which also measured fastest for
256-token chunks. Unquantised models get runs of texts sorted by length and padded to the
longest, within a token budget.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from tokenizers import Encoding, Tokenizer

from memoryd.embeddings.base import Vectors, normalize_rows
from memoryd.embeddings.models import ModelFiles, ModelSpec
from memoryd.errors import EmbeddingError

DEFAULT_BATCH_TOKENS = 1024
"""Padded tokens per unquantised run: 4 chunks of 256 tokens. Larger runs were no faster here and
peak memory grows with them (attention scores scale with batch x length²)."""


STOP_SPINNING_AFTER_RUNS = "session.force_spinning_stop"
"""onnxruntime's session option: intra-op threads stop spinning when the last concurrent run returns."""


def default_threads() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS has no affinity masks
        return max(1, os.cpu_count() or 1)


def onnx_available() -> bool:
    """Whether the `onnx` package (needed to quantise a model) is installed."""
    return importlib.util.find_spec("onnx") is not None


def plan_runs(lengths: Sequence[int], batch_tokens: int, *, one_text_per_run: bool = False) -> list[list[int]]:
    """Group text indexes into model runs: shortest first, so each run pads little (only to its own
    longest text), and no run exceeds `batch_tokens` padded tokens unless one text alone does."""
    order = sorted(range(len(lengths)), key=lambda k: lengths[k])
    if one_text_per_run:
        return [[k] for k in order]
    runs: list[list[int]] = []
    current: list[int] = []
    for k in order:
        if current and (len(current) + 1) * lengths[k] > batch_tokens:
            runs.append(current)
            current = []
        current.append(k)
    if current:
        runs.append(current)
    return runs


WINDOW_STRIDE = 32
"""Tokens each window of a long document repeats from the one before (so no sentence is cut blind)."""


class Encoder:
    """Tokenise, run and pool. Blocking; two calls may run at once (the session accepts concurrent
    runs and the tokenizer is only read), which lets a query run beside a batch of documents."""

    def __init__(
        self,
        session: Any,
        tokenizer: Tokenizer,
        spec: ModelSpec,
        *,
        pad_id: int,
        batch_tokens: int,
        one_text_per_run: bool,
    ) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._spec = spec
        self._pad_id = pad_id
        self._batch_tokens = batch_tokens
        self._one_text_per_run = one_text_per_run
        self._inputs = {i.name: (np.int32 if "int32" in i.type else np.int64) for i in session.get_inputs()}

    def encode(self, texts: Sequence[str], *, windows: bool = False) -> Vectors:
        """One L2-normalised row per text; blank texts get a zero row (they carry no meaning).

        The model reads `max_tokens` tokens. With `windows`, a longer text is read in windows of that
        size (each repeating WINDOW_STRIDE tokens of the one before) and its row is the token-weighted
        mean of the windows' pooled vectors: the mean pooling the model does, over the whole text.
        Without, the text is truncated, as sentence-transformers does.
        """
        out = np.zeros((len(texts), self._spec.dims), dtype=np.float32)
        todo = [i for i, text in enumerate(texts) if text.strip()]
        if not todo:
            return out
        if len(todo) == 1:  # e.g. a query: encode_batch would wake the tokenizer's thread pool for one text
            encodings = [self._tokenizer.encode(texts[todo[0]])]
        else:
            encodings = self._tokenizer.encode_batch([texts[i] for i in todo])
        owner = list(range(len(encodings)))
        if windows:
            for k in range(len(encodings)):
                extra = encodings[k].overflowing
                encodings.extend(extra)
                owner.extend([k] * len(extra))
        lengths = [len(encoding.ids) for encoding in encodings]
        pooled = np.zeros((len(encodings), self._spec.dims), dtype=np.float32)
        for group in plan_runs(lengths, self._batch_tokens, one_text_per_run=self._one_text_per_run):
            pooled[group] = self._run([encodings[k] for k in group])
        weights = np.asarray(lengths, dtype=np.float32)[:, None]
        summed = np.zeros((len(todo), self._spec.dims), dtype=np.float32)
        np.add.at(summed, np.asarray(owner), pooled * weights)
        out[todo] = summed
        return normalize_rows(out)

    def _run(self, encodings: list[Encoding]) -> npt.NDArray[np.float32]:
        longest = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), longest), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), longest), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {name: arrays[name].astype(dtype, copy=False) for name, dtype in self._inputs.items()}
        try:
            hidden = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        except Exception as exc:  # onnxruntime's errors derive from Exception directly
            raise EmbeddingError(f"local embedding model failed: {exc}") from exc
        if hidden.ndim == 2:  # the graph pools by itself
            return hidden
        if self._spec.pooling == "cls":
            return hidden[:, 0, :]
        weights = mask.astype(np.float32)[:, :, None]
        pooled: npt.NDArray[np.float32] = (hidden * weights).sum(axis=1) / np.maximum(
            weights.sum(axis=1), np.float32(1e-9)
        )
        return pooled


def load_encoder(
    files: ModelFiles,
    spec: ModelSpec,
    *,
    threads: int,
    batch_tokens: int = DEFAULT_BATCH_TOKENS,
    one_text_per_run: bool = False,
    onnx_file: Path | None = None,
) -> Encoder:
    """Open an onnxruntime session and the tokenizer (blocking). `onnx_file` overrides `files.onnx`."""
    import onnxruntime as ort  # noqa: PLC0415 - 0.2 s import, paid in the worker thread on first use

    path = onnx_file or files.onnx
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry(STOP_SPINNING_AFTER_RUNS, "1")  # see the module docstring
    # No arena: onnxruntime's own arena keeps its peak (the largest batch) for the process lifetime; with
    # plain malloc that memory goes back after a sync (memoryd.heap). Same chunks/s and query time here,
    # ~30 MB less RSS after a reindex under load.
    options.enable_cpu_mem_arena = False
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's errors derive from Exception directly
        raise EmbeddingError(
            f"local model file {path} cannot be loaded ({exc}): it is damaged or not an ONNX model; "
            f"replace it, or remove it (and any local.modelPath setting) so memoryd fetches the model again"
        ) from exc
    width = session.get_outputs()[0].shape[-1]
    if isinstance(width, int) and width != spec.dims:
        raise EmbeddingError(
            f"local model file {path} produces {width}-dimensional vectors, but model {spec.name} has "
            f"{spec.dims}: point local.modelPath at the matching model"
        )
    try:
        tokenizer = Tokenizer.from_file(str(files.tokenizer))
    except Exception as exc:  # tokenizers raises plain Exception on a malformed file
        raise EmbeddingError(
            f"tokenizer file {files.tokenizer} cannot be read ({exc}): replace it with the model's tokenizer.json"
        ) from exc
    padding = tokenizer.padding or {}
    pad_id = int(padding.get("pad_id", 0))
    # The shipped tokenizer.json pads and truncates to a fixed 128 tokens: truncate at what the model
    # reads instead, and pad per run (in Encoder._run).
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=spec.max_tokens, stride=WINDOW_STRIDE)
    return Encoder(
        session,
        tokenizer,
        spec,
        pad_id=pad_id,
        batch_tokens=batch_tokens,
        one_text_per_run=one_text_per_run,
    )
