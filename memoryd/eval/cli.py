"""`memoryd eval locomo PATH [--json] [--pool] [--mode hybrid|keyword|vector] [--work-dir DIR]`.

The command line's `eval` subcommand: `add_parser` registers it, `run` executes it. Results go to
the given output stream; the progress bar and errors go to stderr. `memoryd --help` builds this
parser, so the harness (numpy, the index) is imported inside `run`, never at module level.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from memoryd.errors import MemorydError

if TYPE_CHECKING:
    from memoryd.eval.harness import EvalReport
    from memoryd.search.pipeline import Mode

EXIT_OK = 0
EXIT_ERROR = 1
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "vector")

Parser = argparse.ArgumentParser
if TYPE_CHECKING:
    SubParsers = argparse._SubParsersAction[Parser]


def add_parser(subparsers: SubParsers, parents: Sequence[Parser] = ()) -> Parser:
    """Add `eval` (with its `locomo` benchmark) to the top-level subcommands; `parents` go on `locomo`."""
    parser = subparsers.add_parser("eval", help="measure retrieval quality on a public benchmark")
    benchmarks = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    p = benchmarks.add_parser(
        "locomo",
        parents=list(parents),
        help="LoCoMo: 10 long conversations, 1,986 questions with turn-level evidence",
    )
    p.add_argument("path", type=Path, help="LoCoMo's data/locomo10.json (CC BY-NC 4.0, never shipped)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--pool", action="store_true", help="one index of all conversations instead of one each")
    p.add_argument("--mode", choices=MODES, default="hybrid", help="search mode (default: hybrid)")
    p.add_argument(
        "--work-dir",
        type=Path,
        help="keep the converted workspaces and indexes here and reuse them (default: a temporary directory)",
    )
    return parser


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the benchmark named by `args`; 0 on success, 1 with a message on stderr otherwise."""
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    import tempfile

    import anyio
    import orjson

    from memoryd.eval.harness import evaluate
    from memoryd.eval.locomo import load_locomo
    from memoryd.progress import ProgressBar

    bar = ProgressBar("indexing LoCoMo", stream=stderr)
    try:
        dataset = load_locomo(args.path)

        async def main(work_dir: Path) -> EvalReport:
            return await evaluate(dataset, mode=args.mode, pool=args.pool, work_dir=work_dir, progress=bar)

        if args.work_dir is not None:
            report = anyio.run(main, Path(args.work_dir))
        else:
            with tempfile.TemporaryDirectory(prefix="memoryd-locomo-") as tmp:
                report = anyio.run(main, Path(tmp))
    except MemorydError as exc:
        stderr.write(f"memoryd eval locomo: {exc}\n")
        return EXIT_ERROR
    finally:
        bar.done()
    if args.json:
        stdout.write(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        stdout.write(format_table(report))
    return EXIT_OK


def format_table(report: EvalReport) -> str:
    """The results as a small fixed-width table with the run's size and timing below it."""
    from memoryd.eval.locomo import CATEGORY_NAMES

    s = report.settings
    layout = f"{s['indexes']} pooled index" if s["pool"] else f"one index per conversation ({s['indexes']})"
    lines = [
        f"LoCoMo retrieval, {s['mode']} mode, {layout}: {s['chunks']} chunks "
        f"({s['chunk_tokens']} tokens, {s['chunk_overlap']} overlap), top {s['k']}",
        f"{'category':<16}{'n':>6}{'R@5':>8}{'R@10':>8}{'nDCG@10':>9}{'MRR':>8}",
    ]
    rows = [(f"{c} {CATEGORY_NAMES.get(c, '?')}", summary) for c, summary in report.by_category.items()]
    rows.append(("overall", report.overall))
    for label, m in rows:
        metrics = f"{m.recall_5:>8.3f}{m.recall_10:>8.3f}{m.ndcg_10:>9.3f}{m.mrr:>8.3f}"
        lines.append(f"{label:<16}{m.n:>6}{metrics}")
    lines.append(
        f"latency p50 {report.latency_p50_ms:.2f} ms, p99 {report.latency_p99_ms:.2f} ms; "
        f"indexing {s['index_seconds']} s, questions {s['query_seconds']} s"
    )
    lines.append(
        f"{s['scored']} of {s['questions']} questions scored ({s['skipped_no_evidence']} without evidence); "
        f"{s['evidence_repairs']} evidence entries repaired, {s['unresolved_evidence']} ids name no turn"
    )
    return "\n".join(lines) + "\n"
