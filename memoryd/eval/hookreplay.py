"""What `memoryd eval --hooks` measures, and how it reads what the real hook command printed.

Each question is replayed as a prompt through `memoryd hook claude-code UserPromptSubmit` against a real
daemon (`memoryd.eval.hookrun`). Its stdout is read as Claude Code reads it (exit 0 and JSON: the
`hookSpecificOutput.additionalContext` of the right event; exit 0 and plain text: the text itself;
exit 2 blocks the prompt; any other exit shows an error and adds nothing), and the block's citations
(`- path#L3-L7: …`) are the lines it injects. Answerable questions score the share of their evidence
lines those lines cover (the same measure as R@5 of a ranking); questions about something else score
whether nothing was injected at all. Kept free of the harness so its report can carry these types.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import orjson

from memoryd.eval.metrics import EvidenceLine, Span, percentile

HOST_EVENT = "UserPromptSubmit"
_CITED = re.compile(r"^- (?P<path>.+?)(?:#L(?P<start>\d+)(?:-L(?P<end>\d+))?)?: ", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class HostReading:
    """One hook call as the host sees it: the context it adds to the prompt, and whether the call was
    anything but a clean answer (a blocked prompt, an error exit, output that is not the documented JSON)."""

    context: str
    fault: str = ""


def read_output(returncode: int, stdout: str) -> HostReading:
    """The context Claude Code adds for a UserPromptSubmit hook that exited `returncode` printing `stdout`."""
    if returncode == 2:
        return HostReading("", "blocked the prompt (exit 2)")
    if returncode != 0:
        return HostReading("", f"exit {returncode}")
    text = stdout.strip()
    if not text:
        return HostReading("")
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return HostReading(text, "plain text, not JSON")  # Claude Code adds plain stdout as context
    specific = data.get("hookSpecificOutput") if isinstance(data, dict) else None
    if not isinstance(specific, dict) or specific.get("hookEventName") != HOST_EVENT:
        return HostReading("", "JSON without hookSpecificOutput for UserPromptSubmit")
    context = specific.get("additionalContext")
    return HostReading(context, "") if isinstance(context, str) else HostReading("", "additionalContext not text")


def cited_spans(block: str) -> list[Span]:
    """The lines each snippet of a `<memoryd-recall>` block names (`path#L3-L7`, `path#L3`); a citation
    without lines (an image, say) names no line and is left out."""
    spans = []
    for m in _CITED.finditer(block):
        if m["start"] is None:
            continue
        start = int(m["start"])
        spans.append(Span(m["path"], start, int(m["end"]) if m["end"] else start))
    return spans


def evidence_share(spans: Sequence[Span], lines: Collection[EvidenceLine]) -> float:
    """Share of the evidence lines the cited spans cover (R@k with k = the block's snippets)."""
    if not lines:
        return 0.0
    return sum(any(s.covers(line) for s in spans) for line in lines) / len(lines)


@dataclass(frozen=True, slots=True)
class Quiet:
    """Questions an index has nothing about, replayed: how many got nothing injected, and how many the
    same daemon's memory_search answered "No matches." (the served rate on exactly these questions)."""

    asked: int
    quiet: int
    no_matches: int

    def to_dict(self) -> dict[str, object]:
        n = max(1, self.asked)
        return {
            "asked": self.asked,
            "nothing_injected": self.quiet,
            "nothing_injected_rate": round(self.quiet / n, 4),
            "no_matches": self.no_matches,
            "no_matches_rate": round(self.no_matches / n, 4),
        }


@dataclass(frozen=True, slots=True)
class HookReplay:
    """The replay of one set through the real hook command, next to what the set's report serves."""

    n: int
    evidence: float
    """Mean share of an answerable question's evidence lines cited in the block."""
    served: float
    """R@5 of the same daemon's memory_search for the same questions (the served figure, through the daemon)."""
    cited_any: int
    """Answerable questions with at least one evidence line cited."""
    injected: int
    """Answerable questions that got a block at all."""
    max_chars: int
    largest: int
    over_budget: int
    same_set: Quiet | None
    other_sets: Quiet | None
    faults: int
    """Hook calls the host would not read as a clean answer, or that logged a failure (hooks.log)."""
    first_fault: str = ""
    """What the first fault was (a hooks.log line, or how the host would read the output)."""
    latency_ms: Sequence[float] = ()
    """Each hook process, start to exit (a loaded machine's figure; `make bench` measures latency)."""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "n": self.n,
            "evidence_injected": round(self.evidence, 4),
            "served_recall@5": round(self.served, 4),
            "cited_any": self.cited_any,
            "injected": self.injected,
            "max_chars": self.max_chars,
            "largest_block": self.largest,
            "over_budget": self.over_budget,
            "faults": self.faults,
            **({"first_fault": self.first_fault} if self.first_fault else {}),
            "hook_ms": {
                "p50": round(percentile(self.latency_ms, 50), 1),
                "p95": round(percentile(self.latency_ms, 95), 1),
            },
        }
        if self.same_set is not None:
            out["same_set"] = self.same_set.to_dict()
        if self.other_sets is not None:
            out["other_sets"] = self.other_sets.to_dict()
        return out
