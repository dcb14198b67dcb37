"""A Science4Cast-style learned baseline: gradient-boosted trees on hand-made pair features, trained
on the transitions of the window before the one they are asked about (issue #34 item 6b).

Why: the Science4Cast competition's strongest entries (Krenn et al., "Forecasting the future of
artificial intelligence with machine learning-based link prediction in an exponentially growing
knowledge network", Nature Machine Intelligence 5, 1326-1335, 2023) fed hand-made node and pair
features (degrees, their recent growth, shared neighbourhoods) to learned classifiers fit on what
had happened in an earlier window, then applied the fitted model to the present graph. It is the
baseline a field expert runs before any GNN (DESIGN.md, fourth wave), so a learned model's lift is
measured against it, not only against single heuristics.

Which graph each stage reads (t = the cutoff, h = ``horizon``):

- fit (``TransitionsGBDT.fit``): the graph at t - h (``earlier``: ``kg_cut.until(t - h)`` for a
  retrospective, see ``EARLIER``), its candidates (pairs of its known nodes, ``known_nodes``, that
  are neither edges nor ``KG.excluded``), and labels from the cut graph's relation edges first
  dated in (t - h, t] between nodes known at t - h: every such edge is a positive, a seeded uniform
  sample of the other candidates the negatives. Nothing dated after t is read: the cut graph's
  later edges (if any) fall outside the window and outside ``until(t - h)``. Early stopping holds
  out a seeded, stratified 10% of these rows (sklearn's ``validation_fraction``).
- validation (``FitInfo.window_val_auc``): the same model on the window before, (t - 2h, t - h], read from
  the graph at t - 2h: an AUC over its positives and a like sample of its candidates, for model
  selection only (it picks nothing here; no test-window label is read anywhere).
- scoring (``TransitionsGBDT.scorer``): the same features on the cut graph (its date t), the
  fitted trees' log-odds (``decision_function``) per block of the candidate space.

Features of a candidate (u, v) of relation r (``PairFeatures``; u of the relation's source type):
  d_r(x), d(x): x's degree in the relation and over all edge types; g_r(x): relation edges of x
  dated in (date - growth_years, date], its recent growth (Science4Cast's degree growth); A: the
  relation's 0/1 adjacency (``structural.relation_adjacency``).
- ``rel_deg_src/dst``, ``deg_src/dst``, ``growth_src/dst``: log1p of d_r, d, g_r of u and v.
- ``pa``: log1p(d_r(u) d_r(v)), preferential attachment in the relation.
- ``paths3``: log1p (A Aᵀ A)[u, v], 3-paths over the relation's edges (as ``method=paths3``), and
  ``paths3_norm``: that count / sqrt(d_r(u) d_r(v)) (0 when either is 0).
- ontology (``ONTOLOGY``; only when the schema's ``static_edge_types`` hold one between two nodes of
  the relation's destination type, e.g. HPO's Phenotype-Phenotype is_a): among u's relation
  partners, how many are parents of v, children of v, siblings of v (share a parent), ancestors of
  v within 2 is_a hops, descendants within 2 hops. Directions come from ``KG.ancestors`` (j is a
  parent of i when i-j is such an edge and j an ancestor of i); a KG without ``ancestors`` has
  undirected edges, and then parents and children both count neighbours. Under the true-path rule
  (``KG.excluded``) a candidate is never an ancestor of a partner, so on HPO the children and
  descendants columns are 0 on every candidate; they stay for ontologies without that rule.
- compatibility (``COMPATIBILITY``; only when ``options['compatible']`` = {via, ignore} is given,
  e.g. the recipes' {via: Element, ignore: [O, C, H, N]}): ``hygrail.descriptors``' two columns,
  the share of v's ``via`` neighbours (less the ignored names) that u also has, and whether all.

Where the numbers come from:
- ``HORIZON`` = 3 years: Science4Cast's task forecast three years ahead (graph up to 2014, links
  new by 2017), also its middle horizon of 1 / 3 / 5 years (structural.py quotes the AUCs).
- ``GROWTH_YEARS`` = 3: issue #34 item 6b's default, the horizon's length, so that the growth
  feature looks back as far as the model looks ahead.
- ``NEG_PER_POS`` = 50 (``data.split``) sampled candidates per positive (issue #34 item 6b): more than the triage
  split's 1:20, far fewer than the whole space's (about 1:6,000 on HPO at 2015), enough negatives
  for the trees' leaves; ``MAX_NEGATIVES`` = 500,000 caps memory (500k x 16 float32 features = 32
  MB) and the fit's time (one thread: see Cost).
- ``PARAMS``: sklearn 1.9's defaults for ``HistGradientBoostingClassifier`` (learning rate 0.1,
  at most 100 trees of 31 leaves, 20 rows a leaf, no L2, 255 bins), with early stopping forced on
  (sklearn turns it on by itself above 10,000 rows) on its default 10% held out, 10 rounds without
  improvement of the log loss; ``random_state`` = the seed. Not tuned on any window.

Speed (``Predictor``): sklearn's tree walk costs about 90 ns per pair per tree on one thread (0.86 s
per 1e5 pairs at 93 trees of 31 leaves, measured), against a budget of 0.05 s per 1e5 (the whole
HPO space at 2015 is 5.7e7 pairs). A tree only compares each feature with its split thresholds, so
two pairs whose every feature falls between the same thresholds get the same log-odds: each block
codes every feature by the count of the model's thresholds below it (per node for the six node
features, per pair for the rest), keys the coded rows (one int64, mixed radix), and runs the trees
once per key not seen before (up to ``MAX_CACHE`` remembered for later blocks). The scores are
sklearn's own, bit for bit (tests/test_transitions.py).

Cost, measured on the whole graphs (one thread on a shared 2-core machine at load ~5; 2026-12-03;
known nodes by dated edges, ``KG.known``; every block of 2^18 pairs of ``CandidateSpace(kg.until(t))``):
- HPO, hpo_dis_phe, t = 2015 (6,011 x 9,557 = 57.2M candidates): fit 17-27 s (4,861 positives, 243,050
  negatives, 81 trees; validation window 6,877 positives, AUC 0.885). Scoring 57.4M pairs: 38 s,
  0.66 s per 1e6 pairs, of which the features 0.052 s; 3.5M distinct coded rows (6%). Peak RSS 546 MB
  with the KG.
- Synthesis recipes, syn_tgt_pre, t = 2014, compatibility on (11,795 x 1,555 = 18.3M): fit 2.1 s (385
  positives, 46 trees; validation window 266 positives, AUC 0.982). Scoring 18.3M pairs: 9.4 s, 0.51 s
  per 1e6, features 0.13 s; 0.49M distinct coded rows (2.7%). Peak RSS 782 MB, nearly all the
  loader's (774 MB to load the graph alone).
So the features are far inside the 0.05 s per 1e5 budget (0.005-0.013 s); with the trees 0.066 s
(HPO) and 0.051 s (recipes): just over it, about half of it the trees on the new coded rows, the
rest coding and de-duplicating them. Other hyperparameters (31 or 63 bins, 15 leaves) moved the
HPO validation-window AUC by under 0.006; the fastest (31 bins) scored 10 blocks in 2.5 s against
2.9 s, too little to leave sklearn's defaults.

Triage (``gbdt_scores``, ``method=gbdt``): the same model fit on the split's training graph's own
transitions: its date T is its latest dated relation edge; the earlier graph is it less the
relation's edges dated after T - h (``earlier: relation``, as the split removed the validation
and test edges and kept every other edge) or, under ``split.graph_cut=time``, less every dated
edge after T - h (``earlier: time``); positives are those removed relation edges. Val and test
pairs are scored on ``split.graph(part)`` at its own date, the log-odds mapped to [0, 1] and
thresholded on validation as the structural baselines are (``structural.fit_on_validation``,
``routing.threshold``'s rule); test labels are never read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from numbers import Integral
from typing import Callable, Mapping

import numpy as np
import polars as pl
import scipy.sparse as sp
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score

from hygrail.baselines.structural import CHUNK, fit_on_validation, relation_adjacency
from hygrail.data.split import NEG_PER_POS, Split, graph_date, known_nodes
from hygrail.descriptors import COMPATIBILITY, compatible_sets
from hygrail.kg import KG, DataError, Relation
from hygrail.thresholds import decision_threshold

LABEL = "Trees on transitions"  # its row in the triage and discovery tables (Science4Cast's learned baseline)
BASE = ("rel_deg_src", "rel_deg_dst", "deg_src", "deg_dst", "growth_src", "growth_dst", "pa", "paths3", "paths3_norm")
ONTOLOGY = ("onto_parents", "onto_children", "onto_siblings", "onto_ancestors2", "onto_descendants2")
HORIZON = 3
GROWTH_YEARS = 3
MAX_NEGATIVES = 500_000
PARAMS = dict(learning_rate=0.1, max_iter=100, max_leaf_nodes=31, min_samples_leaf=20, l2_regularization=0.0,
              max_bins=255, early_stopping=True, validation_fraction=0.1, n_iter_no_change=10, scoring="loss")
# How the graph at an earlier date is made from the graph the model is given (module docstring).
EARLIER = ("until", "relation", "time")

MAX_CACHE = 4_000_000  # coded rows ``Predictor`` remembers across blocks: 64 MB of keys and log-odds
# per block of a candidate space (a discovery ``Block``: ``src`` and ``valid``; this floor may not import it)
Scorer = Callable[..., np.ndarray]


# -- features ------------------------------------------------------------------------------------
def _positive(value, name: str) -> int:
    """``value`` as a positive integer, else a one-line DataError naming the option ``name``."""
    if not isinstance(value, Integral) or isinstance(value, bool) or value < 1:
        raise DataError(f"{name}={value!r}: expected a positive integer")
    return int(value)


def ontology_type(graph: KG, relation: Relation) -> str | None:
    """The relation's destination type when a static edge type joins two nodes of it (an is_a)."""
    t = relation.dst
    static = {graph.schema.canonical(e) for e in graph.schema.static}
    return t if graph.schema.edge_type(t, t) in static else None


