"""Google Gemini embeddings (Generative Language API).

Queries go to `models/{model}:embedContent` with task type RETRIEVAL_QUERY, documents to
`:batchEmbedContents` with RETRIEVAL_DOCUMENT (at most 100 per request). The key travels in the
`x-goog-api-key` header, never in the URL, so it cannot leak into logs of URLs.
"""

from __future__ import annotations

from collections.abc import Mapping

from memoryd.embeddings.remote import Kind, RemoteEmbeddingProvider, header_pairs

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
        for prefix in ("models/", "gemini/"):
            model = model.removeprefix(prefix)
        return model

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

    def _request(self, text: str, kind: Kind) -> dict[str, object]:
        request: dict[str, object] = {
            "model": f"models/{self._model}",
            "content": {"parts": [{"text": text}]},
            "taskType": _TASK_TYPES[kind],
        }
        if self._settings.output_dimensionality:
            request["outputDimensionality"] = self._settings.output_dimensionality
        return request

    async def _request_vectors(self, texts: list[str], kind: Kind) -> list[object]:
        if kind == "query" and len(texts) == 1:
            answer = await self._post_json(f"/models/{self._model}:embedContent", self._request(texts[0], kind))
            embedding = answer.get("embedding") if isinstance(answer, Mapping) else None
            return [self._values(embedding)]
        body = {"requests": [self._request(t, kind) for t in texts]}
        answer = await self._post_json(f"/models/{self._model}:batchEmbedContents", body)
        embeddings = answer.get("embeddings") if isinstance(answer, Mapping) else None
        if not isinstance(embeddings, list):
            raise self._fail('response has no "embeddings" list')
        return [self._values(e) for e in embeddings]

    def _values(self, embedding: object) -> object:
        if not isinstance(embedding, Mapping) or "values" not in embedding:
            raise self._fail('response has an embedding without "values"')
        return embedding["values"]
