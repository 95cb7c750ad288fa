"""The local ONNX provider, on the real all-MiniLM-L6-v2 weights from the installed model packages."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.embeddings.base import EmbeddingProvider
from memoryd.embeddings.local import LoadState, LocalEmbeddingProvider
from memoryd.embeddings.models import ModelSource, locate_model
from memoryd.embeddings.onnx_encoder import plan_runs
from memoryd.embeddings.quantize import is_dynamically_quantized, quantized_model
from memoryd.errors import EmbeddingError
from tests.embeddings.model_hub import (
    PACKAGED_ONNX,
    PACKAGED_TOKENIZER,
    Hub,
    hub_files_for,
    hub_only_spec,
    packaged_path,
    serve,
)

NOTES = [
    "Our golden retriever Biscuit sleeps at the foot of the bed.",
    "The quarterly budget review moved to Thursday afternoon.",
    "Switched the editor font to JetBrains Mono last week.",
    "Renew the car insurance before the end of March.",
    "The sourdough starter needs feeding twice a day.",
    "Flight to Lisbon leaves at 7:40 from gate 12.",
    "Grandma's birthday is on the fifth of June.",
    "Backups of the photo library run every Sunday night.",
]
PET_QUESTION = "what pet do I have"
MIXED = [
    "short",
    "A medium sized sentence about configuring the memory search provider for an agent.",
    " ".join(["The daemon indexes markdown notes and session transcripts into SQLite."] * 40),
    "Ünïcödé, emoji 🐕 and 中文 text are tokenised too.",
    "short",
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def quantized_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
async def quantized(quantized_cache: Path) -> AsyncIterator[LocalEmbeddingProvider]:
    provider = LocalEmbeddingProvider(quantized_cache, quantize=True, allow_download=False)
    assert await provider.load() is LoadState.READY, provider.error
    yield provider
    await provider.aclose()


@pytest.fixture(scope="module")
async def as_stored(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalEmbeddingProvider]:
    provider = LocalEmbeddingProvider(tmp_path_factory.mktemp("models"), quantize=False, allow_download=False)
    assert await provider.load() is LoadState.READY, provider.error
    yield provider
    await provider.aclose()


def state_of(provider: LocalEmbeddingProvider) -> LoadState:
    """Read afresh: mypy would otherwise keep an earlier narrowing of the property across awaits."""
    return provider.state


@pytest.fixture(params=["quantized", "as_stored"])
def provider(request: pytest.FixtureRequest) -> LocalEmbeddingProvider:
    loaded: LocalEmbeddingProvider = request.getfixturevalue(request.param)
    return loaded


@pytest.mark.anyio
async def test_a_question_finds_the_note_that_answers_it_without_sharing_a_word(
    provider: LocalEmbeddingProvider,
) -> None:
    words = set(re.findall(r"\w+", PET_QUESTION.lower()))
    assert not any(words & set(re.findall(r"\w+", note.lower())) for note in NOTES)
    notes = await provider.embed_documents(NOTES)
    query = await provider.embed_query(PET_QUESTION)
    ranking = np.argsort(-(notes @ query[0]))
    assert NOTES[int(ranking[0])].startswith("Our golden retriever")


@pytest.mark.anyio
async def test_rows_are_unit_length_float32(provider: LocalEmbeddingProvider) -> None:
    vectors = await provider.embed_documents(MIXED)
    assert vectors.shape == (len(MIXED), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.anyio
async def test_a_text_gets_the_same_vector_whatever_it_is_embedded_with(provider: LocalEmbeddingProvider) -> None:
    alone = await provider.embed_query(NOTES[0])
    first = await provider.embed_documents([NOTES[0], *MIXED])
    last = await provider.embed_documents([*MIXED[:3], NOTES[0]])
    np.testing.assert_allclose(first[0], alone[0], atol=VECTOR_ROUNDING)
    np.testing.assert_allclose(last[-1], alone[0], atol=VECTOR_ROUNDING)


@pytest.mark.anyio
async def test_a_batch_equals_embedding_one_text_at_a_time(provider: LocalEmbeddingProvider) -> None:
    texts = MIXED + NOTES
    batch = await provider.embed_documents(texts)
    singles = np.concatenate([await provider.embed_query(t) for t in texts])
    assert np.abs(batch - singles).max() <= 1e-4


@pytest.mark.anyio
async def test_blank_texts_get_zero_rows_and_leave_the_others_alone(provider: LocalEmbeddingProvider) -> None:
    vectors = await provider.embed_documents(["", NOTES[0], "   \n"])
    assert not vectors[0].any() and not vectors[2].any()
    np.testing.assert_allclose(vectors[1], (await provider.embed_query(NOTES[0]))[0], atol=VECTOR_ROUNDING)
    assert not (await provider.embed_query("")).any()
    assert (await provider.embed_documents([])).shape == (0, 384)


@pytest.mark.anyio
async def test_the_model_reads_256_tokens_not_the_tokenizer_files_128(provider: LocalEmbeddingProvider) -> None:
    filler = "note " * 150
    dog, tax = filler + "a golden retriever puppy", filler + "the tax return deadline"
    vectors = await provider.embed_documents([dog, tax])
    assert np.abs(vectors[0] - vectors[1]).max() > 1e-3
    long_filler = "note " * 300
    past_the_end = await provider.embed_documents([long_filler + "a golden retriever", long_filler + "a tax return"])
    np.testing.assert_allclose(past_the_end[0], past_the_end[1], atol=VECTOR_ROUNDING)
    assert provider.max_input_tokens == 256


QUESTIONS = {
    # One question per note, none sharing a word with the note it asks about (a paraphrase, as people ask).
    PET_QUESTION: 0,
    "when is the meeting about money and spending": 1,
    "which typeface does my code editor use": 2,
    "vehicle policy expiry": 3,
    "how often must the bread culture be fed": 4,
    "what time is my plane to Portugal": 5,
    "when does my grandmother celebrate": 6,
    "when are my pictures copied for safety": 7,
}
QUANTISED_SCORE_DRIFT = 0.08
"""How far int8 may move a question-note cosine: three times the 0.024 measured on an AMD EPYC with AVX2
only (no VNNI: onnxruntime's least precise int8 kernels on x86-64). Each answer leads its runner-up by 0.16 or more."""
VECTOR_ROUNDING = 1e-5
"""Float rounding between runs of different shapes. Measured 0 here, but kernels differ between CPUs; a
neighbour that coloured a vector (what these tests catch) moves it by 1e-3 or more."""


@pytest.mark.anyio
async def test_the_quantised_model_finds_what_the_stored_one_finds(
    quantized: LocalEmbeddingProvider, as_stored: LocalEmbeddingProvider
) -> None:
    # What matters is search, not the last digit of a cosine: int8 kernels differ between CPUs
    # (min vector cosine to the stored model 0.9899 on an AVX2-only EPYC, above 0.99 elsewhere).
    notes = {"int8": await quantized.embed_documents(NOTES), "stored": await as_stored.embed_documents(NOTES)}
    for question, answer in QUESTIONS.items():
        scores = {
            "int8": notes["int8"] @ (await quantized.embed_query(question))[0],
            "stored": notes["stored"] @ (await as_stored.embed_query(question))[0],
        }
        for name, row in scores.items():
            assert int(np.argmax(row)) == answer, (name, question, row)
        assert np.abs(scores["int8"] - scores["stored"]).max() <= QUANTISED_SCORE_DRIFT, question
    texts = NOTES + MIXED[:4]
    cosines = np.sum(await quantized.embed_documents(texts) * await as_stored.embed_documents(texts), axis=1)
    assert cosines.min() >= 0.97  # the same vector space: 0.9899 at worst measured; different texts score < 0.22


@pytest.mark.anyio
async def test_a_query_is_embedded_beside_a_batch_of_documents_instead_of_after_it(
    quantized: LocalEmbeddingProvider,
) -> None:
    alone = await quantized.embed_query(PET_QUESTION)
    long_documents = [f"{i} " + " ".join(NOTES) * 3 for i in range(24)]  # each fills the model's 256 tokens
    finished: list[str] = []

    async def documents() -> None:
        await quantized.embed_documents(long_documents)
        finished.append("documents")

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            tg.start_soon(documents)
            await anyio.wait_all_tasks_blocked()  # the batch is in its worker thread
            query = await quantized.embed_query(PET_QUESTION)
            finished.append("query")
    assert finished == ["query", "documents"]
    np.testing.assert_allclose(query, alone, atol=1e-5)


@pytest.mark.anyio
async def test_after_a_query_the_models_threads_leave_the_cores_to_the_search_legs(
    provider: LocalEmbeddingProvider,
) -> None:
    await provider.embed_documents(NOTES)  # the session's threads have been busy
    await provider.embed_query(PET_QUESTION)
    cpu = time.process_time()
    await anyio.sleep(0.1)  # the idle window being measured, not a synchronisation
    # Spinning intra-op threads would burn ~30 ms of it; this process has nothing else to run.
    assert time.process_time() - cpu < 0.005


def test_each_provider_names_its_vector_space(
    quantized: LocalEmbeddingProvider, as_stored: LocalEmbeddingProvider
) -> None:
    assert isinstance(quantized, EmbeddingProvider)
    assert (quantized.id, quantized.model, as_stored.model) == ("local", "all-MiniLM-L6-v2-int8", "all-MiniLM-L6-v2")
    assert quantized.fingerprint.key_data == {"provider": "local", "model": "all-MiniLM-L6-v2-int8"}
    assert quantized.fingerprint.provider_key != as_stored.fingerprint.provider_key
    assert quantized.source is ModelSource.PACKAGE


def test_the_quantised_model_is_written_once_into_the_cache(
    quantized: LocalEmbeddingProvider, quantized_cache: Path, tmp_path: Path
) -> None:
    derived = list((quantized_cache / "all-MiniLM-L6-v2" / "derived").iterdir())
    assert len(derived) == 1 and derived[0].suffix == ".onnx"
    files = locate_model(None, quantized_cache, allow_download=False)
    assert is_dynamically_quantized(derived[0]) and not is_dynamically_quantized(files.onnx)
    ops = {node.op_type for node in onnx.load(str(derived[0]), load_external_data=False).graph.node}
    assert "IsNaN" not in ops and "Softmax" in ops  # the attention's NaN guards dropped (quantize.drop_nan_guards)
    stamp = derived[0].stat().st_mtime_ns
    assert quantized_model(files, quantized_cache) == derived[0]
    assert derived[0].stat().st_mtime_ns == stamp
    (tmp_path / "model.onnx").symlink_to(derived[0])
    (tmp_path / "tokenizer.json").symlink_to(files.tokenizer)
    already = locate_model(tmp_path / "model.onnx", tmp_path / "cache")
    assert quantized_model(already, tmp_path / "cache") == tmp_path / "model.onnx"
    assert not (tmp_path / "cache").exists()


@pytest.mark.anyio
async def test_state_goes_from_idle_to_loading_to_ready_while_the_model_downloads(tmp_path: Path) -> None:
    spec = hub_only_spec()
    hub = Hub(files=hub_files_for(spec))
    hub.release.clear()
    with serve(hub):
        provider = LocalEmbeddingProvider(tmp_path, spec=spec, quantize=False, hub_url=hub.url)
        assert state_of(provider) is LoadState.IDLE
        results: list[np.ndarray] = []
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(provider.load)

                async def embed() -> None:
                    results.append(await provider.embed_query(PET_QUESTION))

                tg.start_soon(embed)
                await anyio.to_thread.run_sync(hub.request_arrived.wait)
                assert state_of(provider) is LoadState.LOADING
                assert not results
                hub.release.set()
        assert state_of(provider) is LoadState.READY and provider.source is ModelSource.DOWNLOAD
        assert results[0].shape == (1, 384)
        await provider.aclose()


@pytest.mark.anyio
async def test_cancelling_a_load_mid_download_returns_at_once_and_a_later_load_works(tmp_path: Path) -> None:
    spec = hub_only_spec()
    hub = Hub(files=hub_files_for(spec))
    hub.release.clear()
    with serve(hub):
        provider = LocalEmbeddingProvider(tmp_path, spec=spec, quantize=False, hub_url=hub.url)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(provider.load)
                await anyio.to_thread.run_sync(hub.request_arrived.wait)
                tg.cancel_scope.cancel()
        assert state_of(provider) is LoadState.IDLE and provider.error is None
        hub.release.set()
        with anyio.fail_after(30):
            assert await provider.load() is LoadState.READY
        await provider.aclose()


@pytest.mark.anyio
async def test_a_closed_provider_loads_again_when_used(tmp_path: Path) -> None:
    provider = LocalEmbeddingProvider(tmp_path, quantize=False, allow_download=False)
    first = await provider.embed_query(NOTES[0])
    await provider.aclose()
    assert state_of(provider) is LoadState.IDLE
    np.testing.assert_allclose(await provider.embed_query(NOTES[0]), first, atol=VECTOR_ROUNDING)
    assert state_of(provider) is LoadState.READY
    await provider.aclose()


@pytest.mark.anyio
async def test_a_missing_model_is_reported_and_can_be_fixed_without_a_restart(tmp_path: Path) -> None:
    model_dir = tmp_path / "mine"
    model_dir.mkdir()
    provider = LocalEmbeddingProvider(tmp_path / "cache", model_path=model_dir, quantize=False)
    assert await provider.load() is LoadState.ERROR
    assert "put exactly one model there" in str(provider.error)
    with pytest.raises(EmbeddingError, match="put exactly one model there"):
        await provider.embed_query(PET_QUESTION)
    (model_dir / "model.onnx").symlink_to(packaged_path(PACKAGED_ONNX))
    (model_dir / "tokenizer.json").symlink_to(packaged_path(PACKAGED_TOKENIZER))
    assert await provider.load() is LoadState.READY and provider.error is None
    assert (await provider.embed_query(PET_QUESTION)).shape == (1, 384)
    await provider.aclose()


def test_the_rewrite_runs_in_a_child_so_the_loading_process_never_holds_the_graph(tmp_path: Path) -> None:
    probe = (
        "import sys; from pathlib import Path\n"
        "from memoryd.embeddings.models import locate_model\n"
        "from memoryd.embeddings.quantize import quantized_model\n"
        "cache = Path(sys.argv[1])\n"
        "print(quantized_model(locate_model(None, cache, allow_download=False), cache))\n"
        "print('onnx' in sys.modules, 'onnxruntime.quantization' in sys.modules)\n"
    )
    cache = tmp_path / "cache"
    files = locate_model(None, cache, allow_download=False)
    older = cache / "all-MiniLM-L6-v2" / "derived" / f"{(files.onnx_sha256 or '')[:16]}-dynint8pc-v0.onnx"
    older.parent.mkdir(parents=True)
    older.write_bytes(b"an earlier recipe's graph")
    done = subprocess.run([sys.executable, "-c", probe, str(cache)], capture_output=True, text=True, check=True)
    written, imported = done.stdout.splitlines()[-2:]  # after the log line
    assert Path(written).is_file() and Path(written).parent == cache / "all-MiniLM-L6-v2" / "derived"
    assert is_dynamically_quantized(Path(written))
    assert not older.exists()  # the graph of an earlier recipe is removed once the new one is written
    assert imported == "False False"  # onnx and the quantiser lived and died in the child


def test_a_child_that_dies_becomes_an_embedding_error_naming_the_model(tmp_path: Path) -> None:
    files = locate_model(None, tmp_path / "cache", allow_download=False)
    target = tmp_path / "not-a-dir"
    target.write_text("a file where the cache's model folder should be")
    with pytest.raises(EmbeddingError, match=r"cannot quantise the local model .*model\.onnx"):
        quantized_model(files, target)
    assert target.read_text().startswith("a file")


@pytest.mark.anyio
@pytest.mark.parametrize("quantize", [True, False])
async def test_a_corrupt_model_file_gives_an_error_that_says_to_replace_it(tmp_path: Path, quantize: bool) -> None:
    model_dir = tmp_path / "mine"
    model_dir.mkdir()
    (model_dir / "model.onnx").write_bytes(packaged_path(PACKAGED_ONNX).read_bytes()[:50_000])
    (model_dir / "tokenizer.json").symlink_to(packaged_path(PACKAGED_TOKENIZER))
    provider = LocalEmbeddingProvider(tmp_path / "cache", model_path=model_dir, quantize=quantize)
    assert await provider.load() is LoadState.ERROR
    with pytest.raises(EmbeddingError, match=r"model\.onnx.*replace"):
        await provider.embed_documents(NOTES)


@pytest.mark.anyio
async def test_a_corrupt_tokenizer_gives_an_error_that_says_to_replace_it(tmp_path: Path) -> None:
    model_dir = tmp_path / "mine"
    model_dir.mkdir()
    (model_dir / "model.onnx").symlink_to(packaged_path(PACKAGED_ONNX))
    (model_dir / "tokenizer.json").write_text("{not json")
    provider = LocalEmbeddingProvider(tmp_path / "cache", model_path=model_dir, quantize=False)
    assert await provider.load() is LoadState.ERROR
    assert "tokenizer.json cannot be read" in str(provider.error)
    assert "replace it with the model's tokenizer.json" in str(provider.error)


@given(
    lengths=st.lists(st.integers(min_value=1, max_value=300), max_size=40),
    budget=st.integers(min_value=1, max_value=2048),
    one_per_run=st.booleans(),
)
def test_runs_cover_every_text_once_shortest_first_within_the_token_budget(
    lengths: list[int], budget: int, one_per_run: bool
) -> None:
    runs = plan_runs(lengths, budget, one_text_per_run=one_per_run)
    flat = [k for run in runs for k in run]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[k] for k in flat] == sorted(lengths)
    for run in runs:
        assert len(run) == 1 or len(run) * max(lengths[k] for k in run) <= budget
        assert not one_per_run or len(run) == 1


