"""Mask secrets in transcript text before it is indexed or read back (spec §3.6 "Redaction").

The detection lives in `memoryd.sources.secrets`; this module is the stable entry point the
transcript readers use. `JS_WHITESPACE` is JavaScript's `\\s`, which the transcript normaliser
shares with OpenClaw.
"""

from __future__ import annotations

from memoryd.sources.secrets import MASK, Finding, find_secrets, mask_token, redact, secret_kinds

__all__ = ["JS_WHITESPACE", "MASK", "Finding", "find_secrets", "mask_token", "redact", "secret_kinds"]

# The characters of JavaScript's `\s` (ECMAScript WhiteSpace and LineTerminator).
JS_WHITESPACE = "".join(
    ["\t\n\v\f\r \u00a0\u1680", *map(chr, range(0x2000, 0x200B)), "\u2028\u2029\u202f\u205f\u3000\ufeff"]
)
