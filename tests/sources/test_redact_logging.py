"""Logs never carry a secret: the structlog processor masks event values, nested values, stdlib
records and exception text, in both renderers."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
import structlog

from memoryd import logging as logs

SECRET = "ghp_" + "Q7w" * 12
PASSWORD = "hunter2-Xy9"


@pytest.fixture
def captured(request: pytest.FixtureRequest) -> Iterator[io.StringIO]:
    out = io.StringIO()
    logs.configure("debug", request.param, out)
    yield out
    structlog.reset_defaults()
    logging.getLogger().handlers.clear()


@pytest.mark.parametrize("captured", ["console", "json"], indirect=True)
def test_no_secret_reaches_a_log_line(captured: io.StringIO) -> None:
    log = structlog.get_logger("t")
    log.info("provider answered", body=f"token={SECRET}", nested={"headers": [f"Authorization: Bearer {SECRET}"]})
    log.warning(f"config has password: {PASSWORD} in it")
    try:
        raise ValueError(f"bad key {SECRET}")
    except ValueError:
        log.exception("failed")
    logging.getLogger("lib").error("stdlib says postgres://app:%s@db/x", PASSWORD)
    try:
        raise RuntimeError(f"stdlib trace {SECRET}")
    except RuntimeError:
        logging.getLogger("lib").exception("boom")
    text = captured.getvalue()
    assert "ghp_…" in text
    assert "ValueError" in text and "RuntimeError" in text
    assert SECRET[5:] not in text
    assert PASSWORD not in text
    assert "provider answered" in text and "stdlib says postgres://app:***@db/x" in text


@pytest.mark.parametrize("captured", ["json"], indirect=True)
def test_values_keep_their_types(captured: io.StringIO) -> None:
    structlog.get_logger("t").info("sync done", files=3, seconds=0.5, ok=True, missing=None)
    line = captured.getvalue()
    assert '"files":3' in line and '"seconds":0.5' in line and '"ok":true' in line and '"missing":null' in line
