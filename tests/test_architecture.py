"""The package's shape, read from its source: data flows one way, and modules stay small or say why.

Every `memoryd` module belongs to the layer of its longest matching prefix in LAYERS; it may import
modules of its own layer and of layers below it, never above (imports inside functions and under
TYPE_CHECKING count too: a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "memoryd"
MAX_LINES = 400

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Usable by all: settings, locations, errors, logging, and the pure helpers they need.
    (
        "base",
        (
            "memoryd",  # the package itself: __version__
            "memoryd.errors",
            "memoryd.paths",
            "memoryd.runtime",  # where the daemon listens (socket discovery)
            "memoryd.config",
            "memoryd.hooksettings",  # the [hooks] table, read by the hook without the settings tree
            "memoryd.hookblock",  # the hooks' cited block: the hook renders it, eval measures it
            "memoryd.hookruns",  # what the hooks last injected (counts): status and the viewer read it
            "memoryd.compat",  # a settings profile
            "memoryd.qmd.settings",  # the [qmd] table of the settings tree
            "memoryd.media",  # which files are images and audio, which models embed them (settings check it)
            "memoryd.credentials",
            "memoryd.isotime",
            "memoryd.faults",  # crash points for the tests
            "memoryd.heap",
            "memoryd.logging",
            "memoryd.sources.redact",  # logging masks secrets with the same rules as transcripts
            "memoryd.sources.secrets",
        ),
    ),
    # Chunking is pure (text -> chunks with line numbers): the transcript reader chunks what it reads, so
    # that its line map survives, which puts chunking below the rest of sources in import terms.
    ("chunking", ("memoryd.sources.chunking",)),
    ("sources", ("memoryd.sources",)),
    ("embeddings", ("memoryd.embeddings",)),
    ("store", ("memoryd.store",)),
    ("search", ("memoryd.search",)),
    ("qmd", ("memoryd.qmd",)),  # a search backend in front of the builtin index, which answers when it fails
    ("index", ("memoryd.index",)),
    ("server", ("memoryd.server", "memoryd.service", "memoryd.hosts")),
    ("composition", ("memoryd.daemon", "memoryd.eval", "memoryd.progress", "memoryd.reloading", "memoryd.setup")),
    ("cli", ("memoryd.cli", "memoryd.__main__")),
)
RANK = {name: rank for rank, (name, _prefixes) in enumerate(LAYERS)}


def layer_of(module: str) -> str:
    best, best_len = None, -1
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = name, len(prefix)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _exists(dotted: str) -> bool:
    base = PACKAGE.parent.joinpath(*dotted.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def imported(text: str, package: str) -> Iterator[tuple[int, str]]:
    """(line, module) for every memoryd module the source `text` (a module of `package`) imports."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "memoryd":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*parent, node.module] if node.module else parent)
            else:
                source = node.module or ""
            if source.split(".")[0] != "memoryd":
                continue
            for alias in node.names:
                candidate = f"{source}.{alias.name}"
                yield node.lineno, candidate if _exists(candidate) else source


def test_every_module_has_a_layer() -> None:
    for path in modules():
        layer_of(module_name(path))


def test_the_layer_table_is_the_documented_flow() -> None:
    """README: (chunking, sources) -> embeddings -> store -> search -> index -> server -> cli."""
    order = [name for name, _ in LAYERS]
    flow = ["chunking", "sources", "embeddings", "store", "search", "index", "server", "cli"]
    assert [name for name in order if name in flow] == flow


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_flow_one_way(path: Path) -> None:
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found = [
        f"line {line}: {target} ({layer_of(target)})"
        for line, target in imported(path.read_text(encoding="utf-8"), package)
        if RANK[layer_of(target)] > RANK[layer_of(me)]
    ]
    assert found == [], f"{me} ({layer_of(me)}) imports from higher layers: {found}"


def test_the_check_finds_upward_imports_where_they_hide() -> None:
    """Inside a function, under TYPE_CHECKING, `from package import module`, relative: all are seen."""
    text = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from memoryd.cli import link\n"
        "def f() -> None:\n    import memoryd.daemon\n"
        "from ..index import engine\n"
        "from memoryd.errors import MemorydError\n"
    )
    found = {target for _line, target in imported(text, "memoryd.store")}
    assert {"memoryd.cli.link", "memoryd.daemon", "memoryd.index.engine", "memoryd.errors"} <= found
    ranks = {target: RANK[layer_of(target)] for target in found}
    store = RANK[layer_of("memoryd.store.index")]
    higher = sorted(t for t, r in ranks.items() if r > store)
    assert higher == ["memoryd.cli.link", "memoryd.daemon", "memoryd.index.engine"]


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_is_small_or_says_why(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    docstring = ast.get_docstring(ast.parse(text)) or ""
    assert lines <= MAX_LINES or f"over {MAX_LINES} lines" in docstring, (
        f"{path.relative_to(PACKAGE)} has {lines} lines and no reason for it at its top"
    )
