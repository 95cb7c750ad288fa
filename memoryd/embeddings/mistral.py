"""Mistral embeddings: the OpenAI request/response shape at api.mistral.ai."""

from __future__ import annotations

from memoryd.embeddings.openai import OpenAICompatibleProvider


class MistralProvider(OpenAICompatibleProvider):
    """`POST {base}/embeddings {model, input}`; Bearer auth."""

    provider_id = "mistral"
    default_model = "mistral-embed"
    default_base_url = "https://api.mistral.ai/v1"
    api_key_env = ("MISTRAL_API_KEY",)
    dimensions_field = "output_dimension"

    def _key_data(self) -> dict[str, object]:
        data: dict[str, object] = {"provider": self.provider_id, "model": self._model}
        if self._settings.output_dimensionality:
            data["outputDimensionality"] = self._settings.output_dimensionality
        return data
