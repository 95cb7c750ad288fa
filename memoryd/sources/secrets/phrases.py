"""Secrets said in words beside the English password prose of `keyvalue`: PINs, and passwords in French,
German and Spanish.

* A PIN: "my pin is 1234", "PIN: 4821", "the PIN for the card was 0000", "PIN-Code ist 1234",
  "mon code PIN est 1234", "mi PIN es 1234" — 4 to 8 digits after the word and a verb or a colon.
  Fewer digits ("pin 3 is high", "set pin 13") are wiring, not secrets.
* A password in prose: "le mot de passe est …", "mon mot de passe : …", "das Passwort ist …",
  "das Kennwort für den Server lautet …", "la contraseña es …", "mi contraseña del wifi es …". The
  value is masked when it is made by a person for a machine: a digit, a symbol or a capital inside it
  ("Tr0ub4dor", "hunter2!", "soLeil"); a value of letters alone reads as a word of the sentence ("das
  Passwort ist falsch", "le mot de passe est incorrect", "la contraseña es segura") and is left, with
  no stop-word list of three languages to keep up.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memoryd.sources.secrets.engine import Detector, Hit, Text
from memoryd.sources.secrets.keyvalue import is_placeholder

_F = re.IGNORECASE
_VERB = r"(?:is|was|ist|war|lautet|lautete|est|était|sera|es|era|será)(?:[ \t]+(?:now|jetzt|maintenant|ahora))?"
_SAID = rf"(?:[ \t]+{_VERB}[ \t]*:?[ \t]+|[ \t]*[:=][ \t]*)"
_FOR = (
    r"(?:[ \t]+(?:for|of|to|on|für|von|vom|des|der|zum|zur|pour|du|de(?:[ \t]+la)?|d'|para|del)"
    r"[ \t]*[^\s:=.,;!?]{1,30}(?:[ \t]+[^\s:=.,;!?]{1,30}){0,2}?)?"
)

_PIN = re.compile(
    rf"(?<![A-Za-z0-9])pin(?:[ \t\-]?(?:code|number|nummer|no\.?))?{_FOR}{_SAID}"
    r"[\"'`“„«]?(?P<v>\d{4,8})(?!\d)",
    _F,
)

_WORDS = r"(?:mot[ \t]+de[ \t]+passe|passwort|kennwort|contrase(?:ñ|n)a)"
_PASSWORD = re.compile(
    rf"(?<![^\W\d_])(?P<word>{_WORDS})s?(?![^\W\d_]){_FOR}{_SAID}[\"'`“„«]?(?P<v>[^\s\"'`”“»]{{3,}})", _F
)
_TRAILING = ".,;:!?)»”"
_BRACKETED = re.compile(r"<[^<>\n]{1,60}>|\[[^\[\]\n]{1,60}\]|\{[^{}\n]{1,60}\}")


def _person_made(value: str) -> bool:
    """Made for a machine rather than a word of the sentence: a digit, a symbol, or a capital past the first."""
    return any(not c.isalpha() for c in value) or any(c.isupper() for c in value[1:])


def _find_pins(scan: Text) -> Iterator[Hit]:
    for match in _PIN.finditer(scan.text):
        yield match.start("v"), match.end("v"), "pin"


def _find_passwords(scan: Text) -> Iterator[Hit]:
    text = scan.text
    for match in _PASSWORD.finditer(text):
        start, end = match.span("v")
        while end > start and text[end - 1] in _TRAILING:
            end -= 1
        value = text[start:end]
        bracketed = _BRACKETED.match(text, start)
        if (bracketed is not None and bracketed.end() >= end) or is_placeholder(value):
            continue  # `<votre mot de passe>`, `[password]`, `{pw}` stand for one; `{P$k<@}|s{9d…` is one
        if len(value) >= 3 and _person_made(value):
            yield start, end, "password-in-prose"


def phrase_detectors(rank: int) -> list[Detector]:
    return [
        Detector(("pin",), _find_pins, rank),
        Detector(("mot de passe", "passwort", "kennwort", "contraseña", "contrasena"), _find_passwords, rank),
    ]