class PairFeatures:
    """The features (module docstring) of ``graph`` known at ``date``, precomputed per node:
    ``block(src)`` for every pair src[i] x dst[j] (S x D x F float32), ``pairs(src, dst)`` for
    listed pairs (n x F). ``dst``: the destinations a block spans (a candidate space's)."""

    def __init__(self, graph: KG, relation: Relation, date: int, options: Mapping | None = None,
                 dst: np.ndarray | None = None, growth_years: int = GROWTH_YEARS, option: str = "compatible"):
        options = options or {}
        _positive(growth_years, "growth_years")
        self.relation, self.date = relation, int(date)
        self.dst = None if dst is None else np.asarray(dst, dtype=np.int64)
        self.r = relation_adjacency(graph, relation)
        rel_deg = np.diff(self.r.indptr).astype(np.float64)
        e = graph.relation_edges(relation)
        recent = e.filter((pl.col("year") > self.date - growth_years) & (pl.col("year") <= self.date))
        growth = np.bincount(np.concatenate([recent["src"].to_numpy(), recent["dst"].to_numpy()]),
                             minlength=graph.num_nodes).astype(np.float64)
        if relation.src == relation.dst:  # a self-loop is one partner, one edge
            loops = recent.filter(pl.col("src") == pl.col("dst"))["src"].to_numpy()
            np.subtract.at(growth, loops, 1.0)
        self.rel_deg = rel_deg
        self.node = np.log1p(np.column_stack([rel_deg, graph.degree.astype(np.float64), growth])).astype(np.float32)
        self.onto = self._ontology(graph, relation)
        compatible = options.get("compatible")
        self.has = compatible_sets(graph, compatible, option) if compatible else None
        self.names = BASE + (ONTOLOGY if self.onto is not None else ()) + (COMPATIBILITY if self.has is not None else ())

    @staticmethod
    def _ontology(graph: KG, relation: Relation) -> list[sp.csr_matrix] | None:
        """[X_parents, X_children, X_siblings, X_anc2, X_desc2], N x N 0/1 each, such that
        (A X)[u, v] counts u's relation partners in that relation to v; None without an is_a."""
        t = ontology_type(graph, relation)
        if t is None:
            return None
        n = graph.num_nodes
        e = graph.edges.filter(pl.col("type") == graph.schema.edge_type(t, t))
        a, b = e["u"].to_numpy(), e["v"].to_numpy()
        if graph.ancestors is not None:  # orient each is_a edge child -> parent
            up = np.asarray(graph.ancestors[a, b]).ravel() != 0  # b is an ancestor of a
            child, parent = np.where(up, a, b), np.where(up, b, a)
        else:  # no direction known: both ways (parents and children then both count neighbours)
            child, parent = np.concatenate([a, b]), np.concatenate([b, a])
        p = sp.csr_matrix((np.ones(len(child)), (child, parent)), shape=(n, n))  # P[c, p]: p is a parent of c
        p.data[:] = 1.0
        sib = (p @ p.T).tocsr()
        sib.setdiag(0)
        two = p + p @ p
        mats = [p.T, p, sib, two.T, two]  # column v of X: v's parents, children, siblings, 2-hop ancestors, descendants
        out = []
        for m in mats:
            m = sp.csr_matrix(m)
            m.eliminate_zeros()
            m.data[:] = 1.0
            out.append(m)
        return out

    @property
    def width(self) -> int:
        return len(self.names)

    @cached_property
    def _to_dst(self) -> sp.csr_matrix:
        return self.r[:, self.dst].tocsr()

    @cached_property
    def _onto_dst(self) -> sp.csr_matrix:
        return sp.hstack([m[:, self.dst] for m in self.onto], format="csr")

    @cached_property
    def _need(self) -> tuple[sp.csr_matrix, np.ndarray]:
        need = self.has[self.dst]
        return need.T.tocsr(), np.diff(need.indptr).astype(np.float64)

    def block(self, src: np.ndarray) -> np.ndarray:
        """S x D x F float32: the features of every pair (src[i], self.dst[j]) (a view of ``planes``)."""
        return self.planes(src).transpose(1, 2, 0)

    def planes(self, src: np.ndarray) -> np.ndarray:
        """F x S x D float32, feature by feature: each plane contiguous, as ``Predictor`` codes them."""
        if self.dst is None:
            raise ValueError("PairFeatures.block needs the destinations (dst) it spans")
        src, dst = np.asarray(src, dtype=np.int64), self.dst
        s, d = len(src), len(dst)
        out = np.empty((self.width, s, d), dtype=np.float32)
        for c in range(3):  # rel_deg, deg, growth of u, then of v
            out[2 * c] = self.node[src, c][:, None]
            out[2 * c + 1] = self.node[dst, c][None, :]
        pa = self.rel_deg[src][:, None] * self.rel_deg[dst][None, :]
        out[6] = np.log1p(pa)
        r_src = self.r[src]
        paths = ((r_src @ self.r) @ self._to_dst).toarray()
        out[7] = np.log1p(paths)
        out[8] = np.divide(paths, np.sqrt(pa), out=np.zeros_like(paths), where=pa > 0)
        k = 9
        if self.onto is not None:
            out[k : k + len(ONTOLOGY)] = (r_src @ self._onto_dst).toarray().reshape(s, len(ONTOLOGY), d).transpose(1, 0, 2)
            k += len(ONTOLOGY)
        if self.has is not None:
            need_t, n_need = self._need
            shared = (self.has[src] @ need_t).toarray()
            out[k] = np.divide(shared, n_need[None, :], out=np.ones_like(shared), where=n_need[None, :] > 0)
            out[k + 1] = shared == n_need[None, :]
        return out

    def pairs(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """n x F float32: the features of each pair (src[i], dst[i]), CHUNK pairs per sparse product."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if src.shape != dst.shape:
            raise ValueError(f"src and dst differ in length: {len(src)} vs {len(dst)}")
        out = np.empty((len(src), self.width), dtype=np.float32)
        onto_t = None if self.onto is None else [m.T.tocsr() for m in self.onto]  # row v of Xᵀ = column v of X
        for lo in range(0, len(src), CHUNK):
            s, d = src[lo : lo + CHUNK], dst[lo : lo + CHUNK]
            o = out[lo : lo + CHUNK]
            o[:, 0:6:2], o[:, 1:6:2] = self.node[s], self.node[d]
            pa = self.rel_deg[s] * self.rel_deg[d]
            r_s = self.r[s]
            paths = _rowsum((r_s @ self.r).multiply(self.r[d]))
            o[:, 6], o[:, 7] = np.log1p(pa), np.log1p(paths)
            o[:, 8] = np.divide(paths, np.sqrt(pa), out=np.zeros_like(paths), where=pa > 0)
            k = 9
            if onto_t is not None:
                for j, m in enumerate(onto_t):
                    o[:, k + j] = _rowsum(r_s.multiply(m[d]))
                k += len(ONTOLOGY)
            if self.has is not None:
                shared = _rowsum(self.has[s].multiply(self.has[d]))
                need = np.diff(self.has.indptr)[d].astype(np.float64)
                o[:, k] = np.divide(shared, need, out=np.ones_like(shared), where=need > 0)
                o[:, k + 1] = shared == need
        return out


def pair_features(graph: KG, space_like, src_block: np.ndarray, date: int | None = None, options: Mapping | None = None,
                  growth_years: int = GROWTH_YEARS) -> np.ndarray:
    """S x D x F float32: the features of every pair (src_block[i], space_like.dst[j]) on ``graph``
    known at ``date`` (default: its latest dated relation edge), ``space_like`` anything with
    ``relation`` and ``dst`` (a ``CandidateSpace``). Columns: ``PairFeatures(...).names``. For many
    blocks build one ``PairFeatures`` and call its ``block``: the per-node parts are computed once."""
    rel = space_like.relation
    date = graph_date(graph, rel) if date is None else date
    return PairFeatures(graph, rel, date, options, space_like.dst, growth_years).block(src_block)


def _rowsum(m: sp.spmatrix) -> np.ndarray:
    return np.asarray(m.sum(axis=1), dtype=np.float64).ravel()


# -- labelled transitions ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidates:
    """The candidates of ``relation`` on ``graph`` as ``discovery.space.CandidateSpace`` holds them
    (known nodes of the two types, not an edge, not ``KG.excluded``; same-type pairs u < v),
    restated here because the baselines sit below discovery (hygrail/__init__.py)."""

    graph: KG
    relation: Relation

    @cached_property
    def src(self) -> np.ndarray:
        return known_nodes(self.graph, self.relation.src)

    @cached_property
    def dst(self) -> np.ndarray:
        return known_nodes(self.graph, self.relation.dst)

    def contains(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        ok = src != dst if self.relation.src == self.relation.dst else np.ones(len(src), dtype=bool)
        ok &= np.isin(src, self.src) & np.isin(dst, self.dst)
        return ok & ~self.graph.has_edges(src, dst) & ~self.graph.excluded(src, dst)


def earlier_graph(graph: KG, relation: Relation, year: int, how: str = "until") -> KG:
    """``graph`` as it was at the end of ``year`` (``EARLIER``): ``until`` (every dated edge after it
    out, undated ones masked: ``KG.until``), ``relation`` (only the relation's edges dated after it
    out), ``time`` (every dated edge of a non-static type after it out, undated ones kept)."""
    if how == "until":
        return graph.until(year)
    if how not in EARLIER:
        raise DataError(f"earlier={how!r}: expected one of {', '.join(EARLIER)}")
    late = graph.edges.with_row_index("i").filter(pl.col("year") > year)
    if how == "relation":
        late = late.filter(pl.col("type") == graph.schema.edge_type(relation.src, relation.dst))
    else:
        late = late.filter(~pl.col("type").is_in([graph.schema.canonical(e) for e in graph.schema.static]))
    return graph.without_edges(late["i"].to_numpy())


@dataclass
class Transitions:
    """Labelled candidates of the graph at ``start``: the relation's edges first dated in
    (start, end] (label 1) and a uniform sample of the other candidates (label 0)."""

    graph: KG  # the graph at ``start``
    start: int
    end: int
    src: np.ndarray
    dst: np.ndarray
    label: np.ndarray


def transitions(kg: KG, relation: Relation, start: int, end: int, how: str, seed: int, neg_per_pos: int = NEG_PER_POS,
                max_negatives: int = MAX_NEGATIVES) -> Transitions:
    """``Transitions`` of ``kg`` over (start, end]: the positives among the candidates of the graph at
    ``start`` (``earlier_graph``), negatives drawn uniformly from those candidates (seeded; never a
    positive; ``neg_per_pos`` per positive, at most ``max_negatives``)."""
    g0 = earlier_graph(kg, relation, start, how)
    space = Candidates(g0, relation)
    e = kg.relation_edges(relation).filter((pl.col("year") > start) & (pl.col("year") <= end))
    s, d = e["src"].to_numpy(), e["dst"].to_numpy()
    if relation.src == relation.dst:
        s, d = np.minimum(s, d), np.maximum(s, d)
    keep = space.contains(s, d)  # known at start, not implied by then
    s, d = s[keep], d[keep]
    n = g0.num_nodes
    pos_keys = np.unique(s * n + d)
    n_neg = min(neg_per_pos * len(pos_keys), max_negatives)
    ns, nd = _sample(space, n_neg, pos_keys, np.random.default_rng(seed))
    src, dst = np.concatenate([s, ns]), np.concatenate([d, nd])
    label = np.concatenate([np.ones(len(s), np.int8), np.zeros(len(ns), np.int8)])
    return Transitions(g0, start, end, src, dst, label)


def _sample(space: Candidates, n: int, exclude: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``n`` distinct candidates drawn uniformly (pairs of the two known sets, rejected unless
    candidates, keyed src * N + dst), none of them in ``exclude`` (sorted keys); fewer only when the
    space runs out (20 rounds find nothing new)."""
    if n <= 0 or not len(space.src) or not len(space.dst):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    nn = space.graph.num_nodes
    same = space.relation.src == space.relation.dst
    got = np.zeros(0, np.int64)
    stale = 0
    while len(got) < n and stale < 20:
        m = int(1.2 * (n - len(got))) + 1024
        s, d = rng.choice(space.src, m), rng.choice(space.dst, m)
        if same:
            s, d = np.minimum(s, d), np.maximum(s, d)
        ok = space.contains(s, d)
        keys = s[ok] * nn + d[ok]
        keys = keys[~np.isin(keys, exclude) & ~np.isin(keys, got)]
        keys = keys[np.sort(np.unique(keys, return_index=True)[1])]  # first draws first: seeded order
        before = len(got)
        got = np.concatenate([got, keys[: n - len(got)]])
        stale = stale + 1 if len(got) == before else 0
    return got // nn, got % nn


# -- the model ---------------------------------------------------------------------------------------
class Predictor:
    """``model.decision_function`` of many rows, each distinct coded row once (module docstring,
    Speed): a feature's code is how many of the trees' thresholds on it lie below the value, so
    rows of equal codes take the same path through every tree. Codes of all used features make one
    int64 key (mixed radix; ``exact`` when it fits, else every row goes to the trees)."""

    def __init__(self, model: HistGradientBoostingClassifier, width: int):
        self.model, self.width = model, width
        thresholds = [[] for _ in range(width)]
        for trees in model._predictors:  # sklearn 1.9: a TreePredictor per tree, its nodes a record array
            for tree in trees:
                nodes = tree.nodes[~tree.nodes["is_leaf"].astype(bool)]
                if nodes["is_categorical"].any():
                    raise ValueError("Predictor codes numeric splits only")
                for f, t in zip(nodes["feature_idx"], nodes["num_threshold"]):
                    thresholds[f].append(t)
        # x <= t for a float32 x iff x <= t rounded down to float32: codes read float32 planes as they are
        self.thresholds = []
        for t in thresholds:
            t = np.unique(np.asarray(t, dtype=np.float64))
            t32 = t.astype(np.float32)
            up = t32.astype(np.float64) > t
            t32[up] = np.nextafter(t32[up], np.float32(-np.inf))
            self.thresholds.append(t32)
        self.weight = np.zeros(width, dtype=np.int64)  # 0: no tree splits on the feature, it cannot matter
        w = 1
        for f, t in enumerate(self.thresholds):
            if len(t) and w < 2**62:
                self.weight[f], w = w, w * (len(t) + 1)
        self.exact = w < 2**62
        self.keys, self.values = np.zeros(0, np.int64), np.zeros(0, np.float64)  # seen keys (sorted), log-odds

    def code(self, f: int, x: np.ndarray) -> np.ndarray:
        """Feature ``f``'s code of each value times its weight in the key (int64, x's shape)."""
        t = self.thresholds[f]
        if len(t) <= 4:  # a few comparisons beat a binary search
            c = np.zeros(x.shape, dtype=np.int64)
            for v in t:
                c += x > v
        else:
            c = np.searchsorted(t, x.ravel(), side="left").reshape(x.shape).astype(np.int64)
        return c * self.weight[f]

    def node_keys(self, node: np.ndarray, columns: Mapping[int, int]) -> np.ndarray:
        """Per node, the key's part from per-node features: feature f -> column of ``node``."""
        key = np.zeros(len(node), dtype=np.int64)
        for f, c in columns.items():
            if self.weight[f]:
                key += self.code(f, np.ascontiguousarray(node[:, c]))
        return key

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Log-odds of each row of x (n x F float32), equal to ``model.decision_function(x)``."""
        if not self.exact or not len(x):
            return self.model.decision_function(x)
        key = np.zeros(len(x), dtype=np.int64)
        for f in np.flatnonzero(self.weight):
            key += self.code(f, np.ascontiguousarray(x[:, f]))
        return self.lookup(key, lambda idx: x[idx])

    def lookup(self, key: np.ndarray, rows: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """Log-odds per key: remembered ones read back, the others from the trees on one row each
        (``rows(indices)``: those rows' features)."""
        uniq, inverse = np.unique(key, return_inverse=True)
        rep = np.empty(len(uniq), dtype=np.int64)
        rep[inverse] = np.arange(len(key))  # a row of each key (any: equal keys, equal log-odds)
        value = np.empty(len(uniq))
        seen = np.zeros(len(uniq), dtype=bool)
        if len(self.keys):
            at = np.minimum(np.searchsorted(self.keys, uniq), len(self.keys) - 1)  # sorted queries: fast
            seen = self.keys[at] == uniq
            value[seen] = self.values[at[seen]]
        new = ~seen
        if new.any():
            value[new] = self.model.decision_function(rows(rep[new]))
            if len(self.keys) + int(new.sum()) <= MAX_CACHE:  # both sorted: insert, no sort
                at = np.searchsorted(self.keys, uniq[new])
                self.keys, self.values = np.insert(self.keys, at, uniq[new]), np.insert(self.values, at, value[new])
        return value[inverse]


@dataclass
class FitInfo:
    """What a fit read and found (logged by the triage cell as gbdt_<name>)."""

    fit_start: int  # the graph the model learned from is at this date
    positives: int
    negatives: int
    window_val_positives: int  # the validation window, (start - h, start], read from the graph at start - h
    window_val_negatives: int
    window_val_auc: float  # nan without both classes
    trees: int
    train_seconds: float
    features: tuple[str, ...] = field(default=())

    def metrics(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.__dict__.items() if k != "features"}


class TransitionsGBDT:
    """Trees on the previous window's transitions (module docstring). ``earlier``: how the graph at
    an earlier date is made (``EARLIER``); ``seed``: negatives and the early-stopping split."""

    def __init__(self, seed: int = 0, earlier: str = "until", neg_per_pos: int = NEG_PER_POS,
                 max_negatives: int = MAX_NEGATIVES, growth_years: int = GROWTH_YEARS):
        if earlier not in EARLIER:
            raise DataError(f"earlier={earlier!r}: expected one of {', '.join(EARLIER)}")
        for name, v in (("neg_per_pos", neg_per_pos), ("max_negatives", max_negatives), ("growth_years", growth_years)):
            _positive(v, name)
        self.seed, self.earlier = int(seed), earlier
        self.neg_per_pos, self.max_negatives, self.growth_years = neg_per_pos, max_negatives, growth_years
        self.model: HistGradientBoostingClassifier | None = None

    def _features(self, graph: KG, date: int, dst: np.ndarray | None = None) -> PairFeatures:
        return PairFeatures(graph, self.relation, date, self.options, dst, self.growth_years, self.option)

    def fit(self, kg_cut: KG, relation: Relation, cutoff: int, horizon: int = HORIZON, options: Mapping | None = None,
            option: str = "compatible") -> "TransitionsGBDT":
        """Learn from (cutoff - horizon, cutoff] on the graph at cutoff - horizon; AUC on the window
        before (``info``). ``kg_cut``: the graph at ``cutoff`` (later edges, if any, are not read);
        ``options``: ``compatible`` (``option`` names it in errors)."""
        t0 = time.perf_counter()
        if not isinstance(cutoff, Integral) or isinstance(cutoff, bool):
            raise DataError(f"cutoff={cutoff!r}: expected a year (an integer)")
        cutoff, horizon = int(cutoff), _positive(horizon, "horizon")
        self.relation, self.cutoff, self.horizon = relation, cutoff, horizon
        self.options, self.option = dict(options or {}), option
        start = cutoff - horizon
        train = transitions(kg_cut, relation, start, cutoff, self.earlier, self.seed, self.neg_per_pos, self.max_negatives)
        feats = self._features(train.graph, start)  # checks the options before the labels
        n_pos = int(train.label.sum())
        if n_pos < 2 or n_pos == len(train.label):
            raise DataError(f"horizon={horizon}: {n_pos} {relation.label} edges are first dated in ({start}, {cutoff}] "
                            f"between nodes known at {start}, with {len(train.label) - n_pos} candidates beside them; "
                            f"expected a window with new edges (a longer horizon or a later cutoff)")
        x, self.names = feats.pairs(train.src, train.dst), feats.names
        self.model = HistGradientBoostingClassifier(**PARAMS, random_state=self.seed).fit(x, train.label)
        self.predictor = Predictor(self.model, x.shape[1])
        val = transitions(kg_cut, relation, start - horizon, start, self.earlier, self.seed + 1, self.neg_per_pos,
                          self.max_negatives)
        v_pos = int(val.label.sum())
        auc = float("nan")
        if 0 < v_pos < len(val.label):
            xv = self._features(val.graph, start - horizon).pairs(val.src, val.dst)
            auc = float(roc_auc_score(val.label, self.model.decision_function(xv)))
        self.info = FitInfo(start, n_pos, len(train.label) - n_pos, v_pos, len(val.label) - v_pos, auc,
                            int(self.model.n_iter_), time.perf_counter() - t0, self.names)
        return self

    def _check(self) -> None:
        if self.model is None:
            raise RuntimeError("TransitionsGBDT: fit before scoring")

    def scorer(self, kg_cut: KG, space, date: int | None = None) -> Scorer:
        """Log-odds per block (S x D, ``Block.src`` x ``space.dst``) from the features of ``kg_cut``
        at ``date`` (default: the cutoff the model was fit for)."""
        self._check()
        feats = self._features(kg_cut, self.cutoff if date is None else date, space.dst)
        predict, dst = self.predictor, feats.dst
        if not predict.exact:
            return lambda block: self.model.decision_function(feats.planes(block.src).reshape(feats.width, -1).T
                                                              ).reshape(len(block.src), len(dst))
        key_src = predict.node_keys(feats.node, {0: 0, 2: 1, 4: 2})  # columns of PairFeatures.node
        key_dst = predict.node_keys(feats.node, {1: 0, 3: 1, 5: 2})[dst]
        pair = [f for f in range(6, feats.width) if predict.weight[f]]

        def score(block) -> np.ndarray:
            p = feats.planes(block.src)
            key = key_src[block.src][:, None] + key_dst[None, :]
            for f in pair:
                key += predict.code(f, p[f])
            flat = p.reshape(feats.width, -1)
            return predict.lookup(key.ravel(), lambda idx: flat[:, idx].T).reshape(key.shape)

        return score

    def pair_scores(self, graph: KG, src: np.ndarray, dst: np.ndarray, date: int) -> np.ndarray:
        """Log-odds of listed pairs from the features of ``graph`` at ``date``."""
        self._check()
        return self.predictor(self._features(graph, date).pairs(src, dst))


# -- registrations ---------------------------------------------------------------------------------------
def gbdt(graph: KG, space, options: Mapping) -> Scorer:
    """A per-entity / whole-space baseline factory (``discovery.entities.BASELINES``): fit on ``graph``
    (the cut graph) at ``options['cutoff']`` with ``options['horizon']`` (default ``HORIZON``) and
    ``options['seed']`` (default 0); compatibility from ``options['compatible']`` or, as
    ``entities.baseline_options`` passes ``discover.compatible``, its keys ``via`` / ``ignore`` at
    the top level; score ``space``'s blocks."""
    cutoff, horizon = options.get("cutoff"), options.get("horizon", HORIZON)
    if not isinstance(cutoff, Integral) or isinstance(cutoff, bool):
        raise DataError(f"gbdt: options['cutoff']={cutoff!r}; expected the retrospective cutoff year (an integer)")
    horizon = _positive(horizon, "gbdt: options['horizon']")
    compatible = options.get("compatible") or ({k: options[k] for k in ("via", "ignore") if k in options}
                                               if options.get("via") else None)
    model = TransitionsGBDT(seed=int(options.get("seed", 0)))
    model.fit(graph, space.relation, int(cutoff), horizon, {"compatible": compatible}, option="discover.compatible")
    return model.scorer(graph, space)


@dataclass(frozen=True)
class GBDTResult:
    """Scores in [0, 1] aligned row by row with split.part("val") / split.part("test")."""

    val: np.ndarray
    test: np.ndarray
    threshold: float
    info: dict[str, float]  # FitInfo.metrics() plus the validation map's slope and intercept
    seconds: float


def gbdt_scores(split: Split, cfg: Mapping, threshold_rule: str = "max_f1", seed: int = 0) -> GBDTResult:
    """``method=gbdt`` on a triage split (module docstring, Triage): fit on the training graph's own
    transitions, log-odds of val / test pairs on ``split.graph(part)``, mapped to [0, 1] and
    thresholded on validation."""
    t0 = time.perf_counter()
    rel, train = split.relation, split.train_graph
    val, test = split.part("val"), split.part("test")
    y_val = val["label"].to_numpy()
    if len(np.unique(y_val)) < 2:
        raise DataError(f"method=gbdt: relation {rel.name} has {int(y_val.sum())} validation positives of "
                        f"{len(y_val)} hypotheses; mapping its scores to probabilities needs both classes")
    horizon, neg, cap, growth = (_positive(cfg.get(k, d), f"method.{k}") for k, d in (
        ("horizon", HORIZON), ("neg_per_pos", NEG_PER_POS), ("max_negatives", MAX_NEGATIVES),
        ("growth_years", GROWTH_YEARS)))
    earlier = "time" if split.graph_cut == "time" else "relation"
    model = TransitionsGBDT(seed, earlier, neg, cap, growth)
    model.fit(train, rel, graph_date(train, rel), horizon, cfg, option="method.compatible")
    s_val, s_test = (model.pair_scores(split.graph(name), part["src"].to_numpy(), part["dst"].to_numpy(),
                                       graph_date(split.graph(name), rel)) for name, part in (("val", val), ("test", test)))
    platt = fit_on_validation(s_val[:, None], y_val, "gbdt")  # monotone: the trees' ranking stays
    p_val, p_test = platt.predict_proba(s_val[:, None])[:, 1], platt.predict_proba(s_test[:, None])[:, 1]
    clf = platt[-1]
    info = model.info.metrics() | {"weight_slope": float(clf.coef_[0, 0]), "weight_intercept": float(clf.intercept_[0])}
    return GBDTResult(p_val, p_test, decision_threshold(p_val, y_val, threshold_rule), info, time.perf_counter() - t0)
