"""Tiny helpers for timing and printing benchmark tables."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print a markdown table to stdout."""
    out = sys.stdout
    out.write(f"\n### {title}\n\n")
    out.write("| " + " | ".join(header) + " |\n")
    out.write("|" + "|".join("---" for _ in header) + "|\n")
    for row in rows:
        out.write("| " + " | ".join(_fmt(v) for v in row) + " |\n")
    out.flush()


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:,.2f}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)
