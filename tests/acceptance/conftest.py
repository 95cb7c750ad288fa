"""The acceptance suite's fixtures: a user's home whose memoryd processes are all stopped afterwards."""

from tests.acceptance.host import user

__all__ = ["user"]
