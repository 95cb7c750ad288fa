"""Secrets known by where they stand rather than by their shape.

* Values under a secret-looking key, in every syntax a transcript carries: env and shell
  (`API_KEY=…`, `export TOKEN="…"`), YAML/TOML/INI (`password: …`), JSON and Python/JS dicts
  (`"client_secret": "…"`, `'password': '…'`, also inside escaped JSON `\\"token\\": \\"…\\"`), keyword
  arguments, CLI flags (`--api-key …`, `--password=…`), XML elements and NuGet `<add key="Password"
  value="…"/>`. The key vocabulary follows gitleaks:generic-api-key and detect-secrets:KeywordDetector;
  the key must *end* in the secret word (`DB_PASSWORD`, `clientSecret`), so `password_hash`,
  `token_count` or `max_tokens` are not keys of a secret.
* Passwords in URLs (`scheme://user:password@host`, detect-secrets:BasicAuthDetector), in curl's
  `-u user:password` (gitleaks:curl-auth-user) and in query strings (`?access_token=…&sig=…`).
* HTTP credentials: `Authorization: Basic|Bearer|Token|Digest …` and a bare `Bearer …`
  (openclaw, gitleaks:curl-auth-header).
* Prose: "my password is …", "the API key for staging was …".
* The AWS secret access key next to its key id (40 base64 characters; trufflehog:aws pairs them).

Values that are clearly not secrets are left: empty values, placeholders (`<token>`, `${TOKEN}`,
`$TOKEN`, `%s`, `{{ token }}`, `xxxx`, `***`), code (`password=password`, `token=self.token`,
`secret=os.environ["X"]`, `password: str`), and words of prose that follow "password is".
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memoryd.sources.secrets.engine import Detector, Hit, Text, regex_finder

_F = re.ASCII | re.IGNORECASE
# The secret words a key name ends in, by the literal each starts with: every scan starts at that
# literal (a fast search) and checks the rest of the key name in code.
_TAILS = {
    "pass": r"pass(?:word|wd|phrase|code)?",
    "pwd": r"pwd",
    "secret": r"secret",
    "token": r"token",
    "credential": r"credentials?",
    "cookie": r"cookie",
    "signature": r"signature",
    "sig": r"sig",
    "key": r"key",
}
# Tails that also end ordinary words or names (`bypass`, `$PWD`, `config`): they need a separator or
# a case change before them, `pwd` and `sig` a prefix or a query string as well.
_SHORT_TAILS = frozenset({"pass", "pwd", "cookie", "sig"})
# A name ending in `key` names a secret only with one of these words before it (`api_key`,
# `clientSecretKey`, `AccountKey`), not `sort_key` or `monkey`.
_KEY_NAME = re.compile(
    r"(?:api|access|secret|private|client|consumer|app|auth|master|signing|encryption|license|service"
    r"|admin|account|storage|subscription|session|shared[_\-]?access|webhook|deploy|ssh)[_\-]?key$",
    re.ASCII,
)
_NAME_END = re.compile(
    r"(?:password|passwd|passphrase|passcode|secret|token|credentials?)$|(?:^|[_.\-])(?:pass|pwd)$", re.ASCII
)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_LIMIT = 60
# A value: quoted (plain, or with escaped quotes as JSON inside JSON carries them) or bare. An
# unterminated quote still gives a value: it runs to the end of the line.
_VALUE = (
    r"""(?:\\"(?P<v1>[^"\\\n]*)|"(?P<v2>(?:[^"\\\n]|\\.)*)|'(?P<v3>(?:[^'\\\n]|\\.)*)|\\'(?P<v4>[^'\\\n]*)"""
    r"""|`(?P<v5>[^`\n]*)|(?P<v6>[^\s"'`]+))"""
)
_VALUE_GROUPS = ("v1", "v2", "v3", "v4", "v5", "v6")
# After the key: its closing quote if quoted, a separator (`=`, `:`, `:=`, `=>`, or spaces after a
# `--flag`), the value.
_AFTER_KEY = r"""(?![A-Za-z0-9])(?P<kq>\\?["'])?(?:[ \t]*(?::=|=>|=|:)[ \t]*|(?P<ws>[ \t]+))""" + _VALUE
_KEY_VALUE = {word: re.compile(f"(?P<tail>{tail}){_AFTER_KEY}", _F) for word, tail in _TAILS.items()}
_STRIP = ",;)}]>."
_URL_STOP = re.compile(r"[&#]")

_PLACEHOLDER = re.compile(
    r"""(?:<[^>]*>|\[[^\]]*\]|\{[^}]*\}|\$\{[^}]*\}|\$\(?[A-Za-z_][A-Za-z0-9_]*\)?|%\(?[A-Za-z_]*\)?[sdr]"""
    r"""|(.)\1*|\.{3}|…|none|null|nil|true|false|undefined|yes|no|on|off|required|optional|string|str|bytes|int"""
    r"""|bool|any|object|number|secret|password|token|redacted|hidden|masked|changeme_?|example|placeholder"""
    r"""|your[_\-a-z]*|os\.environ.*|env\(.*|process\.env.*|getenv.*)""",
    re.ASCII | re.IGNORECASE | re.DOTALL,
)
# Bare values that are code, not literals: attribute paths, snake_case names, calls and subscripts,
# type annotations.
_CODE = re.compile(
    r"""(?:[A-Za-z_]{2,}(?:\.[A-Za-z_]+)+|[a-z_]+_[a-z_]+"""
    r"""|[A-Za-z_][A-Za-z0-9_.]*(?:\([^()]*\)|\[[^\[\]]*\])[,;]?|[A-Za-z_][A-Za-z0-9_.]*\($"""
    r"""|Optional\[.*|(?:str|bytes|int)\s*\|.*|[A-Z][A-Za-z]*(?:Str|Secret|Token|String)|self|cls|this)""",
    re.ASCII | re.DOTALL,
)
_PROSE_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "my",
        "our",
        "your",
        "their",
        "his",
        "her",
        "not",
        "no",
        "now",
        "also",
        "still",
        "only",
        "just",
        "too",
        "very",
        "same",
        "different",
        "in",
        "on",
        "at",
        "for",
        "from",
        "to",
        "of",
        "by",
        "with",
        "as",
        "set",
        "unset",
        "stored",
        "saved",
        "kept",
        "hidden",
        "shown",
        "required",
        "optional",
        "missing",
        "empty",
        "wrong",
        "correct",
        "incorrect",
        "invalid",
        "valid",
        "expired",
        "revoked",
        "rotated",
        "leaked",
        "secret",
        "private",
        "public",
        "safe",
        "unsafe",
        "strong",
        "weak",
        "long",
        "short",
        "simple",
        "easy",
        "hard",
        "new",
        "old",
        "default",
        "enabled",
        "disabled",
        "there",
        "here",
        "what",
        "which",
        "where",
        "how",
        "why",
        "when",
        "available",
        "needed",
        "used",
        "ok",
        "okay",
        "fine",
        "good",
        "bad",
        "generated",
        "encrypted",
        "hashed",
        "case",
        "sensitive",
        "configured",
        "protected",
        "known",
        "unknown",
        "given",
        "fixed",
        "something",
        "nothing",
        "anything",
        "everything",
    ]
)
_WORD_ENDINGS = ("ed", "ing", "ly", "able", "ible", "ive", "ous", "ful", "less", "ment", "tion")


