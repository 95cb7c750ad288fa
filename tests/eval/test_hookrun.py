"""`memoryd eval --hooks`: the questions replayed through the real `memoryd hook` command against a real
daemon serving the harness's own indexes, and what the host would be given scored."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import orjson
import pytest

from memoryd.eval import cli, harness, hookrun
from memoryd.eval.dataset import EvalSet, Group, Qrel
from memoryd.eval.hookreplay import cited_spans, read_output
from memoryd.eval.metrics import Span

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

OPS = "# Ops notes\n\nThe staging database lives on host kestrel.\nDeploys happen on Tuesdays.\n" + (
    "We chose Postgres logical replication for the orchard migration.\n"
)
GARDEN = "# Garden\n\nThe tomato seedlings need watering every morning.\nThe greenhouse heater burns propane.\n"


def _q(qid: str, question: str, path: str, line: int) -> Qrel:
    return Qrel(qid, question, 1, frozenset({(path, line)}))


def notes_set() -> EvalSet:
    ops, garden = "memory/ops.md", "memory/garden.md"
    return EvalSet(
        "notes",
        "two notes",
        (
            Group(
                "ops",
                {ops: OPS},
                (
                    _q("o1", "which host runs the staging database?", ops, 3),
                    _q("o2", "what replication for the orchard migration?", ops, 5),
                ),
            ),
            Group(
                "garden",
                {garden: GARDEN},
                (
                    _q("g1", "how often do the tomato seedlings need watering?", garden, 3),
                    _q("g2", "what does the greenhouse heater burn?", garden, 4),
                ),
            ),
        ),
        {1: "fact"},
        "0" * 64,
    )


def other_set() -> EvalSet:
    questions = (
        _q("x1", "quaternion sprocket lubrication interval", "x.md", 1),
        _q("x2", "which host runs the staging database?", "x.md", 1),
    )
    return EvalSet("other", "other", (Group("x", {"memory/x.md": "x\n"}, questions),), {1: "fact"}, "1" * 64)


async def test_the_replay_through_the_hook_command_matches_the_in_process_figures(tmp_path: Path) -> None:
    notes, other = notes_set(), other_set()
    reports = await harness.evaluate_set(notes, modes=["keyword"], work_dir=tmp_path)
    report = reports[("default", "keyword")]
    assert report.served is not None and report.served.injected is not None
    replay = await hookrun.replay_set(notes, [notes, other], tmp_path / "notes", "none", probes=2)
    # Every question's evidence is cited in the block the real hook printed, as the in-process block says,
    # and the daemon serves what the harness served: it answered from the harness's own indexes.
    assert (replay.n, replay.evidence, replay.cited_any, replay.injected) == (4, 1.0, 4, 4)
    assert replay.evidence == report.served.injected.recall_5
    assert replay.served == report.served.overall.recall_5 == 1.0
    assert 0 < replay.largest <= replay.max_chars == 1500 and replay.over_budget == 0
    assert replay.faults == 0
    # The other index's questions: nothing injected for exactly those served "No matches.".
    assert replay.same_set is not None and (replay.same_set.asked, replay.same_set.quiet) == (4, 4)
    assert replay.same_set.no_matches == 4
    # The other set's: the off-topic one on both indexes, the staging one on the garden notes only.
    assert replay.other_sets is not None
    assert (replay.other_sets.asked, replay.other_sets.quiet, replay.other_sets.no_matches) == (4, 3, 3)
    assert len(replay.latency_ms) == 4 + 4 + 4
    assert not any((tmp_path / "notes" / "state").glob("**/*.sock"))  # the daemon had its own state dir


def test_eval_hooks_on_the_command_line(faq_dir: Path) -> None:
    notes = faq_dir
    top = argparse.ArgumentParser(prog="memoryd")
    cli.add_parser(top.add_subparsers(dest="command", required=True))
    out, err = io.StringIO(), io.StringIO()
    args = top.parse_args(["eval", "faq", str(notes), "--mode", "keyword", "--hooks", "--json"])
    assert (cli.run(args, out, err), err.getvalue()) == (0, "")
    result = orjson.loads(out.getvalue())
    hooks, served = result["hooks"], result["served"]
    assert (hooks["n"], hooks["faults"], hooks["over_budget"]) == (2, 0, 0)
    assert hooks["evidence_injected"] == served["hook_block"]["recall@5"] > 0  # the hook command, as in-process
    assert hooks["served_recall@5"] == served["recall@5"]
    out = io.StringIO()
    args = top.parse_args(["eval", "faq", str(notes), "--mode", "keyword", "--hooks"])
    assert cli.run(args, out, io.StringIO()) == 0
    assert "hook replay (`memoryd hook claude-code UserPromptSubmit`" in out.getvalue()
    args = top.parse_args(["eval", "faq", str(notes), "--mode", "bm25", "--hooks"])
    err = io.StringIO()
    assert cli.run(args, io.StringIO(), err) == 1
    assert "hybrid or keyword" in err.getvalue()


def test_the_host_reading_of_the_hook_output() -> None:
    block = "<memoryd-recall>\nFrom …:\n- memory/a.md#L3-L5: x\n- memory/b c.md#L7: y: z\n- img.png: a photo\n</m>"
    answer = orjson.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": block}})
    assert read_output(0, answer.decode()).context == block
    assert cited_spans(block) == [Span("memory/a.md", 3, 5), Span("memory/b c.md", 7, 7)]
    assert read_output(0, "") == read_output(0, "\n")
    assert read_output(0, "").fault == ""
    assert read_output(2, answer.decode()).context == ""  # exit 2 blocks the prompt: a fault, nothing added
    assert read_output(0, "plain words").context == "plain words"  # Claude Code adds plain stdout as context
    other = orjson.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": block}})
    assert read_output(0, other.decode()).fault


def test_the_daemon_config_points_at_the_harness_databases(tmp_path: Path) -> None:
    text = hookrun.daemon_config(notes_set(), tmp_path, "local")
    assert f'path = "{tmp_path}{os.sep}state{os.sep}agents{os.sep}{{agentId}}{os.sep}index.sqlite"' in text
    assert f'[agents."ops"]\nworkspace = "{tmp_path / "ops"}"' in text
