"""Rendering the service files from the checked-in templates (pure: no file is written here).

The templates (`systemd/`, `launchd/` beside the package) get the absolute path of this environment's
`memoryd` entry point, quoted as each format needs; every rendered file carries a hash of its own
content (`stamp`), so a file the user edited is recognised (`is_unedited`) and never overwritten.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from xml.sax.saxutils import escape

import memoryd
from memoryd.errors import DaemonError

_MANAGED = "@MANAGED@"
_MARKER = re.compile(r"memoryd-managed sha256=([0-9a-f]{64})")
_PLACEHOLDER = re.compile(r"@[A-Z_]+@")
_SYSTEMD_UNSAFE = "\"'\\"


class ServiceInstallError(DaemonError):
    """The service could not be installed or removed as asked; nothing was changed."""


def template_dir() -> Path:
    """The repository root beside the package: the templates ship with the code that fills them."""
    return Path(memoryd.__file__).resolve().parent.parent


def read_template(relative: str) -> str:
    path = template_dir() / relative
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ServiceInstallError(
            f"cannot read the template {path}: {exc.strerror or exc} (install memoryd from its source tree)"
        ) from exc


def systemd_exec_word(path: Path) -> str:
    """`path` as the program word of an ExecStart= line: `%` escaped, quoted when it holds spaces.

    systemd takes the program path literally (no `$` expansion) but refuses one holding quotes or
    backslashes outright, so such a path is refused here, before anything is written.
    """
    text = str(path)
    _check_path_text(text)
    if any(char in text for char in _SYSTEMD_UNSAFE):
        raise ServiceInstallError(f"systemd cannot start a program whose path holds quotes or backslashes: {text}")
    escaped = text.replace("%", "%%")
    return f'"{escaped}"' if " " in escaped else escaped


def render_systemd_unit(template: str, executable: Path) -> str:
    return stamp(_fill(template, {"@MEMORYD@": systemd_exec_word(executable)}))


def render_systemd_socket(template: str) -> str:
    return stamp(_fill(template, {}))


def render_launchd_plist(template: str, executable: Path, log_dir: Path) -> str:
    for path in (executable, log_dir):
        _check_path_text(str(path))
    return stamp(_fill(template, {"@MEMORYD@": escape(str(executable)), "@LOG_DIR@": escape(str(log_dir))}))


def stamp(text: str) -> str:
    """Replace the one `@MANAGED@` token with a hash of the text as it stands with the token."""
    if text.count(_MANAGED) != 1:
        raise ServiceInstallError(f"a template must hold {_MANAGED} exactly once")
    return text.replace(_MANAGED, f"memoryd-managed sha256={_digest(text)}")


def is_unedited(text: str) -> bool:
    """True when `text` is a file this installer rendered and nobody has changed since."""
    markers = list(_MARKER.finditer(text))
    if len(markers) != 1:
        return False
    marker = markers[0]
    return _digest(text[: marker.start()] + _MANAGED + text[marker.end() :]) == marker.group(1)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _fill(template: str, values: Mapping[str, str]) -> str:
    """Fill every placeholder but `@MANAGED@`; a placeholder nothing fills means a broken template."""
    unfilled = sorted(set(_PLACEHOLDER.findall(template)) - {_MANAGED} - set(values))
    if unfilled:
        raise ServiceInstallError(f"the template has placeholders nothing fills: {', '.join(unfilled)}")
    return _PLACEHOLDER.sub(lambda match: values.get(match.group(0), match.group(0)), template)


def _check_path_text(text: str) -> None:
    """Refuse what neither a unit file nor XML can hold: control characters, undecodable bytes."""
    if not all(_holdable(ord(char)) for char in text):
        raise ServiceInstallError(f"refusing a path that a service file cannot hold: {text!r}")


def _holdable(code: int) -> bool:
    return code >= 32 and code != 127 and not 0xD800 <= code <= 0xDFFF and code not in (0xFFFE, 0xFFFF)