def is_placeholder(value: str) -> bool:
    """`<token>`, `${TOKEN}`, `xxxx`, `changeme`, … : a value that stands for a secret, not one."""
    return _PLACEHOLDER.fullmatch(value) is not None


def _is_word(value: str) -> bool:
    """An ordinary lower-case English word (what follows "password:" in prose), not a password."""
    return value.isalpha() and value.islower() and (value in _PROSE_WORDS or value.endswith(_WORD_ENDINGS))


def _is_secret_value(value: str, name: str, bare: bool, raw: str = "") -> bool:
    """Whether a value under a secret key is a secret (`raw`: a bare value before its trailing
    punctuation was cut, to tell `f(x)` from a password)."""
    if len(value) < 3 or value.startswith("-----BEGIN") or _PLACEHOLDER.fullmatch(value):
        return False
    if bare and (_CODE.fullmatch(raw or value) or _is_word(value) or value.lower() == name.lower().rsplit(".", 1)[-1]):
        return False
    return not (value.isdigit() and len(value) < 6)


def _name_start(text: str, tail_start: int) -> int:
    start = tail_start
    while start > 0 and tail_start - start < _NAME_LIMIT and text[start - 1] in _NAME_CHARS:
        start -= 1
    return start


def _key_name(text: str, match: re.Match[str]) -> tuple[int, str] | None:
    """Where the key name that ends in the secret word starts, and the name; None when the match
    is not a key at all."""
    tail_start, tail_end = match.span("tail")
    start = _name_start(text, tail_start)
    prefix = text[start:tail_start]
    name = text[start:tail_end]
    tail = match.group("tail").lower()
    if tail == "key" and not _KEY_NAME.search(name.lower()):
        return None
    if tail in _SHORT_TAILS:
        camel = prefix[-1:].islower() and text[tail_start].isupper()
        if prefix and prefix[-1] not in "_.-" and not camel:
            return None
        if tail in ("pwd", "sig") and not prefix.strip("-") and text[start - 1 : start] not in ("?", "&"):
            return None
    quote = match.group("kq")
    if quote is not None and not text[:start].endswith(quote):
        return None
    if match.group("ws") is not None and not prefix.startswith("-"):
        return None
    return start, name


