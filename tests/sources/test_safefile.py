"""The safe reader on a real file system: FIFOs, symlinks, hard links, sparse giants, files that grow."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.sources import safefile
from memoryd.sources.safefile import RefusedFileError, open_checked, read_checked
from tests.conftest import write

LIMIT = 1024 * 1024


def in_thread_with_deadline(fn: object, timeout: float = 20.0) -> object:
    """Run `fn` in a thread; fail (instead of hanging the suite) if it blocks past `timeout`."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(_capture(fn)), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "the read blocked"
    return result[0]


def _capture(fn: object) -> object:
    assert callable(fn)
    try:
        return fn()
    except Exception as exc:  # the caller asserts on it
        return exc


def test_a_regular_file_is_read_with_the_stat_of_its_descriptor(tmp_path: Path) -> None:
    note = write(tmp_path / "a.md", "hello\n")
    data, info = read_checked(note, max_bytes=LIMIT)
    assert data == b"hello\n" and info.st_size == 6 and info.st_ino == note.stat().st_ino


def test_a_fifo_is_refused_at_once_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "x.md"
    os.mkfifo(fifo)
    outcome = in_thread_with_deadline(lambda: read_checked(fifo, max_bytes=LIMIT))
    assert isinstance(outcome, RefusedFileError) and outcome.reason == "not-regular"
    assert "FIFO" in str(outcome)


def test_a_symlink_is_refused_as_the_file_and_as_a_folder_below_the_root(tmp_path: Path) -> None:
    write(tmp_path / "outside" / "secret.md", "secret\n")
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "link.md").symlink_to(tmp_path / "outside" / "secret.md")
    (root / "memory" / "dir").symlink_to(tmp_path / "outside", target_is_directory=True)
    for target in (root / "memory" / "link.md", root / "memory" / "dir" / "secret.md"):
        with pytest.raises(RefusedFileError) as caught:
            read_checked(target, max_bytes=LIMIT, root=root)
        assert caught.value.reason == "symlink"


def test_a_sparse_two_gigabyte_file_is_refused_before_any_byte_is_read(tmp_path: Path) -> None:
    giant = tmp_path / "x.md"
    with open(giant, "wb") as fh:
        fh.truncate(2 * 1024**3)
    with pytest.raises(RefusedFileError) as caught:
        read_checked(giant, max_bytes=10 * 1024 * 1024)
    assert caught.value.reason == "too-large" and "2,147,483,648 bytes" in str(caught.value)


def test_a_file_that_grows_past_the_cap_after_the_check_is_refused_not_read_whole(tmp_path: Path) -> None:
    note = write(tmp_path / "a.md", "x" * 100)
    with open_checked(note, max_bytes=4096) as f:
        with open(note, "ab") as grow:
            grow.write(b"y" * 10_000)
        with pytest.raises(RefusedFileError, match="over the 4,096-byte limit"):
            f.read_all()


def test_a_hard_link_is_refused_unless_allowed(tmp_path: Path) -> None:
    write(tmp_path / "outside.md", "elsewhere\n")
    os.link(tmp_path / "outside.md", tmp_path / "linked.md")
    with pytest.raises(RefusedFileError) as caught:
        read_checked(tmp_path / "linked.md", max_bytes=LIMIT)
    assert caught.value.reason == "hard-link" and "files.allow_hard_links" in str(caught.value)
    assert read_checked(tmp_path / "linked.md", max_bytes=LIMIT, allow_hard_links=True)[0] == b"elsewhere\n"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d.md").mkdir()
    with pytest.raises(RefusedFileError, match="directory"):
        read_checked(tmp_path / "d.md", max_bytes=LIMIT)


def test_missing_and_unreadable_files_raise_their_os_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_checked(tmp_path / "nope.md", max_bytes=LIMIT)
    with pytest.raises(NotADirectoryError):
        read_checked(write(tmp_path / "file", "x") / "below.md", max_bytes=LIMIT, root=tmp_path)


@given(data=st.binary(max_size=60).map(lambda b: b.replace(b"\r", b"\n")), block=st.integers(1, 9))
def test_streamed_lines_and_slices_match_splitting_the_whole_file(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, block: int
) -> None:
    path = tmp_path_factory.mktemp("s") / "f.md"
    path.write_bytes(data)
    whole = data.split(b"\n")
    original = safefile.READ_BLOCK
    safefile.READ_BLOCK = block
    try:
        with open_checked(path, max_bytes=LIMIT) as f:
            assert list(f.lines()) == whole
            for first in range(1, len(whole) + 3):
                for count in (None, 1, 2, 5):
                    picked, total = f.line_slice(first, count)
                    assert total == len(whole)
                    assert picked == whole[first - 1 : None if count is None else first - 1 + count]
            for start in range(0, len(data) + 2, 3):
                assert f.read_range(start, start + 7) == data[start : start + 7]
    finally:
        safefile.READ_BLOCK = original
