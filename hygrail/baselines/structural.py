"""Structural baselines: the link-prediction heuristics real-data studies measure learned models
against, each a ``method=`` cell (conf/method/{pa,cn,aa,paths3,l3,degree}.yaml, ``name: structural``).

Why: on literature graphs preferential attachment is hard to beat (Science4Cast, Krenn et al.,
Nature Machine Intelligence 2023: AUC 0.884 / 0.870 / 0.842 at 1 / 3 / 5 years), and a prior on
the node degrees alone often exceeds AUROC 0.85 (Zietz et al., GigaScience 2024). A learned
model's figures say little without the lift over them (DESIGN.md, third wave).

Every score is computed on the split's message-passing graph (``split.graph(part)``: the training
graph, in which no val/test link is; under ``split.graph_cut=time`` test pairs read the test graph) for the pairs of ``split.part("val")`` / ``("test")``, oriented u = the relation's source,
v = its target. d(x) and N(x) are x's degree and neighbours over all edge types (structure only,
support counts ignored, as TSH's unweighted descriptors); A is the relation's own adjacency and
d_r(x) the degree in it.

- ``pa``: d(u) * d(v), preferential attachment (Barabási & Albert 1999; Liben-Nowell & Kleinberg
  2007), all edge types as discovery's ``PreferentialAttachment``, so the retrospective and the
  triage tables mean one thing by it.
- ``cn``: |N(u) ∩ N(v)|, common neighbours over all edge types.
- ``aa``: sum over w in N(u) ∩ N(v) of 1 / log d(w) (Adamic & Adar, Social Networks 2003); a common
  neighbour has d(w) >= 2, so the sum is finite. cn and aa equal TSH's descriptors of those names.
- ``paths3``: between the two node types of a relation, common neighbours *in the relation* are
  zero by construction (u's relation neighbours are targets, v's are sources); the analogue is the
  count of 3-paths u–v'–u'–v, (A Aᵀ A)[u, v] with A the src x dst relation adjacency: u is like
  v's partners. For a non-edge (every val/test pair) these walks are simple paths. With
  ``normalise: true`` (conf/method/l3.yaml) each path is divided by sqrt(d_r(v') d_r(u')) of its two
  inner nodes: L3 (Kovács et al., Nature Communications 2019, 10:1240, who found it beats
  common-neighbour rules on protein-interaction networks, which are bipartite-like in this sense).
  Inner nodes, not the endpoints: dividing by sqrt(d_r(u) d_r(v)) would strip the degree signal
  that PA and the degree prior show to be strong, while L3 discounts paths through hubs, as
  Adamic–Adar does for common neighbours.
- ``degree``: a degree-only prior, the logistic regression fit on validation over log1p of
  d_r(u), d_r(v), d(u), d(v). Why this form: Zietz et al.'s edge prior is the probability that
  (u, v) is an edge among degree-preserving permutations (XSwap) of the relation's network, and its
  stationary approximation d_u d_v / (d_u d_v + m - d_u - d_v + 1) (``approximate_xswap_prior`` in
  their xswap package; m the edge count) has log-odds log d_u + log d_v - log(m - d_u - d_v + 1),
  about log d_u + log d_v - log m for degrees far below m: linear in the two log-degrees. The
  logistic fit generalises it (its own weights; an intercept that absorbs the 1:20 sampling of
  negatives, which no permutation prior knows) and with the all-edge degrees also sees how studied
  each entity is beyond the relation. log1p, not log: a new entity of a temporal split has degree 0.

From scores to decisions: ``routing.threshold``'s half_max_f1 rule needs probabilities, so an
unbounded heuristic s is mapped to [0, 1] by Platt scaling fit on validation (Platt 1999):
p = sigmoid(a z + b) with z the standardised log1p(s), by sklearn's logistic regression (C = 1: the
L2 term keeps a validation set the heuristic separates from becoming a step). The map must be
strictly increasing so that the ranking (AUC, AP) and the max-F1 cut stay the heuristic's own, so
the slope is held at a >= ``SLOPE_FLOOR``. Where the free fit's slope is lower (the heuristic ranks
validation positives lower: PA on the synthetic MatKG, whose generator gives degree no signal) a
is the floor and b the logit of the validation positive share (z has mean 0 on validation): every
pair's probability is that share to within 1e-3, the honest calibration of a score with no signal
on validation, while the test AUC still says how the heuristic ranks (below 0.5 if it is
anti-correlated); ``structural_weight_slope`` records the floor. The threshold is then chosen on
validation by the ``routing.threshold`` rule, as for the GNN and TSH; the degree prior, whose four
weights are fit on validation, has it read off out-of-fold scores as TSH does. Validation thus
serves twice (map, threshold) and test labels are never read, as for TSH (hygrail/baselines/tsh.py
says why validation, not training pairs).

Cost: each heuristic is a few sparse row products per CHUNK of pairs; on the synthetic MatKG at
data.scale=8 (24k nodes, 402k edges, 159k val+test pairs of chm_pro) one cell's scores and fit
took 0.04 s (pa, degree) to 0.22 s (paths3, L3) on one core.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from hygrail.data.split import Split
from hygrail.kg import KG, DataError, Relation
from hygrail.baselines.tsh import validation_scores
from hygrail.thresholds import decision_threshold

# Row names in the report (``hygrail.tracking.method_label``); paths3 with normalise is L3.
LABELS = {"degree": "degree prior", "pa": "PA", "cn": "CN", "aa": "AA", "paths3": "3-paths"}
HEURISTICS = tuple(LABELS)
ROWS = (*LABELS.values(), "L3")  # the report's row order
DEGREE_FEATURES = ("log1p_rel_deg_src", "log1p_rel_deg_dst", "log1p_deg_src", "log1p_deg_dst")
CHUNK = 2048  # pairs per sparse product: memory ~ CHUNK x (2-hop reach of a source) in the relation
# Least slope of the map to probabilities (module docstring): over the ~10 standard deviations a
# heuristic's z spans, probabilities move by < 1e-3 around the base rate, yet distinct scores stay
# distinct in float64.
SLOPE_FLOOR = 1e-4


@dataclass(frozen=True)
class StructuralResult:
    """Scores in [0, 1] aligned row by row with split.part("val") / split.part("test")."""

    val: np.ndarray
    test: np.ndarray
    threshold: float  # by ``threshold_rule`` on validation: predict 1 iff score >= threshold
    weights: dict[str, float]  # the validation fit's coefficients (Platt slope/intercept, or the prior's)
    seconds: float  # heuristic + fit, wall clock


def label(cfg: Mapping) -> str:
    """The report row of a structural cell's ``method`` config."""
    heuristic = heuristic_of(cfg)
    return "L3" if heuristic == "paths3" and cfg.get("normalise", False) else LABELS[heuristic]


