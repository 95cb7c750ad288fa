"""Issue 17: no embeddings module over 400 lines unless its docstring says why (the split of batch/remote)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EMBEDDINGS = Path(__file__).resolve().parents[2] / "memoryd" / "embeddings"
MAX_LINES = 400


@pytest.mark.parametrize("module", sorted(EMBEDDINGS.rglob("*.py")), ids=lambda p: str(p.relative_to(EMBEDDINGS)))
def test_module_is_small_or_says_why(module: Path) -> None:
    text = module.read_text(encoding="utf-8")
    lines = text.count("\n")
    docstring = ast.get_docstring(ast.parse(text)) or ""
    assert lines <= MAX_LINES or f"over {MAX_LINES} lines" in docstring, (
        f"{module.name} has {lines} lines and no reason for it at its top"
    )