@pytest.fixture(scope="module")
async def windowed(quantized_cache: Path, quantized: LocalEmbeddingProvider) -> AsyncIterator[LocalEmbeddingProvider]:
    del quantized  # loaded first: the quantised model is then in the cache
    provider = LocalEmbeddingProvider(quantized_cache, quantize=True, allow_download=False, windows=True)
    assert await provider.load() is LoadState.READY, provider.error
    yield provider
    await provider.aclose()


LONG_HEAD = " ".join(["The daemon indexes markdown notes and session transcripts into SQLite."] * 30)


@pytest.mark.anyio
async def test_windows_read_what_truncation_drops(
    windowed: LocalEmbeddingProvider, quantized: LocalEmbeddingProvider
) -> None:
    tails = [f"{LONG_HEAD} Finally, the cat chased a red laser dot.", f"{LONG_HEAD} Finally, the tax return is due."]
    truncated = await quantized.embed_documents(tails)
    whole = await windowed.embed_documents(tails)
    assert float(truncated[0] @ truncated[1]) > 0.9999  # the model never read past the head
    assert float(whole[0] @ whole[1]) < 0.999  # the windows did
    assert np.allclose(np.linalg.norm(whole, axis=1), 1.0, atol=1e-5)


@pytest.mark.anyio
async def test_windows_leave_short_texts_and_queries_as_they_were(
    windowed: LocalEmbeddingProvider, quantized: LocalEmbeddingProvider
) -> None:
    assert np.allclose(await windowed.embed_documents(NOTES), await quantized.embed_documents(NOTES), atol=1e-6)
    assert np.allclose(await windowed.embed_query(LONG_HEAD), await quantized.embed_query(LONG_HEAD), atol=1e-6)


def test_windowed_vectors_have_their_own_fingerprint(tmp_path: Path) -> None:
    plain = LocalEmbeddingProvider(tmp_path, quantize=True).fingerprint
    whole = LocalEmbeddingProvider(tmp_path, quantize=True, windows=True).fingerprint
    assert (plain.provider, plain.model) == (whole.provider, whole.model)
    assert plain.provider_key != whole.provider_key  # a rebuild, and no cache entry shared
