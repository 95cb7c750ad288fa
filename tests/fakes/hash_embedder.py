"""A deterministic embedding provider for tests: hashed bag of content words.

Every content word (stop words dropped, CJK runs cut into pairs) adds a signed one-hot vector chosen
by its hash, so texts that share words are close and texts that share none are nearly orthogonal.
No model, no network, the same vector for the same text on every machine.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from memoryd.embeddings.base import Fingerprint, Vectors, normalize_rows
from memoryd.errors import EmbeddingError
from memoryd.search.expand import is_stop_word
from memoryd.store.ngrams import has_cjk, query_ngrams

_WORD_RE = re.compile(r"\w+")


class HashEmbedder:
    """`EmbeddingProvider` over hashed words. `fail_queries` makes `embed_query` raise, `state` can be
    set to "loading" or "error" to play a local model that is not ready."""

    def __init__(self, dims: int = 64, *, model: str = "hash-bow", fail_queries: bool = False) -> None:
        self.dims = dims
        self._model = model
        self.fail_queries = fail_queries
        self.state = "ready"
        self.query_calls = 0

    @property
    def id(self) -> str:
        return "hash"

    @property
    def model(self) -> str:
        return self._model

    @property
    def max_input_tokens(self) -> int:
        return 8192

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint(provider="hash", model=self._model, key_data={"dims": self.dims})

    def vector(self, text: str) -> Vectors:
        row = np.zeros(self.dims, dtype=np.float32)
        for word in _words(text):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dims
            row[index] += 1.0 if digest[4] & 1 else -1.0
        return normalize_rows(row)

    async def embed_query(self, text: str) -> Vectors:
        self.query_calls += 1
        if self.fail_queries:
            raise EmbeddingError("hash embedder told to fail")
        return self.vector(text)

    async def embed_documents(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return np.vstack([self.vector(t) for t in texts])

    async def aclose(self) -> None:
        return None


def _words(text: str) -> list[str]:
    out: list[str] = []
    for word in _WORD_RE.findall(text.lower()):
        if has_cjk(word):
            out.extend(query_ngrams(word))
        elif len(word) > 2 and not is_stop_word(word):
            out.append(word)
    return out
