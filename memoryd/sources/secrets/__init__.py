"""Find and mask secrets in text that memoryd stores or shows: transcripts, transcript reads, logs.

`redact(text)` masks every secret found; `find_secrets(text)` says which kinds were found and where
(for callers that refuse text instead of masking it, and must say why without echoing the secret).
Markdown notes are the user's own text and are never passed through here.

The rules (see each module for the sources they are ported from):

* `tokens`: provider formats with a published prefix (GitHub, GitLab, Stripe, Anthropic, OpenAI, AWS
  key ids, Slack, Google, Hugging Face, SendGrid, npm, PyPI, JWTs, ...);
* `pem`: private key blocks (PEM, OpenSSH, PGP, PuTTY), also split, escaped or unterminated;
* `wallet`: hex private keys beside their name, BIP-39 seed phrases (12+ words of its list);
* `keyvalue`: values under secret-looking keys in env/JSON/YAML/dict/CLI forms, URL passwords,
  Authorization headers, "my password is ..." prose, the AWS secret key beside its key id;
* `phrases`: PINs ("my pin is 1234"), and the password prose in French, German and Spanish;
* `entropy`: long random tokens no other rule names.

A masked secret keeps at most its first 4 characters (`ghp_…`), and nothing when shorter than 18.
"""

from __future__ import annotations

from memoryd.sources.secrets.engine import MASK, Finding, Scanner, mask_token
from memoryd.sources.secrets.entropy import entropy_detector
from memoryd.sources.secrets.keyvalue import keyvalue_detectors
from memoryd.sources.secrets.pem import private_key_detector
from memoryd.sources.secrets.phrases import phrase_detectors
from memoryd.sources.secrets.tokens import token_detectors
from memoryd.sources.secrets.wallet import wallet_detectors

__all__ = ["MASK", "Finding", "find_secrets", "mask_token", "redact", "secret_kinds"]

_SCANNER = Scanner(
    [
        *token_detectors(0),
        private_key_detector(0),
        *wallet_detectors(5),
        *keyvalue_detectors(10),
        *phrase_detectors(11),
        entropy_detector(20),
    ]
)


def redact(text: str) -> str:
    """`text` with every secret masked (the rest left exactly as it was)."""
    return _SCANNER.redact(text)


def find_secrets(text: str) -> list[Finding]:
    """The secrets in `text`, left to right: kind and position, never the secret itself."""
    return _SCANNER.findings(text)


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret in `text`, each once, in order of first appearance (empty when none)."""
    return list(dict.fromkeys(f.kind for f in _SCANNER.findings(text)))
