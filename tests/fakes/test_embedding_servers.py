"""The fake providers themselves: they must reject what the real APIs reject, or they prove nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.embedding_servers import GeminiFake, OllamaFake, OpenAIFake, VoyageFake
from tests.fakes.http_server import Reply


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as c:
        yield c


def test_openai_fake_rejects_unknown_fields_and_non_string_inputs(client: httpx.Client) -> None:
    with OpenAIFake(api_key="k") as server:
        auth = {"Authorization": "Bearer k"}
        unknown = client.post(
            f"{server.base_url}/embeddings", json={"model": "m", "input": ["a"], "x": 1}, headers=auth
        )
        numbers = client.post(f"{server.base_url}/embeddings", json={"model": "m", "input": [1]}, headers=auth)
        anonymous = client.post(f"{server.base_url}/embeddings", json={"model": "m", "input": ["a"]})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["message"] == "Unrecognized request argument supplied: x"
    assert numbers.status_code == 400
    assert anonymous.status_code == 401


def test_voyage_fake_rejects_an_unknown_input_type(client: httpx.Client) -> None:
    with VoyageFake(api_key="k") as server:
        body = {"model": "m", "input": ["a"], "input_type": "passage"}
        reply = client.post(f"{server.base_url}/embeddings", json=body, headers={"Authorization": "Bearer k"})
    assert reply.status_code == 400
    assert "input_type" in reply.json()["detail"]


def test_gemini_fake_requires_a_key_and_at_most_a_hundred_requests(client: httpx.Client) -> None:
    with GeminiFake(api_key="k") as server:
        url = f"{server.base_url}/models/gemini-embedding-001:batchEmbedContents"
        item = {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "a"}]}}
        anonymous = client.post(url, json={"requests": [item]})
        too_many = client.post(url, json={"requests": [item] * 101}, headers={"x-goog-api-key": "k"})
        wrong_model = client.post(
            url, json={"requests": [{**item, "model": "models/other"}]}, headers={"x-goog-api-key": "k"}
        )
    assert (anonymous.status_code, anonymous.json()["error"]["status"]) == (403, "PERMISSION_DENIED")
    assert too_many.status_code == 400
    assert wrong_model.status_code == 400


def test_ollama_fake_plays_an_old_server_with_a_plain_404(client: httpx.Client) -> None:
    with OllamaFake(legacy_only=True) as server:
        reply = client.post(f"{server.base_url}/api/embed", json={"model": "nomic-embed-text", "input": ["a"]})
    assert (reply.status_code, reply.text) == (404, "404 page not found")


def test_scripted_replies_go_to_matching_paths_in_order(client: httpx.Client) -> None:
    with OllamaFake() as server:
        server.enqueue(Reply.text("first", 500), Reply.text("second", 502), path="/api/embeddings")
        body = {"model": "nomic-embed-text", "prompt": "a"}
        normal = client.post(f"{server.base_url}/api/embed", json={"model": "nomic-embed-text", "input": ["a"]})
        first = client.post(f"{server.base_url}/api/embeddings", json=body)
        second = client.post(f"{server.base_url}/api/embeddings", json=body)
        after = client.post(f"{server.base_url}/api/embeddings", json=body)
    assert [r.status_code for r in (normal, first, second, after)] == [200, 500, 502, 200]
    assert [r.path for r in server.requests] == ["/api/embed", *["/api/embeddings"] * 3]


def test_closing_releases_a_stalled_request_and_joins_its_thread(client: httpx.Client) -> None:
    server = OpenAIFake(api_key=None).start()
    server.enqueue(server.stall())
    with pytest.raises(httpx.ReadTimeout):
        client.post(f"{server.base_url}/embeddings", json={"model": "m", "input": ["a"]}, timeout=0.1)
    closer = threading.Thread(target=server.close)
    closer.start()
    closer.join(timeout=5)
    assert not closer.is_alive()
    assert server.failures == []
