"""`python -m bench [--quick] [--only SECTION ...]`: memoryd's reproducible benchmarks."""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path

from bench import (
    cli_bench,
    daemon_bench,
    embed_bench,
    fresh_bench,
    history_bench,
    hooks_bench,
    http_bench,
    index_bench,
    redact_bench,
    retain_bench,
    search_bench,
    transcript_bench,
    write_bench,
)
from bench.corpus import CorpusSpec
from memoryd import logging as logs

SECTIONS = (
    "index",
    "search",
    "embed",
    "daemon",
    "fresh",
    "write",
    "redact",
    "cli",
    "transcripts",
    "retain",
    "hooks",
    "http",
    "history",
)


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench")
    parser.add_argument("--out", type=Path, default=Path("bench/out"), help="scratch directory (corpus, databases)")
    parser.add_argument("--quick", action="store_true", help="a 10x smaller corpus, for a smoke run")
    parser.add_argument("--only", nargs="*", choices=SECTIONS, help="run only these sections")
    args = parser.parse_args()
    logs.configure("warning")
    spec = CorpusSpec(notes=1_000, transcripts=100) if args.quick else CorpusSpec()
    sys.stdout.write(
        f"memoryd benchmarks on {platform.processor() or platform.machine()}, Python {platform.python_version()}\n"
    )
    for section in args.only or SECTIONS:
        if section == "index":
            index_bench.main(args.out, spec)
        elif section == "search":
            search_bench.main(args.out, args.quick)
        elif section == "embed":
            embed_bench.main(args.out, args.quick)
        elif section == "daemon":
            daemon_bench.main(args.out, args.quick)
        elif section == "fresh":
            fresh_bench.main(args.out, args.quick)
        elif section == "write":
            write_bench.main(args.out, args.quick)
        elif section == "redact":
            redact_bench.main(args.out, args.quick)
        elif section == "cli":
            cli_bench.main(args.out, args.quick)
        elif section == "transcripts":
            transcript_bench.main(args.out, args.quick)
        elif section == "retain":
            retain_bench.main(args.out, args.quick)
        elif section == "hooks":
            hooks_bench.main(args.out, args.quick)
        elif section == "http":
            http_bench.main(args.out, args.quick)
        elif section == "history":
            history_bench.main(args.out, args.quick)
    return 0


raise SystemExit(main())
