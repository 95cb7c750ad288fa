"""`memoryd search`: through the daemon when one answers, else in-process (after a delta sync)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from memoryd.cli.agents import choose
from memoryd.cli.exits import EXIT_ERROR, EXIT_OK
from memoryd.cli.link import live_daemon, tool
from memoryd.cli.output import dump
from memoryd.config import AgentConfig, Config


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    query = args.query_opt or args.query
    if not query or not query.strip():
        sys.stderr.write("memoryd search: a query is required (positional or --query)\n")
        return EXIT_ERROR
    live = live_daemon(args, cfg)
    if live is not None:
        arguments: dict[str, Any] = {"query": query, "corpus": args.corpus}
        if args.max_results is not None:
            arguments["maxResults"] = args.max_results
        if args.min_score is not None:
            arguments["minScore"] = args.min_score
        resp = tool(live, args.agent, "memory_search", arguments)
    else:
        resp = _in_process(args, cfg, choose(args, cfg), query)
    out.write(dump(resp) + "\n" if args.json else format_search(resp))
    if not args.json and (why := abstention_hint(resp)) is not None:
        sys.stderr.write(why)
    fresh = resp.get("freshness")
    degraded = fresh.get("degraded") if isinstance(fresh, dict) else None
    for place in degraded if isinstance(degraded, list) else []:
        sys.stderr.write(
            f"memoryd: cannot read {place.get('path')} ({place.get('reason')}): its newer changes are missed\n"
        )
    return EXIT_OK


def _in_process(args: argparse.Namespace, cfg: Config, agent: AgentConfig, query: str) -> dict[str, Any]:
    from memoryd.cli.backend import with_qmd
    from memoryd.cli.local import run_engine
    from memoryd.index.engine import IndexEngine
    from memoryd.qmd.fallback import FallbackSearcher
    from memoryd.search.citations import cite
    from memoryd.search.request import SearchRequest
    from memoryd.store.lock import WriterLockBusyError

    request = SearchRequest(query, max_results=args.max_results, min_score=args.min_score, corpus=args.corpus)

    async def body(engine: IndexEngine) -> dict[str, Any]:
        if not args.no_sync:
            try:
                engine.take_writer_lock()
            except WriterLockBusyError:
                pass  # somebody else is writing: search the index as it is
            else:
                await engine.sync("search")

        async def answer(qmd: FallbackSearcher | None) -> dict[str, Any]:
            if qmd is None:
                resp = await engine.searcher.search(request)
            else:
                if not args.no_sync:
                    await qmd.sync("cli")  # `qmd update`; a failure hands the search to the builtin index
                resp = await qmd.search(request)
            return cite(resp, agent.settings.citations, None).to_dict()

        return await with_qmd(agent, engine, cfg.state_dir, answer, as_is=args.no_sync)

    return run_engine(args, agent, body, writer=False, embed=True)


def abstention_hint(resp: dict[str, Any]) -> str | None:
    """Why an empty hybrid answer is empty, when abstention made it so (the reply's `evidence` and the
    `minEvidence` it was judged against say: the agent's settings are the daemon's, not this shell's)."""
    evidence, min_evidence = resp.get("evidence"), resp.get("minEvidence")
    if resp.get("results") or not isinstance(evidence, int | float) or not isinstance(min_evidence, int | float):
        return None
    if evidence >= min_evidence:
        return None
    return (
        f"memoryd: nothing in memory is about this (the closest match's evidence {evidence:.2f} is below "
        f"{min_evidence:g}, query.min_evidence as it applies to this index); --min-score 0 lists the ranking as it is\n"
    )


def format_search(resp: dict[str, Any]) -> str:
    """`<score> <path>:<start>-<end>` (`<score> <path>` for an image or audio file, which has no lines) then
    the snippet, per result; `No matches.` when there are none."""
    results = resp.get("results")
    if not isinstance(results, list) or not results:
        return "No matches.\n"
    parts = []
    for r in results:
        snippet = str(r.get("snippet", ""))
        if r.get("citation"):  # the header line cites already, as OpenClaw's CLI prints it
            snippet = snippet.removesuffix(f"\n\nSource: {r['citation']}")
        snippet = snippet.rstrip()
        first, last = r.get("snippetStartLine", r["startLine"]), r.get("snippetEndLine", r["endLine"])
        where = r["path"] if r.get("kind") else f"{r['path']}:{first}-{last}"  # the lines shown; media: no lines
        parts.append(f"{float(r['score']):.3f} {where}\n{snippet}\n\n")
    return "".join(parts)
