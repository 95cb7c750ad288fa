"""Secret redaction (spec §3.6 "Redaction", mask rule §1)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeAlias

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.sources.redact import mask_token, redact

Planted: TypeAlias = st.SearchStrategy[tuple[str, str, str]]
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
# Text that triggers a redaction pattern. A secret whose body embeds one of these is first masked
# by the pattern it embeds, which can cut it short for its own pattern (as in OpenClaw), so the
# generated secrets avoid them.
TRIGGERS = (
    "key",
    "token",
    "secret",
    "passw",
    "--",
    "authorization",
    "bearer",
    "private key",
    "sk-",
    "ghp_",
    "github_pat_",
    "xox",
    "xapp-",
    "gsk_",
    "aiza",
    "pplx-",
    "npm_",
    "bot",
)
# Surrounding prose: every script and symbol but the ones that build secret syntax (= : quotes - _
# backslash) and the characters masks are made of.
SURROUNDING = st.text(
    st.one_of(
        st.sampled_from(ALNUM + " \n\t.,;!?()[]{}#@&%/+<>|~^$"),
        st.characters(min_codepoint=0xC0, max_codepoint=0x24F),
        st.characters(min_codepoint=0x4E00, max_codepoint=0x4E3F),
        st.characters(min_codepoint=0x1F600, max_codepoint=0x1F64F),
    ),
    max_size=60,
)


def body(alphabet: str, min_size: int, max_size: int = 60) -> st.SearchStrategy[str]:
    """Secret text from `alphabet`, ending in a letter or digit (so a trailing `\\b` holds)."""
    return st.builds(
        lambda middle, last: middle + last,
        st.text(st.sampled_from(alphabet), min_size=min_size - 1, max_size=max_size),
        st.sampled_from(ALNUM),
    ).filter(lambda s: not any(trigger in s.lower() for trigger in TRIGGERS))


def planted(head: str | st.SearchStrategy[str], secret: st.SearchStrategy[str], tail: str = "") -> Planted:
    heads = st.just(head) if isinstance(head, str) else head
    return st.tuples(heads, secret, st.just(tail))


VALUE_CHARS = ALNUM + "!#$%&()+,-./;<=>?@[]^_`{|}~:é日"
ENV_NAMES = st.builds(
    lambda prefix, word: prefix + word,
    st.text(st.sampled_from("ABCXYZ019_"), max_size=8),
    st.sampled_from(["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "key", "Api_Key", "token"]),
)
ENV_SEPARATORS = st.sampled_from(["=", ":", " = ", ": ", "\t=\t"])


@st.composite
def env_assignment(draw: st.DrawFn) -> tuple[str, str, str]:
    quote = draw(st.sampled_from(["", '"', "'"]))
    head = draw(ENV_NAMES) + draw(ENV_SEPARATORS) + quote
    return head, draw(body(VALUE_CHARS, 1)), quote


@st.composite
def json_field(draw: st.DrawFn) -> tuple[str, str, str]:
    key = draw(st.sampled_from(["apiKey", "token", "secret", "password", "passwd", "accessToken", "refreshToken"]))
    return f'"{key}"' + draw(st.sampled_from([": ", ":", " : "])) + '"', draw(body(VALUE_CHARS + " \\", 1)), '"'


@st.composite
def cli_flag(draw: st.DrawFn) -> tuple[str, str, str]:
    flag = draw(
        st.sampled_from(
            ["api-key", "api_key", "apikey", "hook-token", "hook_token", "token", "secret", "password", "passwd"]
        )
    )
    quote = draw(st.sampled_from(["", '"', "'"]))
    return f"--{flag}" + draw(st.sampled_from([" ", "  ", "\t"])) + quote, draw(body(VALUE_CHARS + "\\", 1)), quote


@st.composite
def pem_block(draw: st.DrawFn) -> tuple[str, str, str]:
    kind = draw(st.sampled_from(["", "RSA ", "EC ", "OPENSSH "]))
    separator = draw(st.sampled_from(["\n", " "]))
    lines = draw(st.lists(body(ALNUM + "+/", 8, 64), min_size=1, max_size=4))
    return (
        f"-----BEGIN {kind}PRIVATE KEY-----{separator}",
        separator.join(lines),
        f"{separator}-----END {kind}PRIVATE KEY-----",
    )


TOKEN_CHARS = ALNUM + "._-+="
TELEGRAM_SECRET = st.builds(
    lambda digits, rest: f"{digits}:{rest}",
    st.text(st.sampled_from("0123456789"), min_size=6, max_size=12),
    body(ALNUM + "_-", 20),
)

# Every secret shape of the default pattern list: (text before, secret, text after).
PLANTED_SECRET_FORMATS: dict[str, Planted] = {
    "env": env_assignment(),
    "json": json_field(),
    "cli": cli_flag(),
    "authorization": planted(
        st.sampled_from(["Authorization: Bearer ", "Authorization=Bearer ", "authorization : bearer  "]),
        body(TOKEN_CHARS, 1),
    ),
    "bearer": planted(st.sampled_from(["Bearer ", "bearer\t"]), body(TOKEN_CHARS, 18)),
    "pem": pem_block(),
    "openai": planted("", body(ALNUM + "_-", 8).map(lambda s: "sk-" + s)),
    "github": planted("", body(ALNUM, 20).map(lambda s: "ghp_" + s)),
    "github_pat": planted("", body(ALNUM + "_", 20).map(lambda s: "github_pat_" + s)),
    "slack": planted("", st.builds(lambda kind, s: f"xox{kind}-{s}", st.sampled_from("baprs"), body(ALNUM + "-", 10))),
    "slack_app": planted("", body(ALNUM + "-", 10).map(lambda s: "xapp-" + s)),
    "groq": planted("", body(ALNUM + "_-", 10).map(lambda s: "gsk_" + s)),
    "google": planted("", body(ALNUM + "_-", 20).map(lambda s: "AIza" + s)),
    "perplexity": planted("", body(ALNUM + "_-", 10).map(lambda s: "pplx-" + s)),
    "npm": planted("", body(ALNUM, 10).map(lambda s: "npm_" + s)),
    "telegram_url": planted("https://api.telegram.org/bot", TELEGRAM_SECRET, "/getMe"),
    "telegram": planted("", TELEGRAM_SECRET),
}


def occurs_outside(text: str, part: str, start: int, end: int) -> bool:
    """Whether `part` occurs in `text` somewhere not wholly inside [start, end)."""
    index = text.find(part)
    while index != -1:
        if index < start or index + len(part) > end:
            return True
        index = text.find(part, index + 1)
    return False


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging) when the block runs far longer than it should."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("fmt", sorted(PLANTED_SECRET_FORMATS))
@settings(deadline=None, max_examples=60)
@given(data=st.data(), before=SURROUNDING, after=SURROUNDING)
def test_redaction_never_leaks_a_planted_secret(fmt: str, data: st.DataObject, before: str, after: str) -> None:
    head, secret, tail = data.draw(PLANTED_SECRET_FORMATS[fmt])
    text = f"{before} {head}{secret}{tail} {after}"
    start = len(before) + 1 + len(head)
    end = start + len(secret)
    out = redact(text)
    if secret in out:
        assert occurs_outside(text, secret, start, end)
    for i in range(len(secret) - 10):
        window = secret[i : i + 11]
        if window in out:
            assert occurs_outside(text, window, start, end), window


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz123456", "OPENAI_API_KEY=sk-abc…3456"),
        ('export GITHUB_TOKEN="ghp_abcdefghijklmnopqrstuvwxyz0123"', 'export GITHUB_TOKEN="ghp_ab…0123"'),
        ("db password: hunter2", "db password: ***"),
        ('{"apiKey": "abcdefghijklmnopqrstuvwx", "token": "short"}', '{"apiKey": "abcdef…uvwx", "token": "***"}'),
        ("run --api-key abcdefghijklmnopqrstuvwxyz --password 'hunter2'", "run --api-key abcdef…wxyz --password '***'"),
        ("deploy --hook-token abc123", "deploy --hook-token ***"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz.abc", "Authorization: Bearer abcdef….abc"),
        ("Authorization=Bearer short", "Authorization=Bearer ***"),
        ("use Bearer abcdefghijklmnopqrstuvwxyz please", "use Bearer abcdef…wxyz please"),
        ("a Bearer tooshorttoken stays", "a Bearer tooshorttoken stays"),
        ("xoxb-1234567890-abcdefghij and npm_abcdefghij", "xoxb-1…ghij and ***"),
        ("AIzaSyA1234567890abcdefghijklmn", "AIzaSy…klmn"),
        (
            "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
            "https://api.telegram.org/bot123456…Dsaw/getMe",
        ),
        ("123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "123456…Dsaw"),
        ("nothing to see here: 10:30, sk-short", "nothing to see here: 10:30, sk-short"),
    ],
)
def test_each_pattern_masks_its_secret(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_the_mask_keeps_six_and_four_characters_from_eighteen_on() -> None:
    assert mask_token("a" * 17) == "***"
    assert mask_token("abcdefghijklmnopqr") == "abcdef…opqr"
    assert mask_token("***") == "***"


def test_patterns_ignore_case() -> None:
    assert redact("Api_Key = 'abcdefghijklmnopqrstuvwx'") == "Api_Key = 'abcdef…uvwx'"
    assert redact("SK-ABCDEFGHIJ") == "***"


def test_a_multiline_pem_block_keeps_its_first_and_last_lines() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\ndef\n-----END RSA PRIVATE KEY-----"
    assert redact(f"before\n{pem}\nafter") == (
        "before\n-----BEGIN RSA PRIVATE KEY-----\n…redacted…\n-----END RSA PRIVATE KEY-----\nafter"
    )


def test_a_pem_block_given_as_a_key_value_is_masked_whole() -> None:
    # OpenClaw masks `-----BEGIN` as the ENV value first and then leaks the body.
    text = "private_key: -----BEGIN RSA PRIVATE KEY----- MIIEpAIBAAKCAQEA7 -----END RSA PRIVATE KEY-----"
    assert redact(text) == "private_key: ***"


def test_a_one_line_pem_block_is_masked_whole() -> None:
    assert redact("x -----BEGIN PRIVATE KEY----- MIIEabc -----END PRIVATE KEY----- y") == "x *** y"


def test_a_pem_block_without_an_end_is_left_alone() -> None:
    assert redact("-----BEGIN PRIVATE KEY----- MIIEabc") == "-----BEGIN PRIVATE KEY----- MIIEabc"


def test_a_secret_across_openclaws_slice_edge_is_masked() -> None:
    secret = "sk-" + "q" * 40
    text = "x " * 8185 + secret + " y" * 12000
    assert 16384 - 20 < text.index(secret) < 16384
    assert secret not in redact(text)


def test_an_unterminated_quote_still_masks_the_value() -> None:
    assert redact("API_KEY='abcdefghijklmnopqrstuvw") == "API_KEY='abcdef…tuvw"
    assert redact('--token "abcdefghijklmnopqrstuvw') == '--token "abcdef…tuvw'


def test_the_secret_is_masked_where_it_matched() -> None:
    assert redact("TOKEN=TOKENabcdefghijklmnopqrstu") == "TOKEN=TOKENa…rstu"


def test_text_without_secrets_is_returned_unchanged() -> None:
    text = "We met at 10:30 to discuss the 日本語 notes 😀 and the roadmap."
    assert redact(text) == text
    assert redact("") == ""


ADVERSARIAL_UNIT = [
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY----- x -----END A A A A ",
    "KEY ",
    '"token": "a',
    "Bearer " + "." * 1000 + " ",
    "sk-",
    "1234567:",
    "--token '",
    "KEY='",
    "Authorization: Bearer ",
    "x=KEY: 'a sk-a ghp_ bot1234567:a -----BEGIN PRIVATE KEY----- ",
]


@pytest.mark.parametrize("unit", ADVERSARIAL_UNIT)
def test_a_megabyte_of_adversarial_text_is_redacted_in_linear_time(unit: str) -> None:
    text = unit * (1_000_000 // len(unit))
    with deadline(60):
        out = redact(text)
    assert len(out) <= len(text) + len(text) // 2


@pytest.mark.parametrize(
    "text",
    [
        "KEY" + " " * 1_000_000,
        "a" * 1_000_000 + "KEY",
        "ghp_" + "a" * 1_000_000 + "_",
        "1" * 1_000_000,
        "1234567:" + "-" * 1_000_000,
        "-----BEGIN " + "A " * 500_000 + "PRIVATE KEY-----",
    ],
)
def test_a_megabyte_long_near_miss_is_left_alone_in_linear_time(text: str) -> None:
    with deadline(60):
        assert redact(text) == text
