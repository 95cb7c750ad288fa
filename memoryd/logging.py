"""structlog to stderr (console or JSON), with the stdlib bridged in. Never stdout: stdout carries MCP.

Every event passes `redact_secrets` last before rendering, so no log line carries a secret: not a
value logged by mistake, not an exception message quoting a config value or a provider's answer.
"""

from __future__ import annotations

import logging
import sys
import traceback
from typing import Literal, TextIO

import orjson
import structlog

from memoryd.sources.redact import redact

LogFormat = Literal["console", "json"]


def _orjson_dumps(obj: object, default: object = None) -> str:
    return orjson.dumps(obj, default=str).decode()


def _quiet_quantiser(record: logging.LogRecord) -> bool:
    """onnxruntime's quantiser logs dozens of lines through the root logger when the local model is
    prepared on first use; memoryd logs that step itself, so only its errors pass."""
    return record.levelno >= logging.ERROR or "onnxruntime" not in record.pathname


def _redact_value(value: object) -> object:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_redact_value(v) for v in value]
    if isinstance(value, int | float | bool) or value is None:
        return value
    return redact(str(value))


def redact_secrets(_logger: object, _method: str, event: structlog.typing.EventDict) -> structlog.typing.EventDict:
    """A structlog processor: mask secrets in every value of the event (nested ones too), and in an
    exception's text, which it renders here so that the renderer never sees the raw traceback."""
    out: structlog.typing.EventDict = {}
    for key, value in event.items():
        if key in _META_KEYS:
            out[key] = value
        elif key == "exc_info":
            text = _format_exception(value)
            if text:
                out["exception"] = redact(text)
        else:
            out[key] = _redact_value(value)
    return out


_META_KEYS = frozenset({"_record", "_from_structlog"})
"""What structlog's stdlib bridge keeps in the event for itself (the LogRecord), not log content."""


def _format_exception(exc_info: object) -> str:
    """The traceback text of `exc_info` in any form structlog accepts (True, an exception, a tuple)."""
    if exc_info is True:
        exc_info = sys.exc_info()
    if isinstance(exc_info, BaseException):
        return "".join(traceback.format_exception(exc_info))
    if isinstance(exc_info, tuple) and len(exc_info) == 3 and isinstance(exc_info[1], BaseException):
        return "".join(traceback.format_exception(exc_info[1]))
    return ""


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
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    shared.append(redact_secrets)
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
