"""`python -m bench --only X` accepts every section it can run and the README names: a section dropped
from SECTIONS in a merge left its branch dead and `--only history` refused."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _sections() -> tuple[str, ...]:
    tree = ast.parse((ROOT / "bench" / "__main__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "SECTIONS" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, tuple)
            return tuple(str(v) for v in value)
    raise AssertionError("bench/__main__.py has no SECTIONS")


def _dispatched() -> set[str]:
    source = (ROOT / "bench" / "__main__.py").read_text(encoding="utf-8")
    return set(re.findall(r'section == "([a-z]+)"', source))


def test_every_dispatched_section_can_be_chosen() -> None:
    assert _dispatched() == set(_sections())


def test_the_readme_lists_the_sections_bench_accepts() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"`--only ([a-z|]+)`", readme)
    assert listed is not None
    assert set(listed.group(1).split("|")) == set(_sections())
