"""Line framing: every line comes out whole or is marked oversized, however the bytes arrive."""

from __future__ import annotations

import anyio
import pytest
from anyio.abc import ByteReceiveStream
from hypothesis import given
from hypothesis import strategies as st
from mcp_types import INVALID_REQUEST, PARSE_ERROR, JSONRPCNotification, JSONRPCRequest

from memoryd.server.framing import LineReader, OversizedLine, Rejection, decode_line, encode_message


class ChunkedStream(ByteReceiveStream):
    """Delivers fixed chunks, then end of stream."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)

    async def aclose(self) -> None:
        self._chunks.clear()


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    chunks, start = [], 0
    for size in cuts:
        if start >= len(data):
            break
        chunks.append(data[start : start + size])
        start += size
    if start < len(data):
        chunks.append(data[start:])
    return chunks


async def _read_all(chunks: list[bytes], limit: int) -> list[bytes | OversizedLine]:
    reader = LineReader(ChunkedStream(chunks), limit)
    lines: list[bytes | OversizedLine] = []
    while (line := await reader.next_line()) is not None:
        lines.append(line)
    return lines


@given(
    lines=st.lists(st.binary(max_size=40).map(lambda raw: raw.replace(b"\n", b"")), max_size=12),
    limit=st.integers(min_value=1, max_value=32),
    cuts=st.lists(st.integers(min_value=1, max_value=50), max_size=30),
    final_newline=st.booleans(),
)
def test_every_line_comes_out_whole_or_marked_oversized(
    lines: list[bytes], limit: int, cuts: list[int], final_newline: bool
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    expected: list[bytes | OversizedLine] = [line if len(line) <= limit else OversizedLine(limit) for line in lines]
    if lines and not final_newline and lines[-1] == b"":
        expected.pop()  # "a\n" without a final newline is one line, not two
    assert anyio.run(_read_all, _split(data, cuts), limit) == expected


def test_a_line_of_exactly_the_limit_is_accepted_and_one_byte_more_is_not() -> None:
    lines = anyio.run(_read_all, [b"12345\n123456\nok\n"], 5)
    assert lines == [b"12345", OversizedLine(5), b"ok"]


def test_bytes_after_the_last_line_can_be_taken_over() -> None:
    async def scenario() -> tuple[bytes | OversizedLine | None, bytes]:
        reader = LineReader(ChunkedStream([b'{"reply":1}\nrest of the stream']), 100)
        return await reader.next_line(), reader.take_buffered()

    assert anyio.run(scenario) == (b'{"reply":1}', b"rest of the stream")


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        (b"not json", PARSE_ERROR, None),
        (b'{"jsonrpc":"2.0","id":1,"method":"p\xffing"}', PARSE_ERROR, None),
        (b"[]", INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":4}', INVALID_REQUEST, 4),
        (b'{"jsonrpc":"2.0","id":"a","method":7}', INVALID_REQUEST, "a"),
        (b'{"jsonrpc":"2.0","id":true,"method":7}', INVALID_REQUEST, None),
    ],
)
def test_lines_that_are_not_json_rpc_are_rejected_with_the_right_error(
    line: bytes, code: int, request_id: str | int | None
) -> None:
    decoded = decode_line(line)
    assert isinstance(decoded, Rejection)
    assert decoded.response.error.code == code
    assert decoded.response.id == request_id


def test_an_oversized_line_is_an_invalid_request_without_an_id() -> None:
    decoded = decode_line(OversizedLine(10))
    assert isinstance(decoded, Rejection)
    assert (decoded.response.id, decoded.response.error.code) == (None, INVALID_REQUEST)


@given(
    method=st.text(min_size=1, max_size=20),
    request_id=st.one_of(st.integers(min_value=-(2**53), max_value=2**53), st.text(max_size=10)),
    text=st.text(max_size=50),
)
def test_messages_survive_encoding_as_one_line(method: str, request_id: int | str, text: str) -> None:
    request = JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params={"text": text})
    notification = JSONRPCNotification(jsonrpc="2.0", method=method)
    for message in (request, notification):
        line = encode_message(message)
        assert line.endswith(b"\n")
        assert b"\n" not in line[:-1]
        assert decode_line(line[:-1]) == message
