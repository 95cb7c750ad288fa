"""Google Gemini embeddings (Generative Language API).

Queries go to `models/{model}:embedContent` with task type RETRIEVAL_QUERY, documents to
`:batchEmbedContents` with RETRIEVAL_DOCUMENT (at most 100 per request). The key travels in the
`x-goog-api-key` header, never in the URL, so it cannot leak into logs of URLs.

Gemini Embedding 2 models also embed images and audio (multimodal memory): a media file is one
request whose content has two parts, its caption as text and its bytes as `inlineData` (MIME type
and base64 data), answered with one vector for both. Each media file goes in a request of its own,
so one file the API refuses as too large costs only that file.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

from memoryd.embeddings.base import MediaInput, Vectors
from memoryd.embeddings.remote import Kind, RemoteEmbeddingProvider, header_pairs
from memoryd.media import bare_model, embeds_media

_TASK_TYPES: Mapping[Kind, str] = {"query": "RETRIEVAL_QUERY", "document": "RETRIEVAL_DOCUMENT"}


class GeminiProvider(RemoteEmbeddingProvider):
    provider_id = "gemini"
    default_model = "gemini-embedding-001"
    default_base_url = "https://generativelanguage.googleapis.com/v1beta"
    api_key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    max_batch_items = 100
    secret_header_names = ("authorization", "x-goog-api-key")

    def _auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._api_key} if self._api_key else {}

    def _normalize_model(self, model: str) -> str:
        return bare_model(model)

    @property
    def embeds_media(self) -> bool:
        return embeds_media(self.provider_id, self._model)

    async def embed_media(self, items: list[MediaInput]) -> Vectors:
        if not self.embeds_media:
            raise self._fail(f"model {self._model} cannot embed images or audio")
        rows: list[object] = []
        for item in items:
            parts: list[object] = [
                {"text": item.caption},
                {"inlineData": {"mimeType": item.mime_type, "data": base64.b64encode(item.data).decode("ascii")}},
            ]
            body = {"requests": [self._request(parts, "document")]}
            async with self._document_requests:
                rows.extend(await self._batch_vectors(body))
        return self._finish(rows, expected=len(items))

    def _key_data(self) -> dict[str, object]:
        data: dict[str, object] = {
            "provider": self.provider_id,
            "baseUrl": self._base_url,
            "model": self._model,
        }
        if self._settings.output_dimensionality:
            data["outputDimensionality"] = self._settings.output_dimensionality
        data["headers"] = header_pairs(self._settings.headers, secret_names=self.secret_header_names)
        return data

    def _request(self, parts: list[object], kind: Kind) -> dict[str, object]:
        request: dict[str, object] = {
            "model": f"models/{self._model}",
            "content": {"parts": parts},
            "taskType": _TASK_TYPES[kind],
        }
        if self._settings.output_dimensionality:
            request["outputDimensionality"] = self._settings.output_dimensionality
        return request

    async def _request_vectors(self, texts: list[str], kind: Kind) -> list[object]:
        if kind == "query" and len(texts) == 1:
            request = self._request([{"text": texts[0]}], kind)
            answer = await self._post_json(f"/models/{self._model}:embedContent", request)
            embedding = answer.get("embedding") if isinstance(answer, Mapping) else None
            return [self._values(embedding)]
        return await self._batch_vectors({"requests": [self._request([{"text": t}], kind) for t in texts]})

    async def _batch_vectors(self, body: Mapping[str, object]) -> list[object]:
        answer = await self._post_json(f"/models/{self._model}:batchEmbedContents", body)
        embeddings = answer.get("embeddings") if isinstance(answer, Mapping) else None
        if not isinstance(embeddings, list):
            raise self._fail('response has no "embeddings" list')
        return [self._values(e) for e in embeddings]

    def _values(self, embedding: object) -> object:
        if not isinstance(embedding, Mapping) or "values" not in embedding:
            raise self._fail('response has an embedding without "values"')
        return embedding["values"]
