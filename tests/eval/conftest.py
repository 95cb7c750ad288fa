"""A tiny conversation in LoCoMo's layout, written for these tests (not LoCoMo data)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest


def tiny_sample(sample_id: str = "conv-t1") -> dict[str, Any]:
    """Two sessions of five turns; five questions: single-hop, multi-evidence, a broken id, repairs, none."""
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Alice", "dia_id": "D1:1", "text": "Hi Bob! I adopted a greyhound named Comet."},
                {
                    "speaker": "Bob",
                    "dia_id": "D1:2",
                    "text": "Congrats Alice! I started learning the cello in March.",
                    "img_url": ["https://example.invalid/cello.jpg"],
                    "blip_caption": "a photo of a cello leaning on a chair",
                },
                {"speaker": "Alice", "dia_id": "D1:3", "text": "Comet loves running on the beach at dawn."},
                {"speaker": "Bob", "dia_id": "D1:4", "text": "My sister Petra moved to Lisbon for work."},
                {"speaker": "Alice", "dia_id": "D1:5", "text": "I am painting a mural of lighthouses."},
            ],
            "session_2_date_time": "10:04 am on 19 June, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "Hey Alice, I played my first cello recital!"},
                {"speaker": "Alice", "dia_id": "D2:2", "text": "Amazing! Comet and I ran a charity 5k."},
                {"speaker": "Bob", "dia_id": "D2:3", "text": "Petra sent me custard tarts from Lisbon."},
                {"speaker": "Alice", "dia_id": "D2:4", "text": "The lighthouse mural hangs in the library."},
                {"speaker": "Bob", "dia_id": "D2:5", "text": "Let's celebrate with a picnic soon."},
            ],
            # LoCoMo lists dates of sessions that have no turns; they are ignored.
            "session_3_date_time": "9:00 am on 1 July, 2023",
        },
        "qa": [
            {
                "question": "What is the name of Alice's greyhound?",
                "answer": "Comet",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where does Bob's sister Petra live, and what did she send him?",
                "answer": "Lisbon; custard tarts",
                "evidence": ["D1:4", "D2:3"],
                "category": 1,
            },
            {
                "question": "Where does Comet love running?",
                "answer": "on the beach",
                "evidence": ["D:1:3"],
                "category": 4,
            },
            {
                "question": "What did Bob paint for the library?",
                "adversarial_answer": "a lighthouse mural",
                "evidence": ["D1:5; D2:04", "D", "D7:2"],
                "category": 5,
            },
            {
                "question": "Would Alice enjoy a beach holiday?",
                "answer": "Likely yes",
                "evidence": [],
                "category": 3,
            },
        ],
    }


def write_dataset(path: Path, samples: list[dict[str, Any]]) -> Path:
    path.write_bytes(orjson.dumps(samples))
    return path


@pytest.fixture
def tiny_path(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "tiny-locomo.json", [tiny_sample()])


@pytest.fixture
def two_conversations_path(tmp_path: Path) -> Path:
    second = copy.deepcopy(tiny_sample("conv-t2"))
    return write_dataset(tmp_path / "two-locomo.json", [tiny_sample(), second])


TWO_ANSWER_FAQ = (
    "# FAQ\n\n## How do I pick a colour?\n\nRun `tool --colour red` to make the output red.\n"
    "\n## Where is the config?\n\nThe settings file lives in ~/.config/tool/settings.toml.\n"
)


@pytest.fixture
def faq_dir(tmp_path: Path) -> Path:
    """A directory holding one two-question FAQ page (written for these tests)."""
    notes = tmp_path / "faq"
    notes.mkdir()
    (notes / "tool.md").write_text(TWO_ANSWER_FAQ, encoding="utf-8")
    return notes
