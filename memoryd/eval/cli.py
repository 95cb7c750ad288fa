"""`memoryd eval SET PATH [SET PATH ...] [--mode M[,M...]] [--ablate] [--pool] [--hooks] [--json] [--work-dir DIR]`.

The command line's `eval` subcommand: `add_parser` registers it, `run` executes it. SET is one of
`locomo` (LoCoMo's locomo10.json), `realtalk` (REALTALK's data/ directory), `faq` (a directory of
FAQ markdown pages), `aider` (a directory of aider chat histories), `specstory` (a directory of
projects' SpecStory exports) or `smallnotes` (built in). A set may be named several times with
different paths; each is then reported as `SET:<the path's last part>`.
Results go to the given output stream as one table (or JSON); the progress bar and errors go to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, cast

import anyio
import orjson

from memoryd.errors import ConfigError, MemorydError
from memoryd.eval import ablation, abstain, aider, faq, hookrun, locomo, realtalk, smallnotes, specstory
from memoryd.eval.dataset import EvalSet
from memoryd.eval.harness import DEFAULT, HOOKS, MODES, EvalReport, Mode, Variant, evaluate_set, local_provider
from memoryd.eval.hookreplay import HookReplay
from memoryd.progress import ProgressBar
from memoryd.search.smallindex import SMALL_INDEX_CHUNKS

EXIT_OK = 0
EXIT_ERROR = 1
Loader = Callable[[Path, bool], EvalSet]
LOADERS: dict[str, Loader] = {
    "locomo": lambda path, pool: locomo.eval_set(locomo.load_locomo(path), pool=pool),
    "realtalk": lambda path, _pool: realtalk.load_realtalk(path),
    "faq": lambda path, _pool: faq.load_faq(path),
    "aider": lambda path, _pool: aider.load_aider(path),
    "specstory": lambda path, _pool: specstory.load_specstory(path),
    "smallnotes": lambda path, _pool: smallnotes.load_smallnotes(path),
}
SET_HELP = {
    "locomo": "LoCoMo's data/locomo10.json (CC BY-NC 4.0, never shipped)",
    "realtalk": "REALTALK's data/ directory (Chat_*.json)",
    "faq": "a directory of FAQ markdown pages (ripgrep's FAQ.md, ruff's docs/faq.md, ...)",
    "aider": "a directory of aider chat histories (repositories' .aider.chat.history.md, one <project>.md each)",
    "specstory": "a directory of projects, each a sub-directory of its SpecStory exports (.specstory/history/*.md)",
    "smallnotes": "built-in one-note workspaces with paraphrased questions (PATH is ignored: give -)",
}

Parser = argparse.ArgumentParser
if TYPE_CHECKING:
    SubParsers = argparse._SubParsersAction[Parser]


def add_parser(subparsers: SubParsers, parents: Sequence[Parser] = ()) -> Parser:
    """Add `eval` to the top-level subcommands; `parents` add their options to it."""
    sets = "; ".join(f"{name}: {text}" for name, text in SET_HELP.items())
    p = subparsers.add_parser(
        "eval",
        parents=list(parents),
        help="measure retrieval quality on public dev sets",
        description=f"Index each set with memoryd's real pipeline and score every question. Sets: {sets}.",
    )
    p.add_argument("items", nargs="+", metavar="SET PATH", help=f"pairs of a set ({', '.join(LOADERS)}) and its path")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--pool", action="store_true", help="locomo: one index of all conversations instead of one each")
    p.add_argument(
        "--mode",
        default="hybrid",
        help=f"search mode, or several separated by commas: {', '.join(MODES)} (default: hybrid)",
    )
    p.add_argument("--ablate", action="store_true", help="also run each ranking feature off, one at a time")
    p.add_argument(
        "--hooks",
        action="store_true",
        help="also replay every question as a prompt through the real `memoryd hook claude-code UserPromptSubmit` "
        "against a daemon on the same indexes, and score what it injects (hybrid, else keyword)",
    )
    p.add_argument(
        "--sample",
        type=int,
        default=0,
        metavar="N",
        help="ask at most N questions of each index, the same ones every run (default: all)",
    )
    p.add_argument(
        "--work-dir",
        type=Path,
        help="keep the converted workspaces and indexes here and reuse them (default: a temporary directory)",
    )
    return p


def parse_items(items: Sequence[str]) -> list[tuple[str, Path]]:
    """`SET PATH` pairs; a set may come several times, each time with another path."""
    if len(items) % 2:
        raise ConfigError("eval", f"expected pairs of SET PATH, got {' '.join(items)!r}")
    pairs = [(items[i], Path(items[i + 1])) for i in range(0, len(items), 2)]
    for name, _path in pairs:
        if name not in LOADERS:
            raise ConfigError("eval", f"unknown set {name!r}; choose from {', '.join(LOADERS)}")
    seen: set[tuple[str, str]] = set()
    for name, path in pairs:
        key = (name, os.path.abspath(path))
        if key in seen:
            raise ConfigError("eval", f"{name} {path} is named twice")
        seen.add(key)
    return pairs


def set_labels(pairs: Sequence[tuple[str, Path]]) -> list[str]:
    """What each pair is reported as: its set's name, or `SET:<the path's last part>` (`SET:<path>` when
    those are alike too) when the set is named more than once."""
    times = Counter(name for name, _ in pairs)
    short = [f"{name}:{path.name or path}" if times[name] > 1 else name for name, path in pairs]
    alike = Counter(short)
    return [f"{name}:{path}" if alike[label] > 1 else label for (name, path), label in zip(pairs, short, strict=True)]


def load_sets(pairs: Sequence[tuple[str, Path]], *, pool: bool, sample: int) -> list[EvalSet]:
    """Each pair's set, named by its label (`set_labels`) so two paths of one set stay apart."""
    sets: list[EvalSet] = []
    for (name, path), label in zip(pairs, set_labels(pairs), strict=True):
        loaded = LOADERS[name](path, pool).sample(sample)
        if label != loaded.name:
            loaded = replace(loaded, name=label, title=f"{loaded.title} ({label.partition(':')[2]})")
        sets.append(loaded)
    return sets


def parse_modes(text: str) -> list[Mode]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            raise ConfigError("eval.mode", f"unknown mode {m!r}; choose from {', '.join(MODES)}")
    return [cast("Mode", m) for m in dict.fromkeys(modes)] or ["hybrid"]


Results = dict[str, dict[tuple[str, Mode], EvalReport]]


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the sets named by `args`; 0 on success, 1 with a message on stderr otherwise."""
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    bar = ProgressBar("indexing", stream=stderr)
    try:
        pairs = parse_items(args.items)
        modes = parse_modes(args.mode)
        sets = load_sets(pairs, pool=bool(args.pool), sample=args.sample)
        variants: Sequence[Variant] = ablation.VARIANTS if args.ablate else (DEFAULT,)
        replayed = hookrun.replay_mode(modes) if args.hooks else None

        async def main(work_dir: Path) -> Results:
            provider = await local_provider(modes)
            try:
                results = {
                    s.name: await evaluate_set(
                        s, modes=modes, variants=variants, work_dir=work_dir, progress=bar, provider=provider
                    )
                    for s in sets
                }
                results = await abstain.add_other_sets(sets, results, work_dir=work_dir, provider=provider)
            finally:
                if provider is not None:
                    await provider.aclose()  # before the daemon loads its own copy of the model
            if replayed is None:
                return results
            bar.done()
            return await hookrun.replay_all(sets, results, work_dir, replayed)

        if args.work_dir is not None:
            results = anyio.run(main, Path(args.work_dir))
        else:
            with tempfile.TemporaryDirectory(prefix="memoryd-eval-") as tmp:
                results = anyio.run(main, Path(tmp))
    except MemorydError as exc:
        names = "".join(f" {n}" for n in args.items[0::2] if n in LOADERS)
        stderr.write(f"memoryd eval{names}: {exc}\n")
        return EXIT_ERROR
    finally:
        bar.done()
    if args.json:
        stdout.write(orjson.dumps(to_json(results), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        stdout.write(format_results(sets, results, ablate=bool(args.ablate)))
    return EXIT_OK


def to_json(results: Results) -> object:
    """One set in one mode at default settings: its report; anything more: a list of runs."""
    runs = [
        {"set": name, "variant": variant, **report.to_dict()}
        for name, by_key in results.items()
        for (variant, _mode), report in by_key.items()
    ]
    if len(runs) == 1:
        only = next(iter(next(iter(results.values())).values()))
        return only.to_dict()
    return {"runs": runs}


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def format_results(sets: Sequence[EvalSet], results: Results, *, ablate: bool) -> str:
    """One line per set and mode (default settings); per set, its categories for the first mode; then
    the ablation table when asked for."""
    width = max([10, *(len(s.name) + 2 for s in sets)])
    lines = [
        f"{'set':<{width}}{'mode':<8}{'n':>6}{'chunks':>8}{'R@5':>7}{'R@10':>7}{'nDCG@10':>9}{'MRR':>7}"
        f"{'served R@5':>12}{'R@10':>7}{'empty':>7}{'abstain':>9}{'other-sets':>12}"
    ]
    for s in sets:
        for (variant, mode), r in results[s.name].items():
            if variant != DEFAULT.name:
                continue
            m = r.overall
            served = f"{'-':>12}{'-':>7}{'-':>7}"
            if r.served is not None:
                sv = r.served.overall
                served = f"{sv.recall_5:>12.3f}{sv.recall_10:>7.3f}{_pct(r.served.empty / max(1, m.n)):>7}"
            same_set = _pct(r.abstention.rate) if r.abstention else "-"
            other_sets = _pct(r.other_sets.rate) if r.other_sets else "-"
            lines.append(
                f"{s.name:<{width}}{mode:<8}{m.n:>6}{r.settings['chunks']!s:>8}{m.recall_5:>7.3f}{m.recall_10:>7.3f}"
                f"{m.ndcg_10:>9.3f}{m.mrr:>7.3f}{served}{same_set:>9}{other_sets:>12}"
            )
    first = next(iter(next(iter(results.values())).values()))
    lines.append(
        f"(ranking: min_score 0, top {first.settings['k']}; served: the default settings, min_score "
        f"{first.settings['served_min_score']} (hybrid: min_evidence {first.settings['served_min_evidence']}; both "
        f"lower in an index of under {SMALL_INDEX_CHUNKS} chunks), top {first.settings['k']}; empty: answerable "
        "questions with no result; abstain: share of another index's questions answered 'No matches.'; "
        f"other-sets: the same for up to {abstain.LIMIT} questions of the other sets, asked of every index)"
    )
    for s in sets:
        by_key = results[s.name]
        (_variant, mode), report = next(iter(by_key.items()))
        lines.append("")
        lines.append(f"{s.title} by category ({mode}): {report.settings['chunks']} chunks in {len(s.groups)} indexes")
        lines.append(f"{'category':<18}{'n':>6}{'R@5':>8}{'R@10':>8}{'nDCG@10':>9}{'MRR':>8}")
        for c, m in report.by_category.items():
            label = f"{c} {s.categories.get(c, '?')}"
            lines.append(f"{label:<18}{m.n:>6}{m.recall_5:>8.3f}{m.recall_10:>8.3f}{m.ndcg_10:>9.3f}{m.mrr:>8.3f}")
        lines.extend(_sweep_lines("min_score", report.sweep, other_sets=report.other_sets is not None))
        lines.extend(_sweep_lines("min_evid.", report.evidence_sweep, other_sets=report.other_sets is not None))
        if (hook := _hook_line(report)) is not None:
            lines.append(hook)
        replay = next((r.hooks for r in by_key.values() if r.hooks is not None), None)
        if replay is not None:
            lines.extend(_replay_lines(replay))
        if report.other_sets is not None:
            per_set = ", ".join(
                f"{name} {_pct(a.rate)} ({a.asked // max(1, len(s.groups))} x {len(s.groups)} indexes)"
                for name, a in report.other_sets.by_set.items()
            )
            lines.append(f"other sets' questions answered 'No matches.' ({mode}): {per_set}")
        lines.append(
            f"latency p50 {report.latency_p50_ms:.2f} ms, p99 {report.latency_p99_ms:.2f} ms; "
            f"indexing {report.settings['index_seconds']} s, questions {report.settings['query_seconds']} s"
        )
    if ablate:
        lines.extend(format_ablation(sets, results))
    return "\n".join(lines) + "\n"


def _hook_line(report: EvalReport) -> str | None:
    """What `memoryd hook` would inject before each question (memoryd.hookblock, [hooks] defaults),
    beside what is served: the share of evidence lines in the block, and of another index's questions
    for which it injects nothing."""
    if report.served is None or report.served.injected is None:
        return None
    line = (
        f"prompt hook block (at most {HOOKS.max_results} snippets, {HOOKS.max_chars} chars): evidence lines "
        f"injected {report.served.injected.recall_5:.3f} (served R@5 {report.served.overall.recall_5:.3f})"
    )
    a = report.abstention
    if a is not None and a.quiet is not None and a.asked:
        quiet, no_matches = _pct(a.quiet / a.asked), _pct(a.rate)
        line += f"; nothing injected for {quiet} of another index's questions ('No matches.' {no_matches})"
    o = report.other_sets
    if o is not None and o.quiet is not None and o.asked:
        quiet, no_matches = _pct(o.quiet / o.asked), _pct(o.rate)
        line += f", for {quiet} of the other sets' ('No matches.' {no_matches})"
    return line


def _replay_lines(r: HookReplay) -> list[str]:
    """`--hooks`: what the real hook command injected before each question, beside what the daemon served."""
    lines = [
        f"hook replay (`memoryd hook claude-code UserPromptSubmit`, a daemon on these indexes): evidence cited "
        f"{r.evidence:.3f} (the daemon's served R@5 {r.served:.3f}); {r.cited_any} of {r.n} questions cite some, "
        f"{r.injected} got a block; largest {r.largest} of {r.max_chars} chars ({r.over_budget} over); "
        f"faults {r.faults}" + (f" (first: {r.first_fault})" if r.first_fault else "")
    ]
    for what, q in (("another index's", r.same_set), ("the other sets'", r.other_sets)):
        if q is not None:
            lines.append(
                f"hook replay: nothing injected for {_pct(q.quiet / max(1, q.asked))} of {q.asked} of {what} "
                f"questions ('No matches.' {_pct(q.no_matches / max(1, q.asked))})"
            )
    return lines


def _sweep_lines(key: str, rows: Sequence[dict[str, float]], *, other_sets: bool) -> list[str]:
    """One calibration sweep as rows of a small table: the threshold, then what is served at it."""
    if not rows:
        return []
    column = "min_score" if key == "min_score" else "min_evidence"
    lines = [
        f"{key:<11}" + "".join(f"{row[column]:>7.2f}" for row in rows),
        "R@10       " + "".join(f"{row['recall@10']:>7.3f}" for row in rows),
        "empty      " + "".join(f"{_pct(row['empty_share']):>7}" for row in rows),
        "abstain    " + "".join(f"{_pct(row['abstain']):>7}" for row in rows),
    ]
    if other_sets:
        lines.append("other-sets " + "".join(f"{_pct(row['abstain_other_sets']):>7}" for row in rows))
    return lines


def format_ablation(sets: Sequence[EvalSet], results: Results) -> list[str]:
    """R@5 (and its change against the default) per variant and set, for each mode that ran."""
    modes = list(dict.fromkeys(mode for by_key in results.values() for _v, mode in by_key))
    lines: list[str] = []
    for mode in modes:
        if mode == "bm25":
            continue
        lines.append("")
        lines.append(f"ablation, {mode} R@5 (change against the default):")
        lines.append(f"{'variant':<24}" + "".join(f"{s.name:>18}" for s in sets) + f"{'mean':>10}")
        per_set = {s.name: {v: r for (v, m), r in results[s.name].items() if m == mode} for s in sets}
        for verdict in [None, *ablation.verdicts(per_set)]:
            name = DEFAULT.name if verdict is None else verdict.variant
            cells = []
            for s in sets:
                r = per_set[s.name].get(name)
                delta = "" if verdict is None else f" ({verdict.deltas.get(s.name, 0.0):+.3f})"
                cells.append(f"{(r.overall.recall_5 if r else float('nan')):.3f}{delta}".rjust(18))
            mean = "" if verdict is None else f"{verdict.mean:+.3f}"
            lines.append(f"{name:<24}" + "".join(cells) + f"{mean:>10}")
    return lines
