"""The novelty view of a ranking: does it find anything beyond the hubs?

Why: on literature graphs the likeliest next links join the most studied entities (preferential
attachment is hard to beat: Krenn et al., Science4Cast, Nature Machine Intelligence 2023), so a
list ranked by plausibility alone is mostly pairs of hubs a specialist would have guessed. Sourati
& Evans (Nature Human Behaviour 2023, arXiv:2306.01495) rank "alien" hypotheses by mixing a
plausibility term with how far a pair lies from what people already connect, with a weight β on
the second; they measured the distance as expert-accessible random walks over papers and authors,
which a KG without authors does not have, so here the graph distance between the two entities
stands in for it. Four quantities, all on the graph the rankings read (the split's training
graph, every edge type, unweighted):

- ``distance``: the shortest-path length between u and v, capped at ``discover.distance_cap``
  (pairs farther apart, or in different components, get the cap). A candidate is no edge, so >= 2.
- ``novelty`` (novelty-aware score) = (1 - β) r(plausibility) + β r(distance), r the rank
  normalisation over the ranked population (``rank_normalise``); β = ``discover.novelty_beta``
  (0.25 by default: issue #28 takes 0.2-0.3 from the paper; not re-derived here).
- ``degree_adjusted`` = r(plausibility) - r(d(u) d(v)): how much higher the model ranks a pair
  than its degree product does (0: exactly where preferential attachment puts it; > 0: above).
  A difference of ranks needs no fit and means the same for any model's score scale.
- ``hub_pair``: both ends are hubs, i.e. each has a degree >= the ``discover.hub_percentile``-th
  percentile (numpy's linear interpolation) of the degrees of the graph's nodes of its type that
  have an edge (per type: a property's degrees and a material's differ in scale).

The cards show them among the listed hypotheses (r over the list); the retrospective evaluation
ranks the whole candidate space by ``novelty`` and ``degree_adjusted`` beside the other rankings
(r over every candidate) and reports each ranking's precision per degree-product bucket
(``retro.bucket_table``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse.csgraph as csgraph
from scipy.stats import rankdata

from hygrail.kg import KG

DISTANCE_ENTRIES = 1 << 22  # sources x nodes per shortest-path call (32 MB of float64)


def rank_normalise(x: np.ndarray) -> np.ndarray:
    """Ranks from 1 (lowest) to n, ties at their average rank, divided by n: in (0, 1], 1 for the
    largest, scale-free (a probability, a logit and a path count compare)."""
    x = np.asarray(x, dtype=np.float64)
    return rankdata(x, method="average") / len(x) if len(x) else x


def distances(graph: KG, src: np.ndarray, dst: np.ndarray, cap: int) -> np.ndarray:
    """Shortest-path length u..v per pair on ``graph`` (unweighted, any edge type), capped at ``cap``:
    one breadth-first search per distinct source, bounded by the cap, in chunks of sources."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    out = np.full(len(src), float(cap))
    sources, inverse = np.unique(src, return_inverse=True)
    step = max(1, DISTANCE_ENTRIES // max(1, graph.num_nodes))
    for lo in range(0, len(sources), step):
        dist = csgraph.dijkstra(graph.adjacency, directed=False, indices=sources[lo : lo + step], unweighted=True,
                                limit=cap)
        sel = (inverse >= lo) & (inverse < lo + step)
        out[sel] = np.minimum(dist[inverse[sel] - lo, dst[sel]], cap)
    return out


def hub_pairs(graph: KG, src: np.ndarray, dst: np.ndarray, percentile: float) -> np.ndarray:
    """Whether both ends of each pair are hubs of their node type (module docstring)."""
    deg = graph.degree
    cut = np.full(graph.num_nodes, np.inf)
    for t in range(len(graph.schema.node_types)):
        nodes = np.flatnonzero((graph.node_types == t) & (deg > 0))
        if len(nodes):
            cut[graph.node_types == t] = np.percentile(deg[nodes], percentile)
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    return (deg[src] >= cut[src]) & (deg[dst] >= cut[dst])


def novelty_scores(plausibility: np.ndarray, distance: np.ndarray, degree_product: np.ndarray,
                   beta: float) -> tuple[np.ndarray, np.ndarray]:
    """(novelty-aware score, degree-adjusted score) of a population of pairs (module docstring)."""
    r = rank_normalise(plausibility)
    return (1 - beta) * r + beta * rank_normalise(distance), r - rank_normalise(degree_product)
