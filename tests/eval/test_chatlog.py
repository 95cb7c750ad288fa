"""The question rule the chat-log sets share: English requests, asked once, answered at length, held out."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from memoryd.eval import chatlog
from memoryd.eval.chatlog import Message, Session

ANSWER = "Here is what changed. " + " ".join(f"detail{i}" for i in range(60))
START = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)


def session(*requests: str, answer: str = ANSWER) -> Session:
    """One session: each request followed by the same long answer (made up for these tests)."""
    s = Session(START)
    for r in requests:
        s.messages += [Message("user", r), Message("assistant", answer)]
    return s


REQUESTS = [f"how do we make the parser number {n} skip the blank lines at the end" for n in range(8)]


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("why does the retry loop in fetch_rows never stop", True),
        ("please rename the helper to load_config everywhere", True),
        ("rename helper load_config please", False),  # no function word
        ("rename the helper load_config please", False),  # one
        ("stwórzmy serwer MCP z użyciem bazy Qdrant i modelu", False),  # Polish: 'z', 'i' do not count
        ("puedes revisar el archivo de configuración y arreglar la ruta", False),
        ("kannst du die Funktion so ändern dass sie was zurückgibt", False),
        ("добавь тест для функции and the parser", False),  # Cyrillic: under 90% ASCII letters
    ],
)
def test_a_request_reads_as_english_by_its_function_words_and_letters(text: str, english: bool) -> None:
    assert chatlog.reads_as_english(text) is english


def test_every_request_of_the_rule_is_eligible() -> None:
    found = chatlog.eligible("p", [session(*REQUESTS)])
    assert [a.text for a in found] == REQUESTS
    assert [(a.qid, a.session, a.index) for a in found[:2]] == [("p:s01m001", 0, 0), ("p:s01m003", 0, 2)]
    assert {a.category for a in found} == {2}


def test_repeated_quoted_short_foreign_and_briefly_answered_requests_are_not() -> None:
    quoted = "Earlier you asked: " + REQUESTS[1].upper() + " and I said no."  # case does not hide it
    longer = REQUESTS[5] + " and the tests too"
    sessions = [
        session(*REQUESTS[:4]),
        session(REQUESTS[0], "fix it", "stwórzmy serwer MCP z użyciem bazy Qdrant i modelu Gemini"),
        session(REQUESTS[4], answer="Done, in a few words."),
        session(REQUESTS[5], longer),
        Session(START, [Message("user", "what did we say about the cache for it"), Message("assistant", quoted)]),
        session(REQUESTS[6] + "\n\n```python\nx   =   1\n```", answer=ANSWER + "\n```python\nfixed = True\n```"),
    ]
    found = chatlog.eligible("p", sessions)
    # 0: asked twice; 1: quoted in an answer; 4: answered in five words; 5: inside a longer request
    # (which is asked); the short, the foreign and the briefly answered ones fail their tests.
    assert [a.text.split("\n")[0] for a in found] == [REQUESTS[2], REQUESTS[3], longer, REQUESTS[6]]
    assert [a.category for a in found] == [2, 2, 2, 1]  # the last answer holds a code fence


def test_thousands_of_messages_are_checked_in_one_pass_each() -> None:
    many = [f"please explain the change number {n} to the cache layer of the service" for n in range(3000)]
    found = chatlog.eligible("p", [session(*many[i : i + 100]) for i in range(0, 3000, 100)])
    assert len(found) == 3000


def test_a_project_keeps_whole_sessions_up_to_its_budget() -> None:
    sessions = [session(r) for r in REQUESTS]
    size = sum(len(m.text) for m in sessions[0].messages)
    assert len(chatlog.kept(sessions, 3 * size)) == 3
    assert len(chatlog.kept(sessions, 1)) == 1  # the first session whatever its size


def test_convert_holds_out_the_asked_requests_and_points_at_their_answers() -> None:
    totals = chatlog.new_totals()
    group = chatlog.convert("p", [session(*REQUESTS[:3]), session(*REQUESTS[3:])], totals)
    assert group is not None
    assert sorted(group.files) == ["sessions/p-01.jsonl", "sessions/p-02.jsonl"]
    assert len(group.questions) == 8 and totals["questions"] == 8 and totals["messages"] == 8
    for q in group.questions:
        ((path, line),) = q.lines
        assert ANSWER in group.files[path].splitlines()[line - 1]
        assert q.question not in "".join(group.files.values())
    assert totals == {**totals, "projects": 1, "skipped_projects": 0, "sessions": 2, "eligible": 8}


def test_a_project_with_too_few_questions_is_left_out_and_counted() -> None:
    totals = chatlog.new_totals()
    assert chatlog.convert("p", [session(*REQUESTS[:4])], totals) is None
    assert (totals["skipped_projects"], totals["projects"], totals["sessions"]) == (1, 0, 0)


def test_at_most_the_lowest_hashing_questions_are_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chatlog, "QUESTIONS", 5)
    group = chatlog.convert("p", [session(*REQUESTS)], chatlog.new_totals())
    assert group is not None and len(group.questions) == 5
    ids = [a.qid for a in chatlog.eligible("p", [session(*REQUESTS)])]
    lowest = sorted(ids, key=lambda q: hashlib.sha256(q.encode()).hexdigest())[:5]
    assert sorted(q.qid for q in group.questions) == sorted(lowest)
