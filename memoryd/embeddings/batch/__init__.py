"""Async batch embedding APIs (OpenAI, Voyage, Gemini): big job sets at a discount, with a way back.

A (re)index of many chunks can go through a provider's batch API instead of thousands of synchronous
requests: the texts are uploaded as one JSONL file (one request per text, its index as custom id), a
job is created and polled until it ends, and the output file is mapped back by custom id, since
outputs come in any order. More than 50,000 texts are split into several jobs, at most
`concurrency` of them in flight at once across every caller of one `BatchEmbedder`.

Batch mode is an optimisation, never a requirement (spec §3.12): after any failure the caller embeds
the same texts through the synchronous API (`embed_or_fallback`). A timeout is retried once and
counts as two failures if the retry fails too; two failures, or Gemini answering that it has no
asyncBatchEmbedContent, switch batch mode off for the embedder's lifetime; a success resets the count.
A job we stop waiting for is cancelled, so an abandoned job is not billed on top of the retry.

* `embedder`    — BatchEmbedder: jobs in flight, polling, timeouts, cancels, the failure state;
* `jobs`        — JobApi (one provider's wire format), JobStatus, OutputLine, shared JSON/JSONL reading;
* `openai_jobs` — OpenAI's and Voyage's Files + Batches APIs;
* `gemini_jobs` — Gemini's File API + asyncBatchEmbedContent.
"""

from memoryd.embeddings.batch.embedder import (
    BATCH_FAILURE_LIMIT,
    MAX_REQUESTS_PER_JOB,
    BatchEmbedder,
    collect_outputs,
    supports_batch,
)
from memoryd.embeddings.batch.gemini_jobs import GeminiJobs, gemini_output_line
from memoryd.embeddings.batch.jobs import UNAVAILABLE_MARKER, JobApi, JobStatus, OutputLine
from memoryd.embeddings.batch.openai_jobs import OpenAIJobs, VoyageJobs, openai_output_line

__all__ = [
    "BATCH_FAILURE_LIMIT",
    "MAX_REQUESTS_PER_JOB",
    "UNAVAILABLE_MARKER",
    "BatchEmbedder",
    "GeminiJobs",
    "JobApi",
    "JobStatus",
    "OpenAIJobs",
    "OutputLine",
    "VoyageJobs",
    "collect_outputs",
    "gemini_output_line",
    "openai_output_line",
    "supports_batch",
]
