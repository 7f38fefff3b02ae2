"""The numpy MiniLM computes what sentence-transformers computes, for any batch.

The reference vectors in ``tests/support/minilm_reference.json`` were computed once by
sentence-transformers (with torch, CPU) from the same model files; the project itself installs
neither, so the comparison runs against the stored output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory.embeddings import minilm_model_path
from memory.minilm import MAX_TOKENS, MiniLM

TEXTS = [
    "I prefer conservative positions",
    "how much risk am I comfortable with",
    "risk tolerance",
    "NVDA's 1-year return was 252.8% (volatility 48.4%).",
    "Ünïcödé café naïve résumé, 東京 and emoji 📈",
    "a",
    "",
    "   ",
    "word " * (MAX_TOKENS + 100),  # longer than the model takes: truncated the same way
]


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM(minilm_model_path())


REFERENCE = Path(__file__).resolve().parents[1] / "support" / "minilm_reference.json"


def test_matches_sentence_transformers(model: MiniLM) -> None:
    stored = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert stored["texts"] == TEXTS
    reference = np.array(stored["vectors"], dtype=np.float32)
    ours = model.encode(TEXTS)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert (ours * reference).sum(axis=1).min() > 0.99999


def test_a_text_embeds_the_same_alone_and_in_any_batch(model: MiniLM) -> None:
    alone = np.stack([model.encode([text])[0] for text in TEXTS])
    together = model.encode(TEXTS, batch_size=4)  # padded next to longer and shorter texts
    reordered = model.encode(TEXTS[::-1], batch_size=32)[::-1]
    assert np.abs(alone - together).max() < 1e-5
    assert np.abs(alone - reordered).max() < 1e-5
    assert np.allclose(np.linalg.norm(alone, axis=1), 1.0, atol=1e-5)


def test_embedding_a_query_does_not_import_torch() -> None:
    code = (
        "import sys; from memory.embeddings import MiniLMEmbedder; "
        "MiniLMEmbedder().embed_query('how much risk am I comfortable with'); "
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
