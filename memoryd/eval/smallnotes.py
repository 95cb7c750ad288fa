"""Small memories: one-note workspaces asked plain, paraphrased questions (issue 26, item 5).

A user's first MEMORY.md holds a handful of lines ("Uses Neovim with the lazy.nvim setup"), and the
question rarely repeats its words ("what editor do I use"). The other sets never measure that: their
indexes hold thousands of chunks, so a paraphrase always has some neighbour to be found by. Here each
workspace is one `MEMORY.md` of one to five lines, written for memoryd (ours, shipped as code); each
question's evidence is the line that answers it. Category 1: the question shares no content word
with that line (a pure paraphrase); 2: it shares at least one. Each workspace is also asked the next
one's questions, which it cannot answer (abstention). The path given on the command line is ignored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from memoryd.eval.dataset import EvalSet, Group, Qrel
from memoryd.search.expand import extract_keywords
from memoryd.search.terms import stem

CATEGORY_NAMES: Mapping[int, str] = MappingProxyType({1: "paraphrase", 2: "shared word"})
NOTE = "MEMORY.md"

# (the note's fact lines, [(question, index of the fact line that answers it)])
NOTES: Sequence[tuple[Sequence[str], Sequence[tuple[str, int]]]] = (
    (["Uses Neovim with the lazy.nvim setup"], [("what editor do I use", 0), ("which text editor am I on", 0)]),
    (["My dog Rex is a golden retriever."], [("what kind of pet do I have", 0), ("what breed is my puppy", 0)]),
    (
        ["Deploys go through GitHub Actions to Fly.io; never push to main directly."],
        [("how do we ship to production", 0), ("where is the app hosted", 0)],
    ),
    (["Allergic to peanuts, avoid recipes with them."], [("do I have any food allergies", 0), ("what can't I eat", 0)]),
    (
        ["Prefers pytest over unittest, with fixtures in conftest.py."],
        [("which testing framework should I use for Python", 0), ("how do I like my tests written", 0)],
    ),
    (
        ["Lives in Lisbon, Portugal (moved from Berlin in 2023)."],
        [("where am I based", 0), ("which city did I live in before", 0)],
    ),
    (
        ["Database is PostgreSQL 16 on RDS; migrations with Alembic."],
        [("what db does the project run on", 0), ("how are schema changes applied", 0)],
    ),
    (
        ["Works 9-17 CET, no meetings on Fridays."],
        [("what are my working hours", 0), ("which day is kept free of calls", 0)],
    ),
    (
        ["Daughter Mia starts school in September 2025."],
        [("when does my kid begin classes", 0), ("what's my child's name", 0)],
    ),
    (
        ["Favourite coffee: flat white with oat milk."],
        [("how do I take my coffee", 0), ("what should I order at the cafe", 0)],
    ),
    (["Vegetarian since 2019."], [("do I eat meat", 0), ("what's my diet", 0)]),
    (["Blood type O negative."], [("what's my blood group", 0)]),
    (
        [
            "Python formatting: ruff format, line length 120.",
            "Commit messages follow Conventional Commits (feat:, fix:).",
            "Type hints everywhere, checked by mypy --strict.",
        ],
        [
            ("what's the max line width for the code", 0),
            ("how should commit titles be written", 1),
            ("which type checker do we run", 2),
        ],
    ),
    (
        [
            "Wife's birthday is 14 March.",
            "Mother lives in Porto; call her on Sundays.",
            "Daughter Mia's school is Escola Azul.",
        ],
        [("when is my partner's birthday", 0), ("when do I phone my mom", 1), ("where does my kid study", 2)],
    ),
    (
        [
            "Laptop: ThinkPad X1 Carbon running Fedora 40.",
            "Preferred shell is fish with the starship prompt.",
            "Prefers dark mode everywhere; font JetBrains Mono 14.",
            "Home Wi-Fi router is in the hallway closet.",
        ],
        [
            ("what computer do I have", 0),
            ("which Linux distro am I on", 0),
            ("which terminal shell do I use", 1),
            ("what typeface do I use for code", 2),
            ("where is the internet box at home", 3),
        ],
    ),
    (
        [
            "API keys live in 1Password, vault Engineering.",
            "Error tracking with Sentry; alerts go to PagerDuty.",
            "Kubernetes cluster runs on GKE in europe-west1.",
        ],
        [
            ("where are secrets stored", 0),
            ("how are we notified about crashes", 1),
            ("which cloud region is our cluster in", 2),
        ],
    ),
    (
        [
            "Manager is Priya Raman; 1:1 every other Tuesday.",
            "Standup at 10:15 in the #team-core channel.",
            "Quarterly planning happens the first week of January, April, July and October.",
        ],
        [("who do I report to", 0), ("when is the daily meeting", 1), ("how often do we plan the roadmap", 2)],
    ),
    (
        [
            "Runs a half marathon every spring; current PB 1:42.",
            "Plays bass guitar in a jazz trio on weekends.",
            "Speaks Portuguese and some Japanese.",
        ],
        [
            ("what's my best race time", 0),
            ("what instrument do I play", 1),
            ("what music do I perform", 1),
            ("what languages do I know", 2),
        ],
    ),
    (
        [
            "Car: 2018 Toyota Corolla hybrid, next service due in May.",
            "Passed the AWS Solutions Architect exam in June 2024.",
        ],
        [("what do I drive", 0), ("when is my vehicle's maintenance", 0), ("what certifications do I have", 1)],
    ),
    (
        [
            "The staging database is reset every night at 02:00 UTC.",
            "Feature flags are managed in LaunchDarkly.",
            "The mobile app is written in Flutter.",
            "Support tickets come in through Zendesk.",
            "Design files are in Figma, team space Product.",
        ],
        [
            ("when is the test environment wiped", 0),
            ("how do we toggle features", 1),
            ("what framework is the phone app built with", 2),
            ("where do customer complaints arrive", 3),
            ("where are the mockups", 4),
        ],
    ),
)


def note_text(facts: Sequence[str]) -> str:
    """The note: a title, a blank line, one fact per line (fact i is on line i + 3)."""
    return "# Memory\n\n" + "".join(f"{fact}\n" for fact in facts)


def _shares_word(question: str, line: str) -> bool:
    words = {stem(w) for w in extract_keywords(line)}
    return any(stem(w) in words for w in extract_keywords(question))


def load_smallnotes(_path: Path | None = None) -> EvalSet:
    """The built-in one-note workspaces, one group each."""
    digest = hashlib.sha256()
    groups: list[Group] = []
    totals = {"workspaces": 0, "lines": 0, "questions": 0, "paraphrases": 0}
    for n, (facts, asked) in enumerate(NOTES, 1):
        text = note_text(facts)
        digest.update(text.encode())
        agent = f"note-{n:02d}"
        questions = []
        for i, (question, fact) in enumerate(asked, 1):
            category = 2 if _shares_word(question, facts[fact]) else 1
            questions.append(Qrel(f"{agent}:q{i}", question, category, frozenset({(NOTE, fact + 3)})))
            digest.update(question.encode())
            totals["paraphrases"] += category == 1
        groups.append(Group(agent, {NOTE: text}, tuple(questions)))
        totals["workspaces"] += 1
        totals["lines"] += len(facts)
        totals["questions"] += len(questions)
    return EvalSet("smallnotes", "one-note workspaces", tuple(groups), CATEGORY_NAMES, digest.hexdigest(), totals)
