"""Multimodal discovery (spec §3.1): media of the enabled kinds from extra paths only, with their kind."""

from __future__ import annotations

import os
from pathlib import Path

from memoryd.sources.discovery import list_memory_files
from tests.fakes.media_files import png, wav


def _put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_media_of_the_enabled_kinds_come_from_extra_paths_only(workspace: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    _put(vault / "cat.PNG", png())
    _put(vault / "trip" / "song.wav", wav())
    _put(vault / "clip.mp4", b"not a kind memoryd takes")
    _put(vault / "node_modules" / "icon.png", png())
    _put(workspace / "memory" / "photo.png", png())  # memory/ never yields media (as OpenClaw)
    files = list_memory_files(workspace, [vault], media=("image", "audio"))
    media = {f.path: f.modality for f in files if f.modality}
    assert media == {"../vault/cat.PNG": "image", "../vault/trip/song.wav": "audio"}
    assert all(f.modality is None for f in files if f.path.endswith(".md"))


def test_only_the_enabled_kinds_and_none_when_off(workspace: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    _put(vault / "cat.png", png())
    _put(vault / "song.wav", wav())
    assert [f.path for f in list_memory_files(workspace, [vault], media=("audio",)) if f.modality] == [
        "../vault/song.wav"
    ]
    assert not [f for f in list_memory_files(workspace, [vault]) if f.modality]


def test_an_extra_path_may_be_one_media_file_but_not_a_symlink_to_one(workspace: Path, tmp_path: Path) -> None:
    photo = _put(tmp_path / "photo.jpg", png())
    os.symlink(photo, tmp_path / "link.jpg")
    files = list_memory_files(workspace, [photo, tmp_path / "link.jpg"], media=("image",))
    assert [(f.path, f.modality) for f in files if f.modality] == [("../photo.jpg", "image")]