def heuristic_of(cfg: Mapping) -> str:
    """``cfg["heuristic"]``, checked."""
    heuristic = cfg.get("heuristic")
    if heuristic not in HEURISTICS:
        raise DataError(f"method.heuristic={heuristic!r}: expected one of {', '.join(HEURISTICS)}")
    return heuristic


def structural_scores(split: Split, cfg: Mapping, threshold_rule: str = "max_f1") -> StructuralResult:
    """The heuristic ``cfg["heuristic"]`` on val and test pairs, mapped to [0, 1] on validation
    (module docstring), and its validation threshold by ``threshold_rule``."""
    t0 = time.perf_counter()
    heuristic = heuristic_of(cfg)
    val, test = split.part("val"), split.part("test")
    y_val = val["label"].to_numpy()
    if len(np.unique(y_val)) < 2:
        raise DataError(f"method={heuristic}: relation {split.relation.name} has {int(y_val.sum())} validation "
                        f"positives of {len(y_val)} hypotheses; mapping its scores to probabilities needs both classes")
    x_val, x_test = (features(split.graph(name), split.relation, part["src"].to_numpy(), part["dst"].to_numpy(),
                              heuristic, bool(cfg.get("normalise", False))) for name, part in (("val", val), ("test", test)))
    model = fit_on_validation(x_val, y_val, heuristic)
    s_test = model.predict_proba(x_test)[:, 1]
    # The degree prior learns four weights on validation: its threshold is read off out-of-fold
    # scores, as TSH's (hygrail/baselines/tsh.py says why). A single heuristic's map is monotone, so
    # its ranking is not fit on validation and its own scores serve.
    s_val = (validation_scores(model, x_val, y_val, {}) if heuristic == "degree" else model.predict_proba(x_val)[:, 1])
    clf = model[-1]
    names = DEGREE_FEATURES if heuristic == "degree" else ("slope",)
    weights = dict(zip(names, map(float, clf.coef_[0]))) | {"intercept": float(clf.intercept_[0])}
    return StructuralResult(s_val, s_test, decision_threshold(s_val, y_val, threshold_rule), weights,
                            time.perf_counter() - t0)


def features(kg: KG, relation: Relation, src: np.ndarray, dst: np.ndarray, heuristic: str,
             normalise: bool = False) -> np.ndarray:
    """(n, k) inputs of the validation fit: log1p of the heuristic (k = 1), or the prior's four
    log1p degrees."""
    if heuristic == "degree":
        return np.log1p(degree_features(kg, relation, src, dst))
    if heuristic == "paths3":
        return np.log1p(paths3(kg, relation, src, dst, normalise))[:, None]
    score = {"pa": preferential_attachment, "cn": common_neighbours, "aa": adamic_adar}[heuristic]
    return np.log1p(score(kg, src, dst))[:, None]


