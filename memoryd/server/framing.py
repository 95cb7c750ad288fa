"""Newline-delimited JSON-RPC framing: one UTF-8 JSON message per line, with a size cap.

Shared by the daemon's socket, the standalone stdio server and the client, so every memoryd
endpoint frames, limits and rejects bytes the same way (PROTOCOL.md, "Framing").
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import orjson
from anyio.abc import ByteReceiveStream
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024
"""Largest request line accepted by default (4 MiB, `daemon.max_line_bytes`' default): requests are
small, a bigger line is a mistake. The standalone server and the daemon use the same configured value."""

CLIENT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""Largest response line a memoryd client accepts (64 MiB): memory_get may return whole files."""


@dataclass(frozen=True, slots=True)
class Rejection:
    """A line that is not a JSON-RPC message, with the error response it gets."""

    response: JSONRPCError


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """A line longer than the cap; its bytes were discarded up to and including its newline."""

    limit: int


class LineReader:
    """Reads newline-terminated lines from a byte stream without ever buffering more than the cap.

    A final line without a newline still counts at end of stream. Transport errors (a reset
    connection) read as end of stream: a peer that vanishes is not an error on this side.
    """

    def __init__(self, stream: ByteReceiveStream, max_line_bytes: int) -> None:
        self._stream = stream
        self._limit = max_line_bytes
        self._buffer = bytearray()
        self._eof = False

    async def next_line(self) -> bytes | OversizedLine | None:
        """The next line without its newline, an OversizedLine, or None at end of stream."""
        scanned = 0
        while True:
            index = self._buffer.find(b"\n", scanned)
            if index >= 0:
                if index > self._limit:
                    del self._buffer[: index + 1]
                    return OversizedLine(self._limit)
                line = bytes(self._buffer[:index])
                del self._buffer[: index + 1]
                return line
            if len(self._buffer) > self._limit:
                return await self._discard_rest_of_line()
            scanned = len(self._buffer)
            if not await self._fill():
                if not self._buffer:
                    return None
                line = bytes(self._buffer)
                self._buffer.clear()
                return line

    def take_buffered(self) -> bytes:
        """Hand over bytes read past the last line (for a caller switching to raw copying)."""
        data = bytes(self._buffer)
        self._buffer.clear()
        return data

    async def _discard_rest_of_line(self) -> OversizedLine:
        self._buffer.clear()
        while await self._fill():
            index = self._buffer.find(b"\n")
            if index >= 0:
                del self._buffer[: index + 1]
                break
            self._buffer.clear()
        return OversizedLine(self._limit)

    async def _fill(self) -> bool:
        if self._eof:
            return False
        try:
            chunk = await self._stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            self._eof = True
            return False
        self._buffer.extend(chunk)
        return True


def decode_line(line: bytes | OversizedLine) -> JSONRPCMessage | Rejection:
    """Parse one line into a JSON-RPC message, or reject it with the error response it deserves.

    Invalid UTF-8 or JSON is a parse error (-32700); well-formed JSON that is not a JSON-RPC 2.0
    message is an invalid request (-32600), answered with the request's id when it has a usable one.
    """
    if isinstance(line, OversizedLine):
        # The id is unknowable: the line was not kept.
        return _reject(None, INVALID_REQUEST, f"invalid request: line longer than {line.limit} bytes")
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return _reject(None, PARSE_ERROR, f"parse error: {exc}")
    if isinstance(document, dict) and "method" in document and "id" in document and _usable_id(document) is None:
        # JSON-RPC 2.0: an id is a string or an integer (a notification has none at all). An object, array,
        # boolean, null or fractional id is no request the server can answer by its id: -32600, id null.
        shown = _JSON_KINDS.get(type(document["id"]), "null")
        return _reject(None, INVALID_REQUEST, f"invalid request: id must be a string or an integer (got {shown})")
    try:
        return jsonrpc_message_adapter.validate_python(document, by_name=False)
    except ValidationError:
        return _reject(_usable_id(document), INVALID_REQUEST, "invalid request: not a JSON-RPC 2.0 message")


def error_response(request_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def encode_message(message: JSONRPCMessage) -> bytes:
    """One message as one line: compact JSON, camelCase wire names, a trailing newline."""
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


async def next_message(lines: LineReader) -> JSONRPCMessage | Rejection | None:
    """The next message (or rejected line), or None at end of stream.

    Blank lines are skipped, so a person typing into socat may press enter freely.
    """
    while (line := await lines.next_line()) is not None:
        if isinstance(line, bytes) and not line.strip():
            continue
        return decode_line(line)
    return None


def _reject(request_id: str | int | None, code: int, message: str) -> Rejection:
    return Rejection(error_response(request_id, code, message))


_JSON_KINDS = {dict: "an object", list: "an array", bool: "a boolean", float: "a fractional number"}


def _usable_id(document: object) -> str | int | None:
    if isinstance(document, dict):
        request_id = document.get("id")
        if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
            return request_id
    return None
