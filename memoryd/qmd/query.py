"""One QMD search fanned out: one `qmd <mode> --json` process per group of collections, all at once.

Newer QMD filters by several `-c` at once, so a group is a source (memory, sessions); older QMD takes
one collection per process. The first failure of any process fails the search (the fallback decides).
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from memoryd.qmd.collections import ManagedCollection
from memoryd.qmd.errors import QmdError, QmdOutputError
from memoryd.qmd.parse import QmdHit, parse_search_output
from memoryd.qmd.runner import QmdRunner
from memoryd.qmd.settings import SearchMode


def group_targets(targets: Sequence[ManagedCollection], *, multi_collection: bool) -> list[list[ManagedCollection]]:
    """The collections searched together: per source when QMD takes several `-c`, else one by one."""
    if len(targets) <= 1 or not multi_collection:
        return [[t] for t in targets]
    by_source: dict[str, list[ManagedCollection]] = {}
    for t in targets:
        by_source.setdefault(t.source, []).append(t)
    return list(by_source.values())


async def query_groups(
    runner: QmdRunner,
    mode: SearchMode,
    q: str,
    limit: int,
    groups: Sequence[Sequence[ManagedCollection]],
    *,
    timeout_s: float,
) -> list[QmdHit]:
    """Every group's hits, in group order; raise the first QmdError any process gave."""
    found: list[list[QmdHit]] = [[] for _ in groups]
    errors: list[QmdError] = []

    async def one(i: int, group: Sequence[ManagedCollection]) -> None:
        filters = [arg for c in group for arg in ("-c", c.name)]
        try:
            args = [mode, "--json", "-n", str(limit), *filters, "--", q]  # "--": a query may start with "-"
            out = await runner.run(args, timeout_s=timeout_s)
            if out.truncated:
                raise QmdOutputError(f"qmd {mode} printed more than {runner.max_output_bytes} bytes")
            found[i] = parse_search_output(out.stdout, out.stderr, collection=group[0].name, command=mode)
        except QmdError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        for i, group in enumerate(groups):
            tg.start_soon(one, i, group)
    if errors:
        raise errors[0]
    return [hit for hits in found for hit in hits]
