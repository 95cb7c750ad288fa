"""Generators of realistic secrets, one per family, and the places a secret sits in a transcript.

Shared by the property tests (driven by hypothesis through `random.Random`) and by the redaction
benchmark (seeded), so both plant the same shapes. Formats follow the providers' published token
layouts (prefix, alphabet, length); the values are random, never real keys.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from memoryd.sources.secrets.wallet import bip39_words

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"
PASSWORD_CHARS = ALNUM + "!#$%&()*+,-./:;<=>?@[]^_{|}~"
BIP39 = sorted(bip39_words())


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def password(rng: random.Random) -> str:
    """A human-made password: letters, at least one digit or symbol, 8 to 24 characters."""
    body = pick(rng, PASSWORD_CHARS, rng.randint(7, 23))
    return body + rng.choice(string.digits + "!#%&*")


@dataclass(frozen=True, slots=True)
class Planted:
    """A text carrying secrets, and the secrets (every one must be masked)."""

    text: str
    secrets: tuple[str, ...]


Maker = Callable[[random.Random], Planted]
Token = Callable[[random.Random], str]

# Provider token formats: every one is planted bare, glued to words, quoted, in JSON and in prose.
TOKENS: dict[str, Token] = {
    "stripe sk_live_": lambda r: "sk_live_" + pick(r, ALNUM, r.randint(24, 99)),
    "stripe rk_live_": lambda r: "rk_live_" + pick(r, ALNUM, r.randint(24, 99)),
    "stripe whsec_": lambda r: "whsec_" + pick(r, ALNUM, 32),
    "anthropic sk-ant-": lambda r: "sk-ant-api03-" + pick(r, B64URL, 93) + "AA",
    "openai sk-proj-": lambda r: "sk-proj-" + pick(r, B64URL, r.randint(40, 156)),
    "openai sk-": lambda r: "sk-" + pick(r, ALNUM, 48),
    "github ghp_": lambda r: "ghp_" + pick(r, ALNUM, 36),
    "github gho_": lambda r: "gho_" + pick(r, ALNUM, 36),
    "github ghs_": lambda r: "ghs_" + pick(r, ALNUM, 36),
    "github ghu_": lambda r: "ghu_" + pick(r, ALNUM, 36),
    "github ghr_": lambda r: "ghr_" + pick(r, ALNUM, 36),
    "github_pat_": lambda r: "github_pat_" + pick(r, ALNUM, 22) + "_" + pick(r, ALNUM, 59),
    "gitlab glpat-": lambda r: "glpat-" + pick(r, B64URL, 20),
    "huggingface hf_": lambda r: "hf_" + pick(r, ALNUM, 34),
    "sendgrid SG.": lambda r: "SG." + pick(r, B64URL, 22) + "." + pick(r, B64URL, 43),
    "slack xoxb-": lambda r: f"xoxb-{pick(r, string.digits, 12)}-{pick(r, string.digits, 13)}-{pick(r, ALNUM, 24)}",
    "slack xoxp-": lambda r: f"xoxp-{pick(r, string.digits, 12)}-{pick(r, string.digits, 12)}-{pick(r, HEX, 32)}",
    "google AIza": lambda r: "AIza" + pick(r, B64URL, 35),
    "npm_": lambda r: "npm_" + pick(r, ALNUM, 36),
    "pypi-": lambda r: "pypi-AgEIcHlwaS5vcmc" + pick(r, B64URL, 70),
    "aws key id": lambda r: "AKIA" + pick(r, string.ascii_uppercase + "234567", 16),
    "groq gsk_": lambda r: "gsk_" + pick(r, ALNUM, 52),
    "perplexity pplx-": lambda r: "pplx-" + pick(r, ALNUM, 48),
    "xai-": lambda r: "xai-" + pick(r, ALNUM, 80),
    "digitalocean dop_v1_": lambda r: "dop_v1_" + pick(r, HEX, 64),
    "vault hvs.": lambda r: "hvs." + pick(r, B64URL, 90),
    "twilio SK": lambda r: "SK" + pick(r, HEX, 32),
    "shopify shpat_": lambda r: "shpat_" + pick(r, HEX, 32),
    "telegram bot": lambda r: f"{pick(r, string.digits, 9)}:AA{pick(r, B64URL, 33)}",
    "jwt": lambda r: ".".join(
        [
            base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("="),
            base64.urlsafe_b64encode(f'{{"sub":"{pick(r, ALNUM, 12)}","iat":{r.randint(10**9, 2 * 10**9)}}}'.encode())
            .decode()
            .rstrip("="),
            pick(r, B64URL, 43),
        ]
    ),
    "random base64 key": lambda r: pick(r, B64, 4 * r.randint(8, 16)),
}

GLUE_WORDS = ("key", "token", "is", "x", "mykey", "tok", "secret", "the")


def _token_places(r: random.Random, s: str) -> str:
    return r.choice(
        [
            f"use {s} for it",
            f"{r.choice(GLUE_WORDS)}{s}",
            f"{s}{r.choice(['.', ',', ';', ')', ' and more'])}",
            f'{{"value": "{s}", "n": 1}}',
            f"export MY_VALUE='{s}'",
            f"`{s}`",
            f"(see {s})",
            f"the key is {s}.",
            f"line one\n{s}\nline three",
            f'{{\\"data\\": \\"{s}\\"}}',
        ]
    )


def _pem_body(r: random.Random, lines: int, width: int = 64) -> list[str]:
    return [pick(r, B64, width) for _ in range(lines)] + [pick(r, B64, r.randint(8, 60)) + "=="]


def pem(r: random.Random) -> Planted:
    kind = r.choice(["RSA ", "EC ", "OPENSSH ", "", "ENCRYPTED ", "DSA "])
    body = _pem_body(r, r.randint(2, 6))
    begin, end = f"-----BEGIN {kind}PRIVATE KEY-----", f"-----END {kind}PRIVATE KEY-----"
    layout = r.choice(["lines", "one line", "json", "unterminated", "quoted lines", "crlf"])
    if layout == "lines":
        text = "\n".join([begin, *body, end])
    elif layout == "one line":
        text = " ".join([begin, *body, end])
    elif layout == "json":
        text = '{"private_key": "' + "\\n".join([begin, *body, end]) + '\\n"}'
    elif layout == "unterminated":
        text = "\n".join([begin, *body]) + "\n\nthat is all I have."
    elif layout == "quoted lines":
        text = "key = (\n" + "\n".join(f'    "{line}\\n"' for line in [begin, *body, end]) + "\n)"
    else:
        text = "\r\n".join([begin, *body, end])
    return Planted(f"here is the key:\n{text}\nthanks", tuple(body))


def pgp(r: random.Random) -> Planted:
    body = _pem_body(r, r.randint(2, 5), 70)
    text = "\n".join(
        [
            "-----BEGIN PGP PRIVATE KEY BLOCK-----",
            "",
            *body,
            "=" + pick(r, B64, 4),
            "-----END PGP PRIVATE KEY BLOCK-----",
        ]
    )
    return Planted(text, tuple(body))


def url_password(r: random.Random) -> Planted:
    secret = pick(r, ALNUM + "-._~!$*", r.randint(8, 24)) + r.choice(string.digits)
    scheme = r.choice(["postgres", "postgresql", "mysql", "https", "redis", "mongodb+srv", "amqp", "ftp"])
    user = r.choice(["admin", "app", "", "deploy", "user.name"])
    return Planted(f"connect with {scheme}://{user}:{secret}@db.internal.example:5432/main?ssl=1", (secret,))


def authorization(r: random.Random) -> Planted:
    user, pw = pick(r, string.ascii_lowercase, 6), password(r)
    basic = base64.b64encode(f"{user}:{pw}".encode()).decode()
    bearer = pick(r, B64URL + ".", r.randint(20, 60)) + r.choice(string.digits)
    form = r.choice(["basic", "bearer", "curl", "json", "bare"])
    if form == "basic":
        return Planted(f"Authorization: Basic {basic}", (basic,))
    if form == "bearer":
        return Planted(f"authorization: Bearer {bearer}", (bearer,))
    if form == "curl":
        return Planted(f"curl -H 'Authorization: Bearer {bearer}' https://api.example.com/v1/x", (bearer,))
    if form == "json":
        return Planted(f'{{"headers": {{"Authorization": "Basic {basic}"}}}}', (basic,))
    return Planted(f"call it with Bearer {bearer} and see", (bearer,))


def password_prose(r: random.Random) -> Planted:
    pw = password(r)
    template = r.choice(
        [
            "my password is {}",
            "The password is {} btw",
            "the password for the staging db is {}.",
            "password: {}",
            "Password = {}",
            "my passphrase is {} and I keep forgetting it",
            "the api key is {}",
            "use --password {} when asked",
            "mysql -u root --password={} main",
        ]
    )
    return Planted(template.format(pw), (pw,))


def password_prose_abroad(r: random.Random) -> Planted:
    """The password prose in French, German and Spanish (a person's password: a digit or symbol in it)."""
    pw = password(r)
    template = r.choice(
        [
            "le mot de passe est {}",
            "mon mot de passe : {}",
            "Le mot de passe du wifi est {} (ne le partage pas)",
            "das Passwort ist {}",
            "Das Kennwort für den Server lautet {}.",
            "Kennwort: {}",
            "la contraseña es {}",
            "mi contraseña es {} y nunca la recuerdo",
            "La contrasena del router es {}",
        ]
    )
    return Planted(template.format(pw), (pw,))


def pin_prose(r: random.Random) -> Planted:
    pin = pick(r, string.digits, r.randint(4, 8))
    template = r.choice(
        [
            "my pin is {}",
            "My PIN is {} btw",
            "PIN: {}",
            "the PIN for the card was {}",
            "pin code is {}",
            "PIN-Code ist {}",
            "mon code PIN est {}",
            "mi PIN es {}",
        ]
    )
    return Planted(template.format(pin), (pin,))


def hex_private_key(r: random.Random) -> Planted:
    key = pick(r, HEX, 64)
    template = r.choice(
        [
            "private key: {}",
            "private key: 0x{}",
            "my eth private key is 0x{}",
            "PRIVATE KEY = {}",
            "wallet key: {}",
            "the signing key for the hot wallet is {}",
            "export PRIV_KEY={}",
            '{{"privateKey": "0x{}"}}',
        ]
    )
    return Planted(template.format(key), (key,))


def seed_phrase(r: random.Random) -> Planted:
    """A BIP-39 mnemonic of 12 to 24 words of its list, written down the ways people keep them."""
    words = [r.choice(BIP39) for _ in range(r.choice([12, 15, 18, 21, 24]))]
    if r.random() < 0.2:
        words[0] = words[0].capitalize()
    style = r.choice(["spaces", "numbered", "commas", "json", "lines", "upper"])
    if style == "numbered":
        phrase = " ".join(f"{i}. {w}" for i, w in enumerate(words, 1))
    elif style == "commas":
        phrase = ", ".join(words)
    elif style == "json":
        phrase = ", ".join(f'"{w}"' for w in words)
    elif style == "lines":
        phrase = "\n".join(words)
    else:
        phrase = " ".join(w.upper() if style == "upper" else w for w in words)
    template = r.choice(["{}", "my seed phrase is: {}", "recovery words: {}", "[{}]", "backup:\n{}\n(keep offline)"])
    secret = phrase.removeprefix("1. ") if style == "numbered" else phrase
    secret = secret.strip('"')
    return Planted(template.format(phrase), (secret,))


KEY_NAMES = (
    "api_key",
    "apiKey",
    "client_secret",
    "clientSecret",
    "access_token",
    "accessToken",
    "refresh_token",
    "password",
    "passwd",
    "DB_PASSWORD",
    "SECRET_KEY",
    "OPENAI_API_KEY",
    "auth_token",
    "x-api-key",
    "private_key",
    "aws_secret_access_key",
    "PGPASSWORD",
    "token",
    "secret",
)


def key_value(r: random.Random) -> Planted:
    name, value = r.choice(KEY_NAMES), password(r).replace("'", "x").replace('"', "x").replace("\\", "x")
    template = r.choice(
        [
            "{n}={v}",
            "export {n}={v}",
            'export {n}="{v}"',
            "{n}: {v}",
            '{n}: "{v}"',
            '{{"{n}": "{v}"}}',
            '{{"config": {{"{n}":"{v}"}}}}',
            "{{'{n}': '{v}'}}",
            'client = Client({n}="{v}")',
            "{n} = '{v}'",
            "--{n} {v}",
            "--{n}={v}",
            "<{n}>{v}</{n}>",
            '{{\\"{n}\\": \\"{v}\\"}}',
            "docker run -e {n}={v} image",
        ]
    )
    return Planted(template.format(n=name, v=value), (value,))


def aws_pair(r: random.Random) -> Planted:
    key_id = "AKIA" + pick(r, string.ascii_uppercase + "234567", 16)
    secret = pick(r, B64, 39) + r.choice(string.digits)
    template = r.choice(
        [
            "my AWS key is {k} and the secret is {s}",
            "aws_access_key_id = {k}\naws_secret_access_key = {s}",
            "keys: {k} / {s}",
            "AWS creds {k} {s} (rotate them)",
        ]
    )
    return Planted(template.format(k=key_id, s=secret), (key_id, secret))


def _from_token(make: Token) -> Maker:
    def planted(r: random.Random) -> Planted:
        secret = make(r)
        return Planted(_token_places(r, secret), (secret,))

    return planted


STATISTICAL = frozenset({"random base64 key"})
"""Families that only the entropy rule can name: it masks nearly all of them, not every one (a random
string can read as words), so tests check their rate on a fixed sample instead of every example."""

FAMILIES: dict[str, Maker] = {
    **{name: _from_token(make) for name, make in TOKENS.items()},
    "private key (PEM)": pem,
    "private key (PGP)": pgp,
    "password in URL": url_password,
    "Authorization header": authorization,
    "password in prose": password_prose,
    "password in prose (fr, de, es)": password_prose_abroad,
    "PIN in prose": pin_prose,
    "hex private key": hex_private_key,
    "BIP-39 seed phrase": seed_phrase,
    "value under a secret key": key_value,
    "AWS key id + secret": aws_pair,
}
