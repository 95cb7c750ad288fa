"""The CLI's progress display: a bar redrawn in place on a terminal, plain lines elsewhere."""

from __future__ import annotations

import io

from memoryd.cli.progress_line import ProgressLine, describe

EMBEDDING = {
    "phase": "embedding",
    "files": {"total": 10, "seen": 10, "indexed": 10},
    "chunks": {"indexed": 400, "embedded": 100, "withoutVectors": 300},
    "chunksPerSecond": 42.5,
    "etaSeconds": 7.1,
}
INDEXING = {"phase": "indexing", "files": {"total": 10, "seen": 5}, "chunks": {"indexed": 200}, "etaSeconds": None}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_block_reads_as_one_line_with_its_bar_rate_and_eta() -> None:
    assert describe(EMBEDDING, bar=True) == (
        "embedding [#######---------------------] 100/400 chunks embedded, 42.5 chunks/s, ETA 7s"
    )
    assert describe(INDEXING, bar=False) == "indexing  5/10 files, 200 chunks"


def test_a_terminal_gets_the_line_redrawn_in_place_and_a_pipe_plain_lines_per_phase() -> None:
    tty = Terminal()
    line = ProgressLine("main", tty)
    line.show(INDEXING)
    line.show(EMBEDDING)
    line.done()
    assert tty.getvalue().count("\r") == 2 and tty.getvalue().endswith("\n") and "[" in tty.getvalue()
    pipe = io.StringIO()
    plain = ProgressLine("main", pipe)
    for block in (INDEXING, INDEXING, EMBEDDING):
        plain.show(block)
    expected = ["main: " + describe(block, bar=False) for block in (INDEXING, EMBEDDING)]
    assert pipe.getvalue().splitlines() == expected