def _value_span(match: re.Match[str]) -> tuple[int, int, bool]:
    for group in _VALUE_GROUPS:
        start, end = match.span(group)
        if start >= 0:
            return start, end, group == "v6"
    return match.end(), match.end(), True


def _find_key_values(scan: Text) -> Iterator[Hit]:
    text = scan.text
    for word, pattern in _KEY_VALUE.items():
        if word not in scan.lowered:
            continue
        for match in pattern.finditer(text):
            key = _key_name(text, match)
            if key is None:
                continue
            name_start, name = key
            start, end, bare = _value_span(match)
            raw = text[start:end]
            if bare:
                if text[name_start - 1 : name_start] in ("?", "&"):  # a query string: the value ends at & or #
                    stop = _URL_STOP.search(text, start, end)
                    end = stop.start() if stop else end
                while end > start and text[end - 1] in _STRIP:
                    end -= 1
            if _is_secret_value(text[start:end], name, bare, raw):
                yield start, end, "secret-assignment"


# `<password>value</password>`, NuGet's `<add key="ClearTextPassword" value="…" />`.
_XML = re.compile(r"<(?P<name>[A-Za-z0-9_.\-]{1,60})>(?P<v>[^\n]{1,500}?)</(?P=name)>", re.ASCII)
_NUGET = re.compile(r"""<add\s+key=["'](?:ClearText)?Password["']\s+value=["'](?P<v>[^"'\n]+)""", _F)


def is_secret_name(name: str) -> bool:
    """Whether a key name ends in a secret word (`DB_PASSWORD`, `clientSecret`, `aws_secret_access_key`)."""
    lowered = name.lower()
    return bool(_NAME_END.search(lowered)) or bool(_KEY_NAME.search(lowered))


def _find_markup(scan: Text) -> Iterator[Hit]:
    for pattern in (_XML, _NUGET):
        for match in pattern.finditer(scan.text):
            if pattern is _XML and not is_secret_name(match.group("name")):
                continue
            start, end = match.span("v")
            if _is_secret_value(scan.text[start:end].strip(), "", bare=False):
                yield start, end, "secret-assignment"


# Prose: "my password is hunter2", "the API key for staging was …". The scan starts at the secret word.
_PROSE_TAILS = {
    "pass": r"pass(?:word|phrase|code)",
    "pwd": r"pwd",
    "secret": r"secret",
    "token": r"token",
    "key": r"key",
}
_PROSE_AFTER = (
    r"s?(?:[ \t]+(?:for|of|to|on)[ \t]+[^\s.,;:!?]{1,40}(?:[ \t]+[^\s.,;:!?]{1,40}){0,2}?)?"
    r"[ \t]+(?:is|was|->|becomes|will[ \t]+be|is[ \t]+now|set[ \t]+to|changed[ \t]+to|reads)[ \t]+"
    r"""["'`“]?(?P<v>[^\s"'`”]{3,})"""
)
_PROSE = {word: re.compile(f"(?P<tail>{tail}){_PROSE_AFTER}", _F) for word, tail in _PROSE_TAILS.items()}
_KEY_QUALIFIER = re.compile(r"(?:api|access|secret|private|license|ssh|signing|auth)[ \t_\-]?$", _F)


