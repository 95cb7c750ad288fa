"""structlog to stderr (console or JSON), with the stdlib bridged in. Never stdout: stdout carries MCP."""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import orjson
import structlog

LogFormat = Literal["console", "json"]


def _orjson_dumps(obj: object, default: object = None) -> str:
    return orjson.dumps(obj, default=str).decode()


def _quiet_quantiser(record: logging.LogRecord) -> bool:
    """onnxruntime's quantiser logs dozens of lines through the root logger when the local model is
    prepared on first use; memoryd logs that step itself, so only its errors pass."""
    return record.levelno >= logging.ERROR or "onnxruntime" not in record.pathname


def configure(level: str = "info", fmt: LogFormat = "console", stream: TextIO | None = None) -> None:
    """Configure structlog and stdlib logging once, at process start, before anything logs."""
    out = stream if stream is not None else sys.stderr
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.typing.Processor
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(serializer=_orjson_dumps)
        shared.append(structlog.processors.format_exc_info)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                renderer,
            ],
            foreign_pre_chain=shared,
        )
    )
    handler.addFilter(_quiet_quantiser)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    # Chatty libraries: one line per file batch or HTTP request is noise at info level.
    for name in ("watchfiles", "httpx", "httpcore", "mcp"):
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
