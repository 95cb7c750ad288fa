"""memoryd: long-term memory search for AI agents."""

__version__ = "0.1.0"
