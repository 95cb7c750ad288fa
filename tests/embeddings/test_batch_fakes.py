"""The fake batch APIs themselves: they must reject what the real APIs reject, or they prove nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import orjson
import pytest

from tests.fakes.batch_servers import GeminiBatchFake, OpenAIBatchFake, VoyageBatchFake

AUTH = {"Authorization": "Bearer k"}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as c:
        yield c


def upload(
    client: httpx.Client, server: OpenAIBatchFake, lines: list[object], purpose: str = "batch"
) -> httpx.Response:
    content = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    return client.post(
        f"{server.base_url}/files",
        data={"purpose": purpose},
        files={"file": ("in.jsonl", content, "application/jsonl")},
        headers=AUTH,
    )


def test_openai_fake_accepts_only_batch_uploads_and_its_own_completion_window(client: httpx.Client) -> None:
    with OpenAIBatchFake(api_key="k") as server:
        wrong_purpose = upload(client, server, [], purpose="fine-tune")
        file_id = upload(client, server, []).json()["id"]
        body = {"input_file_id": file_id, "endpoint": "/v1/embeddings", "completion_window": "1h"}
        wrong_window = client.post(f"{server.base_url}/batches", json=body, headers=AUTH)
        anonymous = client.post(f"{server.base_url}/batches", json={**body, "completion_window": "24h"})
    assert wrong_purpose.status_code == 400
    assert wrong_window.status_code == 400
    assert "completion_window" in wrong_window.json()["error"]["message"]
    assert anonymous.status_code == 401


def test_openai_fake_fails_a_job_whose_input_lines_do_not_match_the_endpoint(client: httpx.Client) -> None:
    good = {"custom_id": "0", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m", "input": "a"}}
    bad = {**good, "custom_id": "1", "url": "/v1/chat/completions"}
    with OpenAIBatchFake(api_key="k") as server:
        file_id = upload(client, server, [good, bad, {**good}]).json()["id"]
        body = {"input_file_id": file_id, "endpoint": "/v1/embeddings", "completion_window": "24h"}
        batch = client.post(f"{server.base_url}/batches", json=body, headers=AUTH).json()
        status = client.get(f"{server.base_url}/batches/{batch['id']}", headers=AUTH).json()
    assert (batch["status"], status["status"]) == ("validating", "failed")
    assert [(e["line"], e["code"]) for e in status["errors"]["data"]] == [
        (2, "invalid_request"),
        (3, "duplicate_custom_id"),
    ]


def test_voyage_fake_wants_the_model_per_job_not_per_line(client: httpx.Client) -> None:
    line = {"custom_id": "0", "body": {"input": "a", "model": "voyage-3"}}
    with VoyageBatchFake(api_key="k") as server:
        file_id = upload(client, server, [line]).json()["id"]
        body = {"input_file_id": file_id, "endpoint": "/v1/embeddings", "completion_window": "12h"}
        no_params = client.post(f"{server.base_url}/batches", json=body, headers=AUTH)
        params = {"model": "voyage-3", "input_type": "document"}
        batch = client.post(f"{server.base_url}/batches", json={**body, "request_params": params}, headers=AUTH)
        status = client.get(f"{server.base_url}/batches/{batch.json()['id']}", headers=AUTH).json()
    assert no_params.status_code == 400
    assert no_params.json() == {"detail": "request_params.model is required"}
    assert status["status"] == "failed"


def test_gemini_fake_checks_upload_type_input_file_and_download_form(client: httpx.Client) -> None:
    headers = {"x-goog-api-key": "k"}
    with GeminiBatchFake(api_key="k") as server:
        root = server.root_url
        plain = client.post(f"{root}/upload/v1beta/files", content=b"{}", headers=headers)
        create = client.post(
            f"{server.base_url}/models/gemini-embedding-001:asyncBatchEmbedContent",
            json={"batch": {"displayName": "x", "inputConfig": {"fileName": "files/missing"}}},
            headers=headers,
        )
        no_alt = client.get(f"{root}/download/v1beta/files/out1:download", headers=headers)
        anonymous = client.get(f"{server.base_url}/batches/none")
    assert plain.status_code == 400
    assert no_alt.status_code == 400
    assert create.status_code == 400
    assert "files/missing" in create.json()["error"]["message"]
    assert anonymous.status_code == 403


def test_job_state_is_safe_to_poll_from_many_threads(client: httpx.Client) -> None:
    """Status requests arrive on server threads; each must count once and the job must settle once."""
    line = {"custom_id": "0", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m", "input": "a"}}
    with OpenAIBatchFake(api_key="k") as server:
        server.lifecycle = ("validating", *["in_progress"] * 10, "completed")
        file_id = upload(client, server, [line]).json()["id"]
        body = {"input_file_id": file_id, "endpoint": "/v1/embeddings", "completion_window": "24h"}
        job_id = client.post(f"{server.base_url}/batches", json=body, headers=AUTH).json()["id"]

        def poll() -> None:
            with httpx.Client(timeout=5) as own:
                for _ in range(4):
                    own.get(f"{server.base_url}/batches/{job_id}", headers=AUTH)

        threads = [threading.Thread(target=poll) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        final = client.get(f"{server.base_url}/batches/{job_id}", headers=AUTH).json()
        assert server.polls == {job_id: 17}
        assert server.max_active == 1
        assert server.book.active == 0
        assert final["status"] == "completed"
        assert server.failures == []