def _find_prose(scan: Text) -> Iterator[Hit]:
    text = scan.text
    for word, pattern in _PROSE.items():
        if word not in scan.lowered:
            continue
        for match in pattern.finditer(text):
            tail_start = match.start("tail")
            if tail_start and text[tail_start - 1].isalnum():
                continue  # inside a word ("bypass", "monkey")
            if word == "key" and not _KEY_QUALIFIER.search(text, max(0, tail_start - 12), tail_start):
                continue  # "the key is in the drawer"
            start, end = match.span("v")
            while end > start and text[end - 1] in ".,;:!?)":
                end -= 1
            value = text[start:end]
            if len(value) >= 3 and not _PLACEHOLDER.fullmatch(value) and not _is_word(value):
                yield start, end, "password-in-prose"


# `scheme://user:password@host` (the user part may be empty: `redis://:password@host`).
_URL_PASSWORD = re.compile(r"://[^\s:/@?#\"'`]*:(?P<v>[^\s/@\"'`]+)@", re.ASCII)
# curl -u user:password / --user user:password (quoted or not).
_CURL_USER = re.compile(r"""-(?<!\S-)(?:u|-user)[ \t=]*["']?[^\s:"']{1,100}:(?P<v>[^\s"']+)""", re.ASCII)
# HTTP Authorization (and Proxy-Authorization) with any scheme, then a bare `Bearer` / `Basic` token.
_AUTHORIZATION = re.compile(
    r"""authorization["']?[ \t]*[:=][ \t]*["']?(?:(?:Basic|Bearer|Token|Digest|Bot|Key|ApiKey|SSWS|Negotiate)"""
    r"""[ \t]+)?(?P<v>[^\s"'`]{6,})""",
    _F,
)
_BEARER = re.compile(r"""b(?<![A-Za-z0-9]b)(?:earer|asic)[ \t]+(?P<v>[A-Za-z0-9._~+/=\-]{8,})""", _F)


def _machine_made(value: str) -> bool:
    """A token, not a word: it has a digit, or a symbol of token alphabets, or mixed case."""
    stripped = value.rstrip("=")
    return (
        any(c.isdigit() for c in stripped)
        or any(c in "._~+/-" for c in stripped)
        or (any(c.isupper() for c in stripped) and any(c.islower() for c in stripped[1:]))
        or len(stripped) >= 20
    )


def _find_bearer(scan: Text) -> Iterator[Hit]:
    text = scan.text
    for match in _BEARER.finditer(text):
        start, end = match.span("v")
        end = start + len(text[start:end].rstrip("."))
        if _machine_made(text[start:end]):
            yield start, end, "authorization-header"


# trufflehog:aws pairs an AWS key id with a 40-character base64 secret near it; here the secret is
# masked anywhere in a text that names AWS or carries a key id.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])", re.ASCII)


def _find_aws_secret(scan: Text) -> Iterator[Hit]:
    text = scan.text
    for run_start, run_end in scan.runs:
        if run_end - run_start < 40:
            continue
        for match in _AWS_SECRET.finditer(text, run_start, run_end):
            value = match.group(0)
            if any(c.isdigit() for c in value) and any(c.isupper() for c in value) and any(c.islower() for c in value):
                yield match.start(), match.end(), "aws-secret-key"


def keyvalue_detectors(rank: int) -> list[Detector]:
    return [
        Detector(tuple(_TAILS), _find_key_values, rank),
        Detector(("</", "<add"), _find_markup, rank),
        Detector(("://",), regex_finder("url-password", _URL_PASSWORD, "v"), rank),
        Detector((" -u", "--user"), regex_finder("curl-credential", _CURL_USER, "v"), rank),
        Detector(("authorization",), regex_finder("authorization-header", _AUTHORIZATION, "v"), rank),
        Detector(("bearer", "basic"), _find_bearer, rank),
        Detector(tuple(_PROSE_TAILS), _find_prose, rank + 1),
        Detector(("aws", "akia", "asia", "a3t"), _find_aws_secret, rank),
    ]
