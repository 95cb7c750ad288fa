"""QMD as an agent's search backend (spec §4.4 `memory.qmd`, §4.5), with the builtin index as fallback.

QMD (tobi/qmd) is a local markdown search CLI. memoryd runs it as a subprocess only: every call has a
deadline and capped output, because its vector and rerank paths can hang for minutes while fetching
models. `FallbackSearcher` serves an agent from QMD while it works and from the builtin index the
moment it does not, then retries QMD after a backoff.
"""
