"""Status, assembled from the small reports each part of an agent's index gives about itself.

The database reports what it holds, the provider what embeds, the searcher how it reranks, the
index state how fresh it is; the daemon's actor adds its watcher and queue, QMD its own view. No
part knows another's fields. What this module knows is only the order status prints them in
(`memoryd status`, the `status` tool), so the output reads the same whichever part answers first.
"""

from __future__ import annotations

from collections.abc import Mapping

Report = Mapping[str, object]

ORDER: dict[str, tuple[str, ...]] = {
    "agent": (),
    "backend": (),
    "files": (),
    "chunks": (),
    "dirty": (),
    "degraded": (),
    "workspaceDir": (),
    "sessionsDir": (),
    "sessionRoots": (),
    "dbPath": (),
    "dbSizeBytes": (),
    "provider": (),
    "model": (),
    "requestedProvider": (),
    "sources": (),
    "extraPaths": (),
    "multimodal": ("enabled", "modalities", "maxFileBytes", "indexed", "skipped"),
    "sourceCounts": (),
    "cache": (),
    "fts": (),
    "vector": (),
    "fallback": (),
    "batch": (),
    "embedding": ("state", "provider", "model", "lastError", "filesWithoutVectors", "chunksWithoutVectors"),
    "searchMode": (),
    "rerank": (),
    "providerUnavailableReason": (),
    "readonlyRecovery": (),
    "corruptDatabaseMovedTo": (),
    "corruption": (),
    "integrityCheck": (),
    "skippedFiles": (),
    "malformedTranscriptLines": (),
    "transcriptFormats": (),
    "unrecognisedTranscripts": (),
    "retention": (),
    "progress": (),
    "indexedAt": (),
    "pending": (),
    "lastSync": (),
    "meta": (),
}
"""Status fields in print order; a block listed with names is one several parts fill (`embedding`,
`multimodal`).
A field not listed here goes last, in the order the reports give it."""


def assemble(*reports: Report) -> dict[str, object]:
    """One status from the parts' reports. A block several parts fill is merged; a field given twice is a bug."""
    merged: dict[str, object] = {}
    for report in reports:
        for key, value in report.items():
            shared = bool(ORDER.get(key)) and isinstance(value, Mapping)
            block = merged.get(key)
            if key not in merged:
                merged[key] = dict(value) if shared and isinstance(value, Mapping) else value
            elif shared and isinstance(block, dict) and isinstance(value, Mapping) and not block.keys() & value.keys():
                block.update(value)
            else:
                raise ValueError(f"status field {key!r} is reported twice")
    ordered = {key: _ordered(merged.pop(key), inner) for key, inner in ORDER.items() if key in merged}
    return ordered | merged


def _ordered(value: object, inner: tuple[str, ...]) -> object:
    if not inner or not isinstance(value, dict):
        return value
    return {k: value[k] for k in inner if k in value} | {k: v for k, v in value.items() if k not in inner}
