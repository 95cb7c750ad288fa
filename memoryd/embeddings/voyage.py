"""Voyage AI embeddings: OpenAI-shaped API with `input_type` query/document (asymmetric models)."""

from __future__ import annotations

from memoryd.embeddings.openai import OpenAICompatibleProvider
from memoryd.embeddings.remote import Kind


class VoyageProvider(OpenAICompatibleProvider):
    """`POST {base}/embeddings {model, input, input_type}`; Bearer auth."""

    provider_id = "voyage"
    default_model = "voyage-4-large"
    default_base_url = "https://api.voyageai.com/v1"
    api_key_env = ("VOYAGE_API_KEY",)
    max_batch_items = 1000
    dimensions_field = "output_dimension"

    def _request_fields(self, kind: Kind) -> dict[str, object]:
        return {"input_type": kind}

    def _key_data(self) -> dict[str, object]:
        # OpenClaw keys Voyage by {provider, model}; a chosen dimension changes the vectors too.
        if self._settings.output_dimensionality:
            return {
                "provider": self.provider_id,
                "model": self._model,
                "outputDimensionality": self._settings.output_dimensionality,
            }
        return {}
