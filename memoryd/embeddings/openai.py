"""OpenAI embeddings, and any server that speaks its API (`POST {base}/embeddings`, Bearer auth).

Voyage and Mistral use the same request and response shapes; they subclass `OpenAICompatibleProvider`
and change only defaults, extra request fields and the provider key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from memoryd.embeddings.remote import Kind, RemoteEmbeddingProvider, header_pairs


class OpenAICompatibleProvider(RemoteEmbeddingProvider):
    """`{model, input: [...]}` in, `{data: [{index, embedding}]}` out."""

    dimensions_field: ClassVar[str] = "dimensions"
    """Request field that asks for shorter vectors (sent only when output_dimensionality is set)."""

    def _request_fields(self, kind: Kind) -> dict[str, object]:
        """Extra request fields for this provider."""
        return {}

    async def _request_vectors(self, texts: list[str], kind: Kind) -> list[object]:
        body: dict[str, object] = {"model": self._model, "input": texts, **self._request_fields(kind)}
        if self._settings.output_dimensionality:
            body[self.dimensions_field] = self._settings.output_dimensionality
        answer = await self._post_json("/embeddings", body)
        data = answer.get("data") if isinstance(answer, Mapping) else None
        if not isinstance(data, list) or not all(isinstance(d, Mapping) for d in data):
            raise self._fail('response has no "data" list of embedding objects')
        # The API numbers its items; do not rely on their order.
        if all(isinstance(d.get("index"), int) for d in data):
            data = sorted(data, key=lambda d: int(d["index"]))
        return [d.get("embedding") for d in data]


class OpenAIProvider(OpenAICompatibleProvider):
    """OpenAI itself, or an OpenAI-compatible base URL."""

    provider_id = "openai"
    default_model = "text-embedding-3-small"
    default_base_url = "https://api.openai.com/v1"
    api_key_env = ("OPENAI_API_KEY",)
    max_batch_items = 2048

    def _key_data(self) -> dict[str, object]:
        data: dict[str, object] = {
            "provider": self.provider_id,
            "baseUrl": self._base_url,
            "model": self._model,
            "headers": header_pairs(self._settings.headers, secret_names=self.secret_header_names),
        }
        if self._settings.output_dimensionality:
            data["dimensions"] = self._settings.output_dimensionality
        return data
