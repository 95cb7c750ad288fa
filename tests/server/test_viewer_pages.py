"""The viewer's agent page, rendered from a status reply: indexing progress while it runs, idle after."""

from __future__ import annotations

from memoryd.server.viewer import pages

RUNNING = {
    "files": 12,
    "progress": {
        "phase": "embedding",
        "job": "first",
        "files": {"total": 500, "seen": 500, "indexed": 500},
        "chunks": {"indexed": 9000, "embedded": 4100, "withoutVectors": 4900},
        "chunksPerSecond": 41.26,
        "etaSeconds": 118.7,
    },
}


def test_the_agent_page_shows_indexing_progress_while_it_runs() -> None:
    page = pages.agent_home("main", RUNNING, [], [], "csrf", writable=False)
    assert "<th>indexing</th><td>embedding (first)</td>" in page
    assert "<th>files indexed / seen / total</th><td>500 / 500 / 500</td>" in page
    assert "<th>chunks embedded / without vectors</th><td>4100 / 4900</td>" in page
    assert "<td>41.3 chunks/s</td>" in page and "<td>~119 s</td>" in page


def test_an_idle_index_says_so_and_unknown_figures_are_not_invented() -> None:
    idle = pages.agent_home("main", {"progress": {"phase": "idle"}}, [], [], "csrf", writable=False)
    assert "<th>indexing</th><td>idle</td>" in idle and "chunks/s" not in idle
    early = {"progress": {**RUNNING["progress"], "chunksPerSecond": None, "etaSeconds": None}}  # type: ignore[dict-item]
    page = pages.agent_home("main", early, [], [], "csrf", writable=False)
    assert "<th>rate</th><td>-</td>" in page and "<th>time left</th><td>unknown</td>" in page
