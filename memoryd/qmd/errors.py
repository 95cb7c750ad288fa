"""Errors of the QMD backend; all of them make `FallbackSearcher` serve from the builtin index.

MemorydError
└── QmdError                 a QMD call failed
    ├── QmdUnavailableError    the binary is missing, not executable, or does not run
    ├── QmdTimeoutError        a call passed its deadline (the process group was killed)
    ├── QmdCommandError        a non-zero exit; `stderr` and `returncode` kept for classifying
    └── QmdOutputError         output that is not what the command promises (bad JSON, too long)
"""

from __future__ import annotations

from memoryd.errors import MemorydError


class QmdError(MemorydError):
    """A QMD call failed."""

    @property
    def detail(self) -> str:
        """Everything known about the failure, for classifying it (the message alone is a summary)."""
        return str(self)


class QmdUnavailableError(QmdError):
    """The QMD command cannot be run at all."""


class QmdTimeoutError(QmdError):
    """A QMD call ran past its deadline and was killed."""


class QmdCommandError(QmdError):
    """QMD exited with a non-zero status."""

    def __init__(self, message: str, *, returncode: int, stderr: str, stdout: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout

    @property
    def detail(self) -> str:
        return f"{self}\n{self.stderr}\n{self.stdout}"


class QmdOutputError(QmdError):
    """QMD's output could not be read as the command promises."""
