"""`memoryd eval SET PATH ...` end to end on tiny sets, through the real index and search."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from memoryd.eval import cli
from tests.eval.conftest import TWO_ANSWER_FAQ

PERFECT = {"recall@5": 1.0, "recall@10": 1.0, "ndcg@10": 1.0, "mrr": 1.0}
# With two chunks of which one is relevant, the relevant one ranks first (RR 1, nDCG 1) or second
# (RR 1/2, nDCG 1/log2(3) = 0.63093); the mean nDCG of two such questions follows from their MRR.
NDCG_OF_TWO_BY_MRR = {0.5: 0.6309, 0.75: 0.8155, 1.0: 1.0}


def parse(*argv: str) -> argparse.Namespace:
    top = argparse.ArgumentParser(prog="memoryd")
    cli.add_parser(top.add_subparsers(dest="command", required=True))
    if argv and "/" in argv[0]:  # a bare path: the tiny LoCoMo file
        argv = ("locomo", *argv)
    return top.parse_args(["eval", *argv])


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(parse(*argv), out, err)
    return code, out.getvalue(), err.getvalue()


def run_json(*argv: str) -> dict[str, Any]:
    code, out, err = run(*argv, "--json")
    assert (code, err) == (0, "")
    result: dict[str, Any] = orjson.loads(out)
    return result


def test_keyword_mode_indexes_asks_and_scores_every_question(tiny_path: Path) -> None:
    result = run_json(str(tiny_path), "--mode", "keyword")
    # At default settings each five-turn session is one chunk (lines 1-5), and every question
    # shares a word with both chunks, so both come back: every evidence line is covered.
    # The multi-hop and adversarial questions have evidence in both sessions: any order is ideal.
    assert result["by_category"]["1"] == {**PERFECT, "n": 1}
    assert result["by_category"]["5"] == {**PERFECT, "n": 1}
    # The two single-hop questions have evidence in session 1 only: their scores hang on its rank.
    single = result["by_category"]["4"]
    assert (single["n"], single["recall@5"], single["recall@10"]) == (2, 1.0, 1.0)
    assert single["ndcg@10"] == NDCG_OF_TWO_BY_MRR[single["mrr"]]
    overall = result["overall"]
    assert (overall["n"], overall["recall@5"], overall["recall@10"]) == (4, 1.0, 1.0)
    assert overall["mrr"] == (1 + single["mrr"]) / 2
    assert overall["ndcg@10"] == pytest.approx((1 + single["ndcg@10"]) / 2, abs=1e-4)
    assert 0 < result["latency_ms"]["p50"] <= result["latency_ms"]["p99"]
    settings = result["settings"]
    assert {k: settings[k] for k in ("mode", "indexes", "chunks", "k", "min_score")} == {
        "mode": "keyword",
        "indexes": 1,
        "chunks": 2,
        "k": 10,
        "min_score": 0.0,
    }
    assert (settings["chunk_tokens"], settings["chunk_overlap"]) == (400, 80)
    assert (settings["scored"], settings["skipped_no_evidence"], settings["unresolved_evidence"]) == (4, 1, 1)


def test_without_json_it_prints_a_table(tiny_path: Path) -> None:
    code, out, _err = run(str(tiny_path), "--mode", "keyword")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:8] == ["set", "mode", "n", "chunks", "R@5", "R@10", "nDCG@10", "MRR"]
    assert lines[1].split()[:5] == ["locomo", "keyword", "4", "2", "1.000"]
    start = lines.index("LoCoMo by category (keyword): 2 chunks in 1 indexes")
    assert [line.split()[:4] for line in lines[start + 2 : start + 5]] == [
        ["1", "multi-hop", "1", "1.000"],
        ["4", "single-hop", "2", "1.000"],
        ["5", "adversarial", "1", "1.000"],
    ]


def test_pool_puts_every_conversation_in_one_index(two_conversations_path: Path) -> None:
    pooled = run_json(str(two_conversations_path), "--mode", "keyword", "--pool")
    separate = run_json(str(two_conversations_path), "--mode", "keyword")
    assert (pooled["settings"]["indexes"], separate["settings"]["indexes"]) == (1, 2)
    assert "abstention" not in pooled  # one index: no other index to ask
    assert separate["abstention"]["asked"] == 8
    assert pooled["settings"]["chunks"] == separate["settings"]["chunks"] == 4
    assert pooled["overall"]["n"] == separate["overall"]["n"] == 8
    # Four chunks in all, every one sharing a word with every question: all come back.
    assert pooled["overall"]["recall@10"] == 1.0
    assert separate["overall"]["recall@10"] == 1.0
    assert separate["by_category"]["1"] == {**PERFECT, "n": 2}


def test_a_work_dir_keeps_workspaces_and_indexes_for_the_next_run(tiny_path: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    first = run_json(str(tiny_path), "--mode", "keyword", "--work-dir", str(work))
    second = run_json(str(tiny_path), "--mode", "keyword", "--work-dir", str(work))
    assert sorted(p.name for p in (work / "locomo" / "conv-t1" / "sessions").iterdir()) == [
        "session_01.jsonl",
        "session_02.jsonl",
    ]
    assert any((work / "locomo" / "state").iterdir())
    assert (first["overall"], first["by_category"]) == (second["overall"], second["by_category"])


def test_hybrid_is_the_default_mode_and_runs_with_the_local_model(tiny_path: Path) -> None:
    code, out, err = run(str(tiny_path), "--json")
    assert (code, err) == (0, "")
    assert orjson.loads(out)["settings"]["mode"] == "hybrid"


def test_a_missing_dataset_is_reported_not_raised(tmp_path: Path) -> None:
    code, out, err = run(str(tmp_path / "locomo10.json"), "--mode", "keyword")
    assert (code, out) == (1, "")
    assert err.startswith("memoryd eval locomo: cannot read LoCoMo file")


def test_several_sets_and_modes_print_one_table(tiny_path: Path, faq_dir: Path) -> None:
    notes = faq_dir
    code, out, err = run("locomo", str(tiny_path), "faq", str(notes), "--mode", "keyword,bm25")
    assert (code, err) == (0, "")
    rows = [line.split()[:3] for line in out.splitlines()[1:5]]
    assert rows == [["locomo", "keyword", "4"], ["locomo", "bm25", "4"], ["faq", "keyword", "2"], ["faq", "bm25", "2"]]
    code, out, err = run("locomo", str(tiny_path), "faq", str(notes), "--mode", "keyword", "--json")
    runs = orjson.loads(out)["runs"]
    assert [(r["set"], r["settings"]["mode"]) for r in runs] == [("locomo", "keyword"), ("faq", "keyword")]


def test_several_sets_are_each_asked_the_other_sets_questions(tiny_path: Path, tmp_path: Path) -> None:
    notes = tmp_path / "faq"
    notes.mkdir()
    (notes / "tool.md").write_text(
        "# FAQ\n\n## How do I pick a colour?\n\nRun `tool --colour red` to make the output red.\n",
        encoding="utf-8",
    )
    code, out, err = run("locomo", str(tiny_path), "faq", str(notes), "--mode", "keyword")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split()[-2:] == ["abstain", "other-sets"]
    # The chat's questions share no word with the note, the note's none with the chat: "No matches.".
    assert [line.split()[-2:] for line in lines[1:3]] == [["-", "100.0%"], ["-", "100.0%"]]
    assert "other sets' questions answered 'No matches.' (keyword): faq 100.0% (1 x 1 indexes)" in lines
    runs = orjson.loads(run("locomo", str(tiny_path), "faq", str(notes), "--mode", "keyword", "--json")[1])["runs"]
    by_set = {r["set"]: r["abstention_other_sets"] for r in runs}

    # LoCoMo's index is asked the FAQ's one question, the FAQ's the 4 questions of LoCoMo it scores
    # (the sample takes an equal share of each other set, up to 200 in all).
    def quiet(n: int) -> dict[str, object]:  # the prompt hook's block is empty for each of them too
        return {"hook_nothing_injected": n, "hook_nothing_injected_rate": 1.0}

    assert by_set == {
        "locomo": {
            "asked": 1,
            "no_matches": 1,
            "rate": 1.0,
            **quiet(1),
            "by_set": {"faq": {"asked": 1, "no_matches": 1, "rate": 1.0, **quiet(1)}},
        },
        "faq": {
            "asked": 4,
            "no_matches": 4,
            "rate": 1.0,
            **quiet(4),
            "by_set": {"locomo": {"asked": 4, "no_matches": 4, "rate": 1.0, **quiet(4)}},
        },
    }
    assert "abstention_other_sets" not in run_json(str(tiny_path), "--mode", "keyword")  # one set: no other


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("locomo",), "expected pairs of SET PATH"),
        (("wiki", "x.json"), "unknown set 'wiki'"),
        (("locomo", "a.json", "locomo", "./a.json"), "locomo a.json is named twice"),
        (("locomo", "a.json", "--mode", "fuzzy"), "unknown mode 'fuzzy'"),
    ],
)
def test_bad_arguments_are_reported_not_raised(argv: tuple[str, ...], message: str) -> None:
    code, out, err = run(*argv)
    assert (code, out) == (1, "")
    assert message in err


def test_one_set_may_be_named_with_several_paths(faq_dir: Path, tmp_path: Path) -> None:
    more = tmp_path / "more"
    more.mkdir()
    (more / "tool.md").write_text(TWO_ANSWER_FAQ, encoding="utf-8")
    code, out, err = run("faq", str(faq_dir), "faq", str(more), "--mode", "keyword", "--json")
    assert (code, err) == (0, "")
    runs = orjson.loads(out)["runs"]
    assert [r["set"] for r in runs] == ["faq:faq", "faq:more"]
    assert [r["settings"]["dataset"] for r in runs] == ["faq:faq", "faq:more"]
    assert runs[0]["abstention_other_sets"]["by_set"].keys() == {"faq:more"}


def test_labels_fall_back_to_the_whole_path_when_last_parts_are_alike() -> None:
    pairs = [("specstory", Path("x/A")), ("specstory", Path("y/A")), ("aider", Path("z/A")), ("faq", Path("w"))]
    assert cli.set_labels(pairs) == ["specstory:x/A", "specstory:y/A", "aider", "faq"]
    assert cli.set_labels([("specstory", Path("x/A")), ("specstory", Path("B/"))]) == ["specstory:A", "specstory:B"]


def test_parents_add_their_options_to_the_locomo_command() -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--log-level")
    top = argparse.ArgumentParser(prog="memoryd")
    cli.add_parser(top.add_subparsers(dest="command", required=True), parents=[common])
    args = top.parse_args(["eval", "locomo", "data.json", "--log-level", "debug", "--pool"])
    assert (args.command, args.items, args.log_level, args.pool) == ("eval", ["locomo", "data.json"], "debug", True)
    assert args.mode == "hybrid" and args.json is False and args.work_dir is None and args.ablate is False
