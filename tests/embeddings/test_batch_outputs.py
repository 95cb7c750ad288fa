"""Reading batch output lines: whatever order they come in, each vector lands on its own custom id."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.embeddings.batch import OutputLine, collect_outputs, gemini_output_line, openai_output_line
from memoryd.errors import EmbeddingError

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False, width=32)
vector_sets = st.integers(min_value=1, max_value=6).flatmap(
    lambda dims: st.lists(st.lists(finite, min_size=dims, max_size=dims), min_size=1, max_size=25)
)


def openai_record(custom_id: str, row: list[float]) -> dict[str, object]:
    body = {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": row}]}
    return {
        "id": f"req-{custom_id}",
        "custom_id": custom_id,
        "response": {"status_code": 200, "body": body},
        "error": None,
    }


def gemini_record(custom_id: str, row: list[float]) -> dict[str, object]:
    return {"key": custom_id, "response": {"embedding": {"values": row}}}


@given(rows=vector_sets, rnd=st.randoms(use_true_random=False), gemini=st.booleans())
def test_outputs_in_any_order_map_back_to_their_custom_ids(
    rows: list[list[float]], rnd: random.Random, gemini: bool
) -> None:
    ids = [str(i) for i in range(len(rows))]
    records = [(gemini_record if gemini else openai_record)(cid, row) for cid, row in zip(ids, rows, strict=True)]
    rnd.shuffle(records)
    parse = gemini_output_line if gemini else openai_output_line
    found = collect_outputs("test", "job-1", ids, [parse(r) for r in records])
    assert [found[cid].tolist() for cid in ids] == rows


@given(rows=vector_sets, data=st.data())
def test_any_missing_custom_id_fails_the_job_and_is_counted(rows: list[list[float]], data: st.DataObject) -> None:
    ids = [str(i) for i in range(len(rows))]
    missing = data.draw(st.sets(st.sampled_from(ids), min_size=1))
    lines = [
        openai_output_line(openai_record(cid, row)) for cid, row in zip(ids, rows, strict=True) if cid not in missing
    ]
    with pytest.raises(EmbeddingError, match=f"is missing {len(missing)} of {len(ids)} embeddings"):
        collect_outputs("test", "job-1", ids, lines)


def test_an_openai_line_with_an_error_object_carries_its_message() -> None:
    record = {"custom_id": "4", "response": None, "error": {"code": "server_error", "message": "Internal error"}}
    assert openai_output_line(record) == OutputLine("4", None, "Internal error")


def test_an_openai_line_with_a_failed_status_carries_the_bodys_message() -> None:
    body = {"error": {"message": "Too many tokens", "type": "invalid_request_error"}}
    line = openai_output_line({"custom_id": "1", "response": {"status_code": 400, "body": body}})
    assert line == OutputLine("1", None, "HTTP 400: Too many tokens")


@pytest.mark.parametrize(
    "values",
    [[], "0.1,0.2", ["a", "b"], [[0.1], [0.2]], None],
    ids=["empty", "string", "not-numbers", "nested", "absent"],
)
def test_a_line_without_a_usable_vector_is_an_error_for_its_custom_id(values: object) -> None:
    line = gemini_output_line({"key": "7", "response": {"embedding": {"values": values}}})
    assert (line.custom_id, line.vector) == ("7", None)
    assert line.error


def test_errors_of_several_requests_are_counted_and_the_first_are_named() -> None:
    ids = ["0", "1", "2", "3", "4"]
    lines = [OutputLine(cid, None, f"problem {cid}") for cid in ids]
    with pytest.raises(EmbeddingError) as caught:
        collect_outputs("openai", "batch_1", ids, lines)
    message = str(caught.value)
    assert message.startswith(
        "openai batch batch_1 failed for 5 of 5 requests: 0: problem 0; 1: problem 1; 2: problem 2"
    )
    assert "problem 3" not in message
