"""Paper §4 / App. A.1: a smaller KG that keeps node-type mix, edge-type mix and density.

Induced subgraph on a node sample in which every node of type t is included with the same
probability p_t = n_t / N_t, with n_t the type's share of ``n_nodes`` (largest remainder, so the
node-type mix is exact). Then each edge survives with probability ~ p_a * p_b ~ (n/N)^2, the same as
the fraction of node pairs kept, so density and the edge-type mix are preserved in expectation. A
snowball or random-walk sample would not do this: it collects neighbours of already-chosen nodes and
hubs, so its density grows with how local the walk is (a BFS snowball of 3,000 nodes had 29x the
source's density on a 70k-node, 2.6 M-edge heavy-tailed graph). The paper's own sample fits equal
inclusion probabilities: its Table 5 counts of the seven relations are within 2.5% of
3000*2999 / (70002*70001) times the release's one-direction row counts (CHM-PRO 621 vs 622).

What equal-probability sampling leaves is variance: in a heavy-tailed graph one hub can hold 2% of
all edges, so whether it is drawn moves the sample's edge count by half. Two remedies, both seeded:
within each type, nodes are ordered by degree and drawn systematically (one per run of N_t / n_t
consecutive nodes, from a random start), so the sample holds the source's degree profile while each
node keeps inclusion probability p_t; and ``CANDIDATES`` such draws are made and the one closest to
the source kept (|log density ratio| + total-variation distance of the edge-type mix). Nodes left
without edges are kept, as in a uniform sample.
"""

from __future__ import annotations

import logging

import numpy as np
import polars as pl

from hygrail.kg import KG, DataError

log = logging.getLogger("hygrail.data")

CANDIDATES = 16  # draws compared per call; each costs one pass over the edge list


def type_quotas(type_counts: np.ndarray, n_nodes: int) -> np.ndarray:
    """Largest-remainder apportionment of n_nodes over types in proportion to type_counts."""
    exact = n_nodes * type_counts / type_counts.sum()
    quotas = np.floor(exact).astype(np.int64)
    # Largest remainders first; ties broken by type order, so the result is deterministic.
    order = np.lexsort((np.arange(len(exact)), -(exact - quotas)))
    quotas[order[: n_nodes - quotas.sum()]] += 1
    return quotas


def sample_subgraph(kg: KG, n_nodes: int, seed: int = 42, cutoff: int | None = None,
                    keep: np.ndarray | None = None) -> KG:
    """Induced subgraph on ``n_nodes`` nodes; node ids are renumbered keeping the source order.

    ``cutoff``: the nodes are drawn by what was known at the end of that year (``KG.until``: its
    degrees, density and edge-type mix), so that a retrospective evaluation's sample does not favour
    nodes that became hubs later; the subgraph still holds every edge among them, later ones too
    (the answers). ``keep``: node ids kept whatever the draw (a discovery's named entities and their
    neighbours, issue #36), on top of the ``n_nodes`` drawn; how many that added is the result's
    ``kept_in_sample``."""
    if n_nodes < 1:
        raise DataError(f"subgraph_nodes={n_nodes}; expected a positive number of nodes")
    if n_nodes >= kg.num_nodes:
        log.info("subgraph_nodes=%d >= %d nodes in the KG: keeping the whole KG", n_nodes, kg.num_nodes)
        return kg
    drawn = draw_nodes(kg if cutoff is None else kg.until(cutoff), n_nodes, seed)
    if keep is None or not len(keep):
        return induced_subgraph(kg, drawn)
    out = induced_subgraph(kg, np.union1d(drawn, keep))
    out.kept_in_sample = out.num_nodes - len(drawn)
    log.info("subgraph: %d named entities' nodes and neighbours kept beyond the %d drawn", out.kept_in_sample, n_nodes)
    return out


def draw_nodes(kg: KG, n_nodes: int, seed: int) -> np.ndarray:
    """The sorted node ids of the best of ``CANDIDATES`` systematic draws (module docstring)."""
    rng = np.random.default_rng(seed)
    quotas = type_quotas(np.bincount(kg.node_types, minlength=len(kg.schema.node_types)), n_nodes)
    by_type = [np.flatnonzero(kg.node_types == t) for t in range(len(quotas))]
    if kg.num_edges == 0:
        return _systematic_draw(by_type, quotas, kg.degree, rng)
    u, v = kg.edges["u"].to_numpy(), kg.edges["v"].to_numpy()
    n_types = len(kg.edge_types)
    source_mix = np.bincount(kg.edge_type_ids, minlength=n_types) / kg.num_edges
    log_source_density = np.log(kg.num_edges / (kg.num_nodes * (kg.num_nodes - 1)))
    sample_pairs = max(n_nodes * (n_nodes - 1), 1)
    best, best_score = None, np.inf
    for _ in range(CANDIDATES):
        keep = _systematic_draw(by_type, quotas, kg.degree, rng)
        inside = np.zeros(kg.num_nodes, dtype=bool)
        inside[keep] = True
        kept = np.bincount(kg.edge_type_ids[inside[u] & inside[v]], minlength=n_types)
        # +1 keeps an edgeless draw finite (and ranked worst) instead of log(0).
        density_gap = abs(np.log((kept.sum() + 1) / sample_pairs) - log_source_density)
        mix_gap = 0.5 * np.abs(kept / max(kept.sum(), 1) - source_mix).sum()
        if density_gap + mix_gap < best_score:
            best, best_score = keep, density_gap + mix_gap
    return best


def _systematic_draw(by_type, quotas, degree, rng) -> np.ndarray:
    """Per type, one node from each run of N_t / n_t nodes in degree order (random ties, random start)."""
    chosen = []
    for members, q in zip(by_type, quotas):
        if q == 0:
            continue
        ordered = members[np.lexsort((rng.random(len(members)), degree[members]))]
        step = len(members) / q
        chosen.append(ordered[np.floor(step * (rng.random() + np.arange(q))).astype(np.int64)])
    return np.sort(np.concatenate(chosen))


def induced_subgraph(kg: KG, keep: np.ndarray) -> KG:
    """The KG restricted to the sorted node ids ``keep`` and the edges (masked pairs, hierarchy)
    among them."""
    new_id = np.full(kg.num_nodes, -1, dtype=np.int64)
    new_id[keep] = np.arange(len(keep))
    u, v = new_id[kg.edges["u"].to_numpy()], new_id[kg.edges["v"].to_numpy()]
    inside = (u >= 0) & (v >= 0)
    edges = kg.edges.filter(inside).with_columns(u=u[inside], v=v[inside])
    mu, mv = new_id[kg.masked["u"].to_numpy()], new_id[kg.masked["v"].to_numpy()]
    m_in = (mu >= 0) & (mv >= 0)
    masked = pl.DataFrame({"u": mu[m_in], "v": mv[m_in]})
    # A closed hierarchy stays closed on a node subset: an ancestor reached through a dropped node is kept.
    ancestors = None if kg.ancestors is None else kg.ancestors[keep][:, keep]
    out = KG(kg.schema, kg.nodes[keep].drop("id"), edges, masked, ancestors)
    out.source_nodes = kg.nodes.select("name", "type") if kg.source_nodes is None else kg.source_nodes
    out.created, out.as_of = (None if kg.created is None else kg.created[keep]), kg.as_of
    return out
