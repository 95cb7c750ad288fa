"""Ollama embeddings from a local (or self-hosted) Ollama server; no API key.

Current Ollama embeds a list per call at `/api/embed`. Servers older than that answer 404 there
(a plain "404 page not found", unlike the JSON error for an unknown model); then this provider
switches, for its lifetime, to the older `/api/embeddings`, which takes one `prompt` per call.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from memoryd.embeddings.remote import Kind, RemoteEmbeddingProvider


class OllamaProvider(RemoteEmbeddingProvider):
    provider_id = "ollama"
    default_model = "nomic-embed-text"
    default_base_url = "http://127.0.0.1:11434"
    supports_output_dimensionality = False

    _legacy_api = False

    async def _request_vectors(self, texts: list[str], kind: Kind) -> list[object]:
        if not self._legacy_api:
            response = await self._post("/api/embed", {"model": self._model, "input": texts})
            if response.status_code == 404 and not _is_json_error(response.content):
                self._legacy_api = True
            elif response.status_code >= 400:
                raise self._error_for(response)
            else:
                return self._embeddings_of(response.content)
        return [await self._legacy_vector(text) for text in texts]

    def _embeddings_of(self, content: bytes) -> list[object]:
        try:
            answer = orjson.loads(content)
        except orjson.JSONDecodeError:
            raise self._fail("response from /api/embed is not valid JSON") from None
        embeddings = answer.get("embeddings") if isinstance(answer, Mapping) else None
        if not isinstance(embeddings, list):
            raise self._fail('response from /api/embed has no "embeddings" list')
        return embeddings

    async def _legacy_vector(self, text: str) -> object:
        answer = await self._post_json("/api/embeddings", {"model": self._model, "prompt": text})
        if not isinstance(answer, Mapping) or "embedding" not in answer:
            raise self._fail('response from /api/embeddings has no "embedding"')
        return answer["embedding"]


def _is_json_error(content: bytes) -> bool:
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return False
    return isinstance(body, Mapping) and "error" in body
