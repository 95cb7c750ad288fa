"""memoryd.heap: glibc's arena cap and trim where they exist, silent no-ops elsewhere."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from memoryd import heap


@pytest.fixture(autouse=True)
def fresh_lookup() -> Iterator[None]:
    heap._glibc.cache_clear()
    yield
    heap._glibc.cache_clear()


def test_on_linux_the_arenas_are_capped_and_free_pages_can_be_released(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert heap.limit_arenas() is sys.platform.startswith("linux")  # glibc; macOS has its own allocator
    junk = [bytearray(1 << 16) for _ in range(256)]  # 16 MB freed below: something to give back
    del junk
    assert isinstance(heap.release_free_memory(), bool)


def test_an_explicit_malloc_arena_max_is_left_to_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert heap.limit_arenas() is False


def test_other_platforms_get_no_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert heap.limit_arenas() is False
    assert heap.release_free_memory() is False
