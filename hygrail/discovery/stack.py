"""The discovery ranker trained as it is evaluated (issue #35): gradient-boosted trees stacked over
what the heuristics know, the neighbours' choices and the GNN's score, fit on the transitions the
GNN never trained on.

Why: on the whole graphs the GNN alone is level with the Science4Cast trees and a 3-path count
(experiments/discovery.md). Science4Cast's winners (Krenn et al., Nature Machine Intelligence 2023)
were hand-made features over a learned classifier fit on an earlier window's transitions; He et al.
(Science Advances 2023) recommend precursors for a target from the recorded precursors of the most
similar known targets by composition. This head gives trees both, plus the GNN's score, so the GNN
must earn its place: ``discover.stack`` lists the variants ranked side by side (``with_gnn``, and
``without_gnn``, the same head without the GNN's score).

Which graph each stage reads (t = the cutoff):

- fit: the split's held-out hypotheses (``split.part('val')`` and ``('test')``: the relation's newest
  30% of edges dated <= t, with 20 uniform negatives each: paper App. A.2) as transitions of one
  population each (``data.split.held_out_rows``, issue #45): features read from the training graph
  at its own date D (``feature_graph``), positives only when dated after D (no year straddles the
  features and the labels); a ``known`` head on the rows whose two ends are known at D (the
  population of the whole space at the cutoff), a ``cold`` head on those whose source is unknown at
  D (a source first linked later: the population of the per-entity cold-start rows); a source the
  scored graph does not know is ranked by the cold head. Before, one head read both: read against
  the training graph, 44-59% of its positives had an unused source against 17-27% of its negatives,
  so "looks unused" meant "positive". The GNN's score is its triage score of that pair, from the
  model trained on the training graph's edges only. The GNN chose its epoch on the validation part,
  the only use of those rows before; the test part was never used for a choice.
- check (``StackFit.check``, logged as ``stack_check_*``): the head fit on the validation rows alone,
  scored on the test rows: AUC / AP of the GNN alone and of each variant. Pre-cutoff evidence only; no
  answer after the cutoff is read by any stage here.
- ranking: the head refit on both parts, features read from the cut graph (everything known at t),
  the GNN's score from the model passing messages over it (``run.py``: ``load_scorer(graph=known)``).

Features of a candidate (u, v), u of the relation's source type:

- ``transitions.PairFeatures``: degrees, recent growth, preferential attachment, 3-paths (raw and
  normalised), the HPO ontology neighbourhood of v among u's partners, the recipes' element
  compatibility (the trees' features of the ``gbdt`` baseline);
- ``knn_src``: He et al.'s idea, user-based: the share of u's ``K`` most similar sources (cosine of
  their relation partner sets) that have v, weighted by similarity;
- ``knn_via``: the same over the sources most similar by their ``via`` neighbours (``discover.compatible``:
  the recipes' elements, less the ignored O, C, H, N): the He et al. neighbours of a target, the only
  ones a new target, known by its composition alone, has;
- ``knn_dst``: item-based: the similarity-weighted count of u's partners among v's ``K`` most similar
  destinations (cosine of their partner sets);
- ``name_cos``: the cosine of the two names' embeddings, when the backbone reads names (``names_for``:
  the model of the GNN's name inputs; the only signal a newly curated disease with no feature yet has;
  ``without_names`` leaves it out with the GNN's score, to measure how much a ranking leans on names);
- ``gnn``: the GNN's score (``with_gnn`` only): its probability, the same float32 sigmoid of its
  logit on both sides (trees split on order only).

Where the numbers come from: ``K`` = 20 neighbours, a common default of neighbourhood collaborative
filtering (Herlocker et al., SIGIR 1999; their exact best range is quoted from memory, not checked),
chosen before any run and not tuned here; the trees
are ``transitions.PARAMS`` (sklearn's defaults, early stopping on 10% of the rows), not tuned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import polars as pl
import scipy.sparse as sp
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import average_precision_score, roc_auc_score

from hygrail.baselines.structural import CHUNK, relation_adjacency
from hygrail.baselines.transitions import PARAMS, PairFeatures, Predictor, _rowsum
from hygrail.data.split import POPULATIONS, balanced, graph_date, held_out_rows
from hygrail.descriptors import compatible_sets
from hygrail.discovery.space import Block, row_bounds
from hygrail.kg import KG, DataError, Relation
from hygrail.names import name_vectors

K = 20
VARIANTS = {"with_gnn": "Stack (trees + GNN)", "without_gnn": "Stack without GNN",
            "without_names": "Stack without GNN or names"}
MIN_CLASS = 20  # rows of each class the cold head needs (fewer: the known head stands in); not tuned
VERSION = "stack-4"  # bump when a change alters the fitted trees: cached fits (``fit_cached``) then miss
BLOCK_SOURCES = 8  # ``pair_scorer``: lists of at most this many sources go by whole rows; not tuned (an entity
                   # of the source type has one; 8 rows of HPO's 18 k destinations are a few MB of feature planes)
SIM_ROWS = 512  # rows of a similarity product at a time (512 x 12k float64 = 49 MB on whole HPO)


# -- neighbours --------------------------------------------------------------------------------
def top_k_cosine(profile: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray, k: int = K) -> sp.csr_matrix:
    """N x N: for each node in ``rows``, its ``k`` most cosine-similar nodes among ``cols`` (itself
    excluded; only positive similarities), by their ``profile`` rows (N x M, 0/1); ties broken by
    node id. Built SIM_ROWS rows at a time: the full similarity is never held."""
    n = profile.shape[0]
    p = sp.csr_matrix(profile, dtype=np.float64)
    norm = np.sqrt(np.asarray(p.multiply(p).sum(axis=1)).ravel())
    inv = np.divide(1.0, norm, out=np.zeros_like(norm), where=norm > 0)
    unit = sp.diags(inv) @ p
    right = unit[cols].T.tocsc()
    out_r, out_c, out_v = [], [], []
    for lo in range(0, len(rows), SIM_ROWS):
        r = rows[lo : lo + SIM_ROWS]
        sim = (unit[r] @ right).toarray()
        sim[r[:, None] == cols[None, :]] = 0.0
        kk = min(k, sim.shape[1])
        if kk == 0:
            continue
        # stable order: ties by column position (node id order of ``cols``), not by the partition
        top = np.argsort(-sim, axis=1, kind="stable")[:, :kk]
        val = np.take_along_axis(sim, top, axis=1)
        keep = val > 0
        out_r.append(np.repeat(r, kk)[keep.ravel()])
        out_c.append(cols[top][keep])
        out_v.append(val[keep])
    if not out_r:
        return sp.csr_matrix((n, n))
    return sp.csr_matrix((np.concatenate(out_v), (np.concatenate(out_r), np.concatenate(out_c))), shape=(n, n))


def _row_normalised(m: sp.csr_matrix) -> sp.csr_matrix:
    s = np.asarray(m.sum(axis=1)).ravel()
    return (sp.diags(np.divide(1.0, s, out=np.zeros_like(s), where=s > 0)) @ m).tocsr()


class Neighbours:
    """The ``knn_*`` features (module docstring) of ``graph``: sources' and destinations' ``k``
    nearest by partner sets, sources' by ``via`` neighbours (``compatible`` given)."""

    def __init__(self, graph: KG, relation: Relation, compatible: Mapping | None = None, k: int = K,
                 option: str = "discover.compatible"):
        self.a = relation_adjacency(graph, relation)
        src, dst = graph.nodes_of_type(relation.src), graph.nodes_of_type(relation.dst)
        deg = np.diff(self.a.indptr)
        # neighbours that can vote: nodes with partners (a source without any has nothing to lend)
        self.src_knn = _row_normalised(top_k_cosine(self.a, src, src[deg[src] > 0], k))
        self.dst_knn = top_k_cosine(self.a, dst, dst[deg[dst] > 0], k)
        self.names = ["knn_src", "knn_dst"]
        self.via_knn = None
        if compatible:
            has = compatible_sets(graph, compatible, option)
            self.via_knn = _row_normalised(top_k_cosine(has, src, src[deg[src] > 0], k))
            self.names.append("knn_via")
        self.a_t = self.a.T.tocsr()
        self._dst = None

    def block(self, src: np.ndarray, dst: np.ndarray) -> list[np.ndarray]:
        """One S x D plane per feature, of every pair (src[i], dst[j])."""
        if self._dst is not dst:  # a walk asks for the same destinations every block: slice the columns once
            self._dst, self._a_dst, self._knn_dst = dst, self.a[:, dst].tocsc(), self.dst_knn[dst].T.tocsc()
        planes = [(self.src_knn[src] @ self._a_dst).toarray(), (self.a[src] @ self._knn_dst).toarray()]
        if self.via_knn is not None:
            planes.append((self.via_knn[src] @ self._a_dst).toarray())
        return planes

    def pairs(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """n x F: the features of each pair (src[i], dst[i])."""
        out = np.empty((len(src), len(self.names)), dtype=np.float32)
        for lo in range(0, len(src), CHUNK):
            s, d = src[lo : lo + CHUNK], dst[lo : lo + CHUNK]
            out[lo : lo + CHUNK, 0] = _rowsum(self.src_knn[s].multiply(self.a_t[d]))
            out[lo : lo + CHUNK, 1] = _rowsum(self.a[s].multiply(self.dst_knn[d]))
            if self.via_knn is not None:
                out[lo : lo + CHUNK, 2] = _rowsum(self.via_knn[s].multiply(self.a_t[d]))
        return out


# -- the head ----------------------------------------------------------------------------------------
class Features:
    """Every column of the head but the GNN's (``PairFeatures`` + ``Neighbours`` + ``name_cos``) of
    ``graph`` at its date; ``names``: the names' vectors (``hygrail.names.NameVectors``; None: no
    names), ``dst``: the destinations a block spans."""

    def __init__(self, graph: KG, relation: Relation, compatible: Mapping | None, names=None,
                 dst: np.ndarray | None = None):
        options = {"compatible": compatible} if compatible else {}
        self.pair = PairFeatures(graph, relation, graph_date(graph, relation), options, dst, option="discover.compatible")
        self.knn = Neighbours(graph, relation, compatible)
        self.cos, self.dst = names, dst
        self.names = (*self.pair.names, *self.knn.names, *(("name_cos",) if names is not None else ()))
        self._last = (None, None)

    def pairs(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        parts = [self.pair.pairs(src, dst), self.knn.pairs(src, dst)]
        if self.cos is not None:
            parts.append(self.cos.pairs(src, dst)[:, None].astype(np.float32))
        return np.hstack(parts)

    def planes(self, src: np.ndarray) -> np.ndarray:
        """F x S x D float32; the last block's kept (the per-entity evaluation asks each variant for
        the same block in turn)."""
        if self._last[0] is not src:
            extra = self.knn.block(src, self.dst) + ([self.cos.block(src, self.dst)] if self.cos is not None else [])
            self._last = (src, np.concatenate([self.pair.planes(src), np.stack(extra).astype(np.float32)], axis=0))
        return self._last[1]


def names_for(graph: KG, relation: Relation, backbone: Mapping):
    """The names' vectors the stack reads (``name_cos``): those of the model the backbone reads names
    with (the plus backbones' ``names``; the same vectors as the GNN's name inputs), None when the
    backbone reads no names, so that the stack reads what the GNN beside it may read."""
    model = backbone.get("names") if str(backbone.get("name", "")).endswith("_plus") else None
    return None if not model else name_vectors(graph, relation, str(model))


@dataclass
class StackFit:
    """The fitted heads (variant -> population -> trees: ``data.split.POPULATIONS``), what the fit
    found, and what scoring reads: the compatibility option and the GNN (its probabilities, its
    names). A source known in the graph scored is ranked by the ``known`` head, one unknown there (a
    cold-start entity, given by name or composition) by the ``cold`` head, or the ``known`` head when
    the held-out rows held too few cold ones to fit it (``cold_fallback``)."""

    models: dict[str, dict[str, HistGradientBoostingClassifier]]
    check: dict[str, float] = field(default_factory=dict)  # stack_check_*: fit on val rows, scored on test rows
    seconds: float = 0.0
    compatible: Mapping | None = None
    gnn: object = None  # the GNN's probabilities (``with_gnn``); None: a stack fit without the GNN
    names: object = None  # the names' vectors (``hygrail.names.NameVectors``); None: no names
    _features: tuple = (None, None)  # (space, its Features): built once, shared by every variant and walk

    def metrics(self) -> dict[str, float]:
        return self.check | {"stack_fit_seconds": self.seconds,
                             **{f"stack_{v}{'' if p == 'known' else '_' + p}_trees": float(m.n_iter_)
                                for v, heads in self.models.items() for p, m in heads.items()}}

    def features(self, space) -> Features:
        if self._features[0] is not space:
            self._features = (space, Features(space.kg, space.relation, self.compatible, self.names, space.dst))
        return self._features[1]

    def scorer(self, variant: str, space, gnn_block: Callable | None = None) -> "StackBlocks":
        """``variant`` over ``space``'s blocks, features read from ``space.kg`` (the cut graph);
        ``gnn_block``: the block's GNN logits (``Kept`` in a whole-space walk, ``Memo`` per entity)."""
        return StackBlocks(self.models[variant], variant, self.features(space), gnn_block,
                           None if self.gnn is None else self.gnn.probability, space.kg.known)

    def pair_scorer(self, variant: str, space, max_sources: int = BLOCK_SOURCES) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """``variant``'s log-odds of a list of pairs (src[i], dst[i]) of ``space``, features read from
        ``space.kg``, the GNN's score from ``self.gnn`` (``discover.entity_ranker``: a named entity's
        candidates, of either end of the relation). Pairs of at most ``max_sources`` sources (an
        entity of the source type: one) are scored as those sources' rows of the whole-space walk
        (``StackBlocks``, vectorised over destinations); other lists pair by pair (same values).
        Measured on whole HPO, load 2: a disease's whole list (its ~12.9 k candidates scored, the
        GNN's columns, the ranking) took 0.57 s this way against ~2.3 s pair by pair."""
        feats = self.features(space)
        rows = self.scorer(variant, space, self.gnn)

        def score(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
            sources = np.unique(src)
            if len(sources) <= max_sources:
                block = Block(sources, np.ones((len(sources), len(space.dst)), dtype=bool))
                return rows(block)[np.searchsorted(sources, src), np.searchsorted(space.dst, dst)]
            x = feats.pairs(src, dst)
            if variant == "with_gnn":
                x = np.hstack([x, gnn_prob(self.gnn.probability(self.gnn.pairs(src, dst)))[:, None]])
            return rows.predict_rows(x, space.kg.known[src])

        return score


def _rows(rows: pl.DataFrame, part: str, scores: np.ndarray | None, feats: Features
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features with the GNN's score last, labels, population) of one held-out part's rows
    (``held_out_rows``), read from its feature graph; ``scores``: the GNN's triage scores of the
    whole part, in ``split.part`` order (None: no GNN; its column is NaN and no variant reads it)."""
    df = rows.filter(pl.col("part") == part)
    x = feats.pairs(df["src"].to_numpy(), df["dst"].to_numpy())
    gnn = np.full(len(df), np.nan, np.float32) if scores is None else gnn_prob(np.asarray(scores)[df["row"].to_numpy()])
    return np.hstack([x, gnn[:, None]]), df["label"].to_numpy(), df["population"].to_numpy()


def gnn_prob(p: np.ndarray) -> np.ndarray:
    """The GNN's score as the head reads it: its probability in float32 (as ``Scorer.probability``
    computes it from a logit), the same on the fit rows and on the candidates."""
    return np.asarray(p, dtype=np.float32)


def _check_variants(variants: Sequence[str], with_gnn: bool) -> None:
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise DataError(f"discover.stack={list(variants)}: expected some of {list(VARIANTS)} (or [] for no stack)")
    if "with_gnn" in variants and not with_gnn:
        raise ValueError("the with_gnn stack is fit on the GNN's triage scores; none were given")


def fit(split, triage_scores, variants: Sequence[str], compatible: Mapping | None = None, gnn=None,
        seed: int = 0, names=None) -> StackFit:
    """Fit each variant (``VARIANTS``) on the split's held-out rows (``data.split.held_out_rows``: one
    head per population, module docstring); the check first: fit on validation, AUC / AP on test, for
    the GNN alone and each variant (``stack_check_*``; the cold head's ``stack_check_cold_*``).
    ``triage_scores``, ``gnn``: the GNN's scores of the split and its ``scoring.GNNBlocks`` (None for a
    stack without the GNN, e.g. ``discover.first_answer``'s before any training); ``names``: the
    names' vectors (``hygrail.names.NameVectors``; None: no ``name_cos``)."""
    _check_variants(variants, triage_scores is not None)
    t0 = time.perf_counter()
    (x_val, y_val, p_val), (x_test, y_test, p_test), cols = _held_out(split, triage_scores, compatible, names, seed)
    check, models = {}, {v: {} for v in variants}
    for pop in POPULATIONS:
        prefix = "stack_check_" if pop == "known" else f"stack_check_{pop}_"
        v_in, t_in = p_val == pop, p_test == pop
        yv, yt = y_val[v_in], y_test[t_in]
        if min(int(yv.sum()), len(yv) - int(yv.sum())) >= 2 and len(np.unique(yt)) == 2:  # 2: early stopping's stratified split
            check |= {f"{prefix}rows": float(len(yv) + len(yt)), f"{prefix}positives": float(yv.sum() + yt.sum())}
            if triage_scores is not None:
                check |= {f"{prefix}gnn_auc": float(roc_auc_score(yt, x_test[t_in, -1])),
                          f"{prefix}gnn_ap": float(average_precision_score(yt, x_test[t_in, -1]))}
            for v in variants:
                c = columns(v, cols)
                s = _trees(x_val[v_in][:, c], yv, seed).decision_function(x_test[t_in][:, c])
                check |= {f"{prefix}{v}_auc": float(roc_auc_score(yt, s)),
                          f"{prefix}{v}_ap": float(average_precision_score(yt, s))}
        x, y = np.vstack([x_val[v_in], x_test[t_in]]), np.concatenate([yv, yt])
        if min(int(y.sum()), len(y) - int(y.sum())) < (2 if pop == "known" else MIN_CLASS):
            if pop == "known":
                raise DataError(f"discover.stack: the split's held-out rows hold {int(y.sum())} positives of {len(y)} "
                                f"pairs whose two ends were known before them; the stacked head learns from both classes")
            check[f"stack_{pop}_fallback"] = 1.0  # the known head scores these sources too (StackFit)
            continue
        for v in variants:
            models[v][pop] = _trees(x[:, columns(v, cols)], y, seed)
    return StackFit(models, check, time.perf_counter() - t0, compatible, gnn, names)


def _held_out(split, triage_scores, compatible: Mapping | None, names, seed: int):
    """((x, y, population) of the validation rows, the same of the test rows, the columns): the held-out
    rows (``held_out_rows``, ``balanced``) with their features read from their feature graphs."""
    rows, graphs = held_out_rows(split)
    rows = balanced(rows, seed)
    feats = {id(g): Features(g, split.relation, compatible, names) for g in graphs.values()}
    scores = (None, None) if triage_scores is None else (triage_scores.val, triage_scores.test)
    val = _rows(rows, "val", scores[0], feats[id(graphs["val"])])
    test = _rows(rows, "test", scores[1], feats[id(graphs["test"])])
    return val, test, [*feats[id(graphs["val"])].names, "gnn"]


def validation_heads(split, triage_scores, compatible: Mapping | None, names, seed: int, variant: str = "with_gnn"
                     ) -> dict[str, HistGradientBoostingClassifier]:
    """``variant``'s heads fit on the validation rows alone, as the check fits them (population -> trees):
    what another pre-cutoff check ranks the test part's entities with (``pools.check_and_choose``)."""
    (x, y, p), _, cols = _held_out(split, triage_scores, compatible, names, seed)
    c = columns(variant, cols)
    out = {}
    for pop in POPULATIONS:
        keep = p == pop
        if min(int(y[keep].sum()), int((y[keep] == 0).sum())) >= (2 if pop == "known" else MIN_CLASS):
            out[pop] = _trees(x[keep][:, c], y[keep], seed)
    return out


def fit_cached(cache: Path | None, split, triage_scores, variants: Sequence[str], compatible: Mapping | None = None,
               gnn=None, seed: int = 0, names=None, split_key: str | None = None) -> tuple[StackFit, bool]:
    """(``fit``'s result, whether it came from ``cache``): the trees are kept under ``cache`` as arrays
    and JSON (``hygrail.treeio``: nothing read runs code; a damaged entry is fit again), keyed by
    the GNN's triage cache key (which hashes the split, its graphs and the backbone; ``split_key``, the
    same key, when the stack is fit without the GNN's scores), the variants, the compatibility option,
    the names' model, the seed, this module's ``VERSION`` and scikit-learn's version, so a later query
    skips the fit (113 s on whole HPO under load, 2026-12-04; the 60 s budget of issue #36's warm
    query cannot hold it)."""
    _check_variants(variants, triage_scores is not None)
    if cache is None:
        return fit(split, triage_scores, variants, compatible, gnn, seed, names), False
    import json

    import sklearn

    from hygrail import treeio
    from hygrail.cache import DiskCache, content_key, load

    key = content_key(VERSION, triage_scores.key if triage_scores is not None else ["no gnn", split_key],
                      list(variants), compatible or {}, None if names is None else names.model, int(seed),
                      sklearn.__version__, treeio.FORMAT)
    done: list[StackFit] = []

    def write(tmp: Path) -> None:
        done.append(fit(split, triage_scores, variants, compatible, gnn, seed, names))
        for v, heads in done[0].models.items():
            for pop, model in heads.items():
                treeio.save(model, tmp, f"{v}.{pop}")
        (tmp / "stack.json").write_text(json.dumps({"heads": {v: list(h) for v, h in done[0].models.items()},
                                                    "check": done[0].check, "seconds": done[0].seconds}, indent=1))

    def read(folder: Path) -> StackFit:
        if done:  # just fit and written: nothing to read back
            return done[0]
        kept = load(folder / "stack.json", lambda f: json.loads(f.read_text()))
        models = {v: {pop: treeio.read(folder, f"{v}.{pop}") for pop in pops} for v, pops in kept["heads"].items()}
        # seconds: this run's fit, 0.0 on a hit (as the GNN's gnn_fit_seconds); the cached fit's own is in stack.json
        return StackFit(models, kept["check"], 0.0, compatible, gnn, names)

    return DiskCache(cache).get_or_create(key, write, read, what="the stacked ranker's trees")


def columns(variant: str, names: Sequence[str]) -> np.ndarray:
    """The columns ``variant`` reads of the rows whose columns are ``names`` (the GNN's score last)."""
    drop = {"with_gnn": (), "without_gnn": ("gnn",), "without_names": ("gnn", "name_cos")}[variant]
    return np.array([i for i, n in enumerate(names) if n not in drop])


def _trees(x: np.ndarray, y: np.ndarray, seed: int) -> HistGradientBoostingClassifier:
    return HistGradientBoostingClassifier(**PARAMS, random_state=seed).fit(x, y)


class StackBlocks:
    """A fitted variant over a candidate space's blocks (``StackFit.scorer``): ``feats`` of the space's
    graph; ``gnn``: the block's GNN logits (S x D; ``with_gnn`` only); ``known``: per node, whether the
    graph knows it (its source picks the head, ``StackFit``). Log-odds, each distinct coded row once
    (``transitions.Predictor``)."""

    def __init__(self, heads: Mapping[str, HistGradientBoostingClassifier], variant: str, feats: Features,
                 gnn: Callable | None, probability: Callable, known: np.ndarray):
        if variant == "with_gnn" and gnn is None:
            raise ValueError("the with_gnn stack needs the GNN's block scores")
        self.feats, self.variant, self.gnn, self.probability, self.known = feats, variant, gnn, probability, known
        self.cols = columns(variant, [*feats.names, "gnn"])
        self.width = len(feats.names) + (variant == "with_gnn")
        self.predict = {pop: Predictor(m, len(self.cols)) for pop, m in heads.items()}

    def predict_rows(self, x: np.ndarray, known: np.ndarray) -> np.ndarray:
        """Log-odds of rows ``x`` (n x width) whose sources are ``known`` (n bools) or not."""
        x = x[:, self.cols] if len(self.cols) < x.shape[1] else x
        cold = self.predict.get("cold", self.predict["known"])
        if known.all() or cold is self.predict["known"]:
            return self.predict["known"](x)
        out = np.empty(len(x), dtype=np.float64)
        out[known] = self.predict["known"](x[known]) if known.any() else 0.0
        out[~known] = cold(x[~known])
        return out

    def __call__(self, block) -> np.ndarray:
        p = self.feats.planes(block.src)
        if self.variant == "with_gnn":
            p = np.concatenate([p, gnn_prob(self.probability(self.gnn(block)))[None]], axis=0)
        x = p.reshape(self.width, -1).T
        known = np.repeat(self.known[block.src], p.shape[2])
        return self.predict_rows(x, known).reshape(p.shape[1:])


class Kept:
    """The GNN's logits of each block of a whole-space walk, read back from the walk that kept them
    (``Walk.scores``, walk order): blocks must come in walk order, as ``scoring.walk`` gives them."""

    def __init__(self, scores: np.ndarray):
        self.scores, self.at = scores, 0

    def __call__(self, block) -> np.ndarray:
        out = np.zeros(block.valid.shape, dtype=self.scores.dtype)
        n = int(block.valid.sum())
        out[block.valid] = self.scores[self.at : self.at + n]
        self.at += n
        return out


class Rows:
    """The GNN's logits of a whole-space walk (``Walk.scores``, walk order) read back for any block
    of sources: a source's candidates are contiguous there, destinations ascending, so the per-entity
    evaluation ranks exactly the rows of the whole-space list instead of scoring them again (that
    second pass held 26% of py-spy's samples of a whole HPO 2012 run). A block holding a source outside the space
    (a cold-start entity, first known after the cutoff) is scored by ``fallback``."""

    def __init__(self, scores: np.ndarray, space_src: np.ndarray, src_all: np.ndarray, fallback: Callable):
        self.scores, self.space_src, self.fallback = scores, space_src, fallback
        self.starts, self.ends = row_bounds(src_all, space_src)

    def __call__(self, block) -> np.ndarray:
        i = np.minimum(np.searchsorted(self.space_src, block.src), len(self.space_src) - 1)
        if not len(self.space_src) or (self.space_src[i] != block.src).any():
            return self.fallback(block)
        lo, n = self.starts[i], self.ends[i] - self.starts[i]
        if not np.array_equal(n, block.valid.sum(axis=1)):
            raise RuntimeError("Rows: a block's candidates differ from the whole-space walk's")
        at = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n) + np.repeat(lo, n)
        out = np.zeros(block.valid.shape, dtype=self.scores.dtype)
        out[block.valid] = self.scores[at]
        return out


class Memo:
    """A block scorer that remembers its last block: the GNN scored once for the GNN's own row and
    the stack's column of the per-entity evaluation (``entities.found_at`` asks every method for the
    same block in turn)."""

    def __init__(self, score: Callable):
        self.score, self.last, self.value = score, None, None

    def __call__(self, block) -> np.ndarray:
        if block is not self.last:
            self.last, self.value = block, self.score(block)
        return self.value