def fit_on_validation(x: np.ndarray, y: np.ndarray, heuristic: str) -> Pipeline:
    """Standardise, then logistic regression; for a single heuristic score the slope is held at
    >= ``SLOPE_FLOOR`` (module docstring)."""
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=5000)).fit(x, y)
    clf = model[-1]
    if heuristic != "degree" and clf.coef_[0, 0] < SLOPE_FLOOR:
        clf.coef_[:] = SLOPE_FLOOR
        clf.intercept_[:] = np.log(y.mean() / (1 - y.mean()))
    return model


# -- the heuristics, on binary (structure-only) adjacencies --------------------------------------
def structure(kg: KG) -> sp.csr_matrix:
    """Symmetric N x N 0/1 float adjacency over all edge types (kg.adjacency's data are edge ids)."""
    return kg.adjacency.astype(bool).astype(np.float64)


def relation_adjacency(kg: KG, relation: Relation) -> sp.csr_matrix:
    """Symmetric N x N 0/1 float adjacency of the relation's own edges: its src x dst block is A,
    and for a relation within one node type it is that type's relation graph."""
    e = kg.relation_edges(relation)
    s, d = e["src"].to_numpy(), e["dst"].to_numpy()
    r = sp.csr_matrix((np.ones(2 * len(s)), (np.concatenate([s, d]), np.concatenate([d, s]))), shape=(kg.num_nodes,) * 2)
    r.data[:] = 1.0  # structure only: a self-loop (stored twice, summed) counts once
    return r


def relation_degree(kg: KG, relation: Relation) -> np.ndarray:
    """Each node's number of partners in the relation (float64, per node id)."""
    return np.diff(relation_adjacency(kg, relation).indptr).astype(np.float64)


def preferential_attachment(kg: KG, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    deg = kg.degree.astype(np.float64)
    return deg[np.asarray(src)] * deg[np.asarray(dst)]


def common_neighbours(kg: KG, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    a = structure(kg)
    return _chunked(lambda s, d: _rowsum(a[s].multiply(a[d])), src, dst)


def adamic_adar(kg: KG, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    a = structure(kg)
    deg = kg.degree.astype(np.float64)
    inv_log = np.divide(1.0, np.log(np.maximum(deg, 1.0)), out=np.zeros_like(deg), where=deg > 1)
    return _chunked(lambda s, d: np.asarray(a[s].multiply(a[d]) @ inv_log).ravel(), src, dst)


def paths3(kg: KG, relation: Relation, src: np.ndarray, dst: np.ndarray, normalise: bool = False) -> np.ndarray:
    """(A Aᵀ A)[u, v] per pair, or with ``normalise`` Kovács et al.'s L3: each path u–v'–u'–v
    weighted by 1 / sqrt(d_r(v') d_r(u'))."""
    r = relation_adjacency(kg, relation)
    if normalise:
        deg = np.diff(r.indptr).astype(np.float64)
        w = sp.diags(np.divide(1.0, np.sqrt(deg), out=np.zeros_like(deg), where=deg > 0))
        step = (w @ r @ w).tocsr()  # one hop v' -> u' weighted at both of its ends
    else:
        step = r

    def count(s: np.ndarray, d: np.ndarray) -> np.ndarray:
        return _rowsum((r[s] @ step).multiply(r[d]))  # row u of A (W A W) against v's relation neighbours

    return _chunked(count, src, dst)


def degree_features(kg: KG, relation: Relation, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """(n, 4): d_r(u), d_r(v), d(u), d(v) (columns ``DEGREE_FEATURES`` before log1p)."""
    rel = np.diff(relation_adjacency(kg, relation).indptr).astype(np.float64)
    deg = kg.degree.astype(np.float64)
    src, dst = np.asarray(src), np.asarray(dst)
    return np.column_stack([rel[src], rel[dst], deg[src], deg[dst]])


def _rowsum(m: sp.spmatrix) -> np.ndarray:
    return np.asarray(m.sum(axis=1), dtype=np.float64).ravel()


def _chunked(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``fn`` over CHUNK pairs at a time (sparse row products grow with the pairs' neighbourhoods)."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if src.shape != dst.shape:
        raise ValueError(f"src and dst differ in length: {len(src)} vs {len(dst)}")
    return np.concatenate([fn(src[i : i + CHUNK], dst[i : i + CHUNK]) for i in range(0, len(src), CHUNK)] + [np.zeros(0)])
