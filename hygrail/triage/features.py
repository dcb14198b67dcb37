"""Graph inputs of the triage GNNs (paper App. B.1), built from a KG (normally ``split.train_graph``).

- ``edge_weights``: support counts as log(1+c), min-max normalised within each edge type.
- ``hetero_graph``: a PyG ``HeteroData`` whose node types are the schema's node types and whose
  edge types are the KG's edge types in both directions (``rev_`` names for the reverse).
- ``relational_graph``: the same edges in one global node-id space with relation-type ids (R-GCN).
- ``target_edge_positions`` / ``drop_target_edges``: hide supervised positives from message passing.
- ``pair_features``: R-GCN's six local features of a candidate pair; ``BlockPairFeatures``: the
  same for every pair of a block (sources x destinations), for scoring a whole candidate space.
- ``node_inputs`` / ``link_features``: what the ``*_plus`` backbones read instead of free
  embeddings (node statistics and name embeddings, once per graph) and beside the endpoint states
  (typed path counts of a pair, by sparse products batched over source nodes).
"""

from __future__ import annotations

import copy
import logging
import weakref

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import HeteroData

from hygrail.kg import KG

log = logging.getLogger(__name__)

N_PAIR_FEATURES = 6


def edge_weights(kg: KG) -> np.ndarray:
    """log(1+c) min-max normalised per edge type, one value in [0, 1] per KG edge.

    As in the paper the weakest edge of a type gets 0 (GraphConv then passes no message along
    it; the edge still counts for the unweighted structural features). An edge type whose
    edges all have the same count has no spread to normalise: its edges all get weight 1.
    """
    x = np.log1p(kg.counts.astype(np.float64))
    t = kg.edge_type_ids
    lo = np.full(len(kg.edge_types), np.inf)
    hi = np.full(len(kg.edge_types), -np.inf)
    np.minimum.at(lo, t, x)
    np.maximum.at(hi, t, x)
    span = (hi - lo)[t]
    return np.where(span > 0, (x - lo[t]) / np.where(span > 0, span, 1.0), 1.0)


def local_index(kg: KG) -> np.ndarray:
    """Position of each node among the nodes of its type (HeteroData indexes nodes per type)."""
    out = np.empty(kg.num_nodes, dtype=np.int64)
    for t in kg.schema.node_types:
        ids = kg.nodes_of_type(t)
        out[ids] = np.arange(len(ids))
    return out


def hetero_graph(kg: KG, x: np.ndarray | None = None, edge_types: tuple[str, ...] | None = None) -> HeteroData:
    """Message-passing graph for HeteroConv / HGT.

    Edge type "A-B" becomes (A, "A-B", B) and (B, "rev_A-B", A); a same-type edge type "A-A" is one
    relation holding both directions (its reverse would be the same edge set). Each edge type
    carries ``edge_weight`` (``edge_weights``); ``data.local_index`` maps KG node ids to per-type
    positions and ``data[t].node_id`` back. Node types without any edge are left out. ``x``: an
    optional (N, F) node-input matrix over KG node ids, stored per type as ``data[t].x``. An edge of a
    supplied node (``KG.describe``: a new material's composition) carries messages into it only.
    ``edge_types``: the edge types a trained model has weights for (its training graph's), in that order, an
    absent one kept empty; default ``kg``'s own. A graph read at an earlier date may lack a type, and R-GCN
    numbers its relations by position, HeteroConv keys its convolutions by type.
    """
    data = HeteroData()
    types = kg.schema.node_types
    local = local_index(kg)
    # A node type without edges gets no messages (HeteroConv drops it, HGTConv fails on it).
    etypes = kg.edge_types if edge_types is None else tuple(edge_types)
    if unknown := sorted(set(kg.edge_types) - set(etypes)):
        log.warning("edge types %s are not among the model's %s: it has no weights for them, they pass no messages",
                    unknown, list(etypes))
    with_edges = {t for etype in etypes for t in etype.partition("-")[::2]}
    for t in types:
        if t in with_edges:
            ids = kg.nodes_of_type(t)
            data[t].node_id = torch.from_numpy(ids)
            data[t].num_nodes = len(ids)
            if x is not None:
                data[t].x = torch.from_numpy(np.ascontiguousarray(x[ids], dtype=np.float32))
    u, v = kg.edges["u"].to_numpy(), kg.edges["v"].to_numpy()
    w = edge_weights(kg).astype(np.float32)
    supplied = np.zeros(kg.num_nodes, dtype=bool)
    supplied[kg.supplied] = True
    ids = {etype: k for k, etype in enumerate(kg.edge_types)}
    for etype in etypes:
        a, _, b = etype.partition("-")
        sel = kg.edge_type_ids == ids.get(etype, -1)
        # Orient each edge so that its source has type a (u < v says nothing about types).
        u_is_a = kg.node_types[u[sel]] == types.index(a)
        src = np.where(u_is_a, u[sel], v[sel])
        dst = np.where(u_is_a, v[sel], u[sel])
        fwd = np.stack([local[src], local[dst]])
        # a supplied node (KG.describe) receives messages and sends none: the graph's states stay as they were
        send, back = ~(supplied[src] & ~supplied[dst]), ~(supplied[dst] & ~supplied[src])
        if a == b:
            data[a, etype, a].edge_index = torch.from_numpy(np.concatenate([fwd[:, send], fwd[::-1][:, back]], axis=1))
            data[a, etype, a].edge_weight = torch.from_numpy(np.concatenate([w[sel][send], w[sel][back]]))
        else:
            data[a, etype, b].edge_index = torch.from_numpy(np.ascontiguousarray(fwd[:, send]))
            data[a, etype, b].edge_weight = torch.from_numpy(w[sel][send])
            data[b, f"rev_{etype}", a].edge_index = torch.from_numpy(np.ascontiguousarray(fwd[::-1][:, back]))
            data[b, f"rev_{etype}", a].edge_weight = torch.from_numpy(w[sel][back])
    data.local_index = torch.from_numpy(local)
    return data


def relational_graph(data: HeteroData) -> tuple[torch.Tensor, torch.Tensor]:
    """(edge_index over KG node ids, relation id per edge) for R-GCN: each directed edge type of
    ``hetero_graph`` is one relation."""
    index, rel = [], []
    for r, (s, rel_name, d) in enumerate(data.edge_types):
        ei = data[s, rel_name, d].edge_index
        index.append(torch.stack([data[s].node_id[ei[0]], data[d].node_id[ei[1]]]))
        rel.append(torch.full((ei.size(1),), r, dtype=torch.long))
    return torch.cat(index, dim=1), torch.cat(rel)


def _target_types(data: HeteroData, src_type: str, dst_type: str) -> tuple[tuple, tuple | None]:
    """(forward edge type, reverse edge type or None for a same-type relation) of a relation."""
    for key in data.edge_types:
        s, rel, d = key
        if not rel.startswith("rev_") and {s, d} == {src_type, dst_type}:
            return key, (None if s == d else (d, f"rev_{rel}", s))
    raise KeyError(f"no {src_type}-{dst_type} edges in the message-passing graph")


def target_edge_positions(data: HeteroData, src_type: str, dst_type: str, src: np.ndarray, dst: np.ndarray) -> torch.Tensor:
    """Position of each pair's edge among the forward edges of its edge type, -1 if not an edge."""
    fwd, rev = _target_types(data, src_type, dst_type)
    ei = data[fwd].edge_index
    n_fwd = ei.size(1) if rev is not None else ei.size(1) // 2  # same type: second half mirrors the first
    li = data.local_index
    s, d = li[torch.as_tensor(np.array(src))], li[torch.as_tensor(np.array(dst))]  # copies: polars views are read-only
    if fwd[0] != src_type:  # the edge type is named the other way round from the relation
        s, d = d, s
    base = int(li.max()) + 1
    sorted_keys, order = torch.sort(ei[0, :n_fwd] * base + ei[1, :n_fwd])  # keys are unique
    out = torch.full((len(s),), -1, dtype=torch.long)
    for a, b in ((s, d), (d, s)) if rev is None else ((s, d),):
        q = a * base + b
        at = torch.searchsorted(sorted_keys, q).clamp_max(n_fwd - 1)
        found = (sorted_keys[at] == q) & (out < 0)
        out[found] = order[at][found]
    return out


def drop_target_edges(data: HeteroData, src_type: str, dst_type: str, positions: torch.Tensor) -> HeteroData:
    """Shallow copy of ``data`` without the given target edges (positions from
    ``target_edge_positions``), in both directions; all other tensors are shared."""
    fwd, rev = _target_types(data, src_type, dst_type)
    out = copy.copy(data)
    n = data[fwd].edge_index.size(1)
    keep = torch.ones(n if rev is not None else n // 2, dtype=torch.bool)
    keep[positions] = False
    if rev is None:
        keep = torch.cat([keep, keep])
    for key in (fwd, rev) if rev is not None else (fwd,):
        out[key].edge_index = data[key].edge_index[:, keep]
        out[key].edge_weight = data[key].edge_weight[keep]
    return out


def pair_features(kg: KG, src: np.ndarray, dst: np.ndarray, chunk: int = 65_536) -> np.ndarray:
    """R-GCN's six local features per pair (n, 6), raw (the model standardises them):

    log(1+weighted degree) of src and of dst, weighted two-hop signal sum_z w(u,z) w(z,v),
    log(1+common neighbours), Jaccard of the neighbour sets, Adamic-Adar sum_z 1/log deg(z).

    The pair's own edge, if the graph has it (a training positive), is left out of the degrees
    and of the Jaccard union, so training positives look like the held-out val/test positives
    whose edges the training graph lacks. Common neighbours, two-hop and Adamic-Adar never
    involve that edge (no self-loops), so they need no correction.

    Computed ``chunk`` pairs at a time: the sparse row products grow with the pairs (1 M data=hpo
    training pairs: 0.80 GB above the RSS before at once, 0.19 GB and 3.4 times faster in chunks of
    65,536; measured once), and a pair's features read its own two rows only, so chunks change no value.
    """
    # Copies: scipy's fancy indexing fails on read-only arrays such as polars' to_numpy() views.
    src, dst = np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)
    structure = _pair_structure(kg)
    return np.concatenate([_pair_chunk(kg, structure, src[lo : lo + chunk], dst[lo : lo + chunk])
                           for lo in range(0, max(len(src), 1), chunk)])


def _pair_chunk(kg: KG, structure: tuple, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``pair_features`` of some pairs, given ``_pair_structure(kg)``."""
    binary, weighted, deg, wdeg, inv_log_deg = structure
    own = kg.has_edges(src, dst).astype(np.float64)
    own_w = np.asarray(weighted[src, dst]).ravel() if len(src) else np.zeros(0)
    common = binary[src].multiply(binary[dst]).tocsr()
    n_common = np.asarray(common.sum(axis=1)).ravel()
    two_hop = np.asarray(weighted[src].multiply(weighted[dst]).sum(axis=1)).ravel()
    adamic_adar = common @ inv_log_deg
    return _six(wdeg[src], wdeg[dst], deg[src], deg[dst], own, own_w, n_common, two_hop, adamic_adar)


def _six(wdeg_s, wdeg_d, deg_s, deg_d, own, own_w, n_common, two_hop, adamic_adar) -> np.ndarray:
    """The six features from their parts (arrays broadcasting to one shape), stacked last."""
    union = (deg_s - own) + (deg_d - own) - n_common
    jaccard = np.divide(n_common, union, out=np.zeros_like(union), where=union > 0)
    parts = [np.log1p(wdeg_s - own_w), np.log1p(wdeg_d - own_w), two_hop, np.log1p(n_common), jaccard, adamic_adar]
    return np.stack(np.broadcast_arrays(*parts), axis=-1).astype(np.float32)


def _pair_structure(kg: KG) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray, np.ndarray, np.ndarray]:
    """(binary adjacency, ``edge_weights`` adjacency, degree, weighted degree, 1/log degree) of the
    graph: what ``pair_features`` reads."""
    adj = kg.adjacency
    binary = sp.csr_matrix((np.ones_like(adj.data, dtype=np.float64), adj.indices, adj.indptr), shape=adj.shape)
    weighted = sp.csr_matrix((edge_weights(kg)[adj.data - 1], adj.indices, adj.indptr), shape=adj.shape)
    deg = kg.degree.astype(np.float64)
    wdeg = np.asarray(weighted.sum(axis=1)).ravel()
    # A common neighbour has degree >= 2, so log(deg) > 0.
    inv_log_deg = np.where(deg > 1, 1.0 / np.log(np.maximum(deg, 2.0)), 0.0)
    return binary, weighted, deg, wdeg, inv_log_deg


class BlockPairFeatures:
    """``pair_features`` of every pair (s, d) of a block, s in ``src`` and d in the fixed ``dst``:
    ``self(src)[i, j] == pair_features(kg, [src[i]], [dst[j]])[0]``.

    Per-pair fancy indexing reads two sparse rows per pair; a block reads each source row once and
    gets the common-neighbour counts, Adamic-Adar and two-hop sums of all its pairs from two sparse
    products with the destinations' columns (prepared once here), so the cost per block is the
    number of 2-paths from its sources into the destinations, not pairs x degree.
    """

    def __init__(self, kg: KG, dst: np.ndarray):
        binary, weighted, self.deg, self.wdeg, inv_log_deg = _pair_structure(kg)
        self.dst = np.array(dst, dtype=np.int64)
        self.binary, self.weighted = binary, weighted
        to_dst = binary[:, self.dst].tocsr()  # N x D: who neighbours each destination
        # [common | Adamic-Adar] from one product: the second half's rows are scaled by 1/log deg(z).
        self.right_b = sp.hstack([to_dst, sp.diags(inv_log_deg) @ to_dst], format="csr")
        self.right_w = weighted[:, self.dst].tocsr()

    def __call__(self, src: np.ndarray) -> np.ndarray:
        src = np.array(src, dtype=np.int64)
        n_dst = len(self.dst)
        rows_b, rows_w = self.binary[src], self.weighted[src]
        both = (rows_b @ self.right_b).toarray()
        n_common, adamic_adar = both[:, :n_dst], both[:, n_dst:]
        two_hop = (rows_w @ self.right_w).toarray()
        own = rows_b[:, self.dst].toarray()  # the pair's own edge (a training positive), as in pair_features
        own_w = rows_w[:, self.dst].toarray()
        return _six(self.wdeg[src][:, None], self.wdeg[self.dst][None, :], self.deg[src][:, None],
                    self.deg[self.dst][None, :], own, own_w, n_common, two_hop, adamic_adar)


# -- inputs of the *_plus backbones ---------------------------------------------------------------
def node_statistics(kg: KG) -> np.ndarray:
    """(N, 5 + T) standardised statistics per node, from the graph alone (T = schema node types).

    log(1+degree), log(1+strength) (strength = sum of log(1+count) over the node's edges),
    log(1+number of neighbours of each node type), mean log(1+count) of its edges, and the first
    and last year of its edges (0 where no edge has a year). Each column is z-scored over the
    nodes (a constant column becomes 0). Cost: one pass over the edges.
    """
    adj = kg.adjacency
    n, n_types = kg.num_nodes, len(kg.schema.node_types)
    rows = np.repeat(np.arange(n), np.diff(adj.indptr))
    edge = adj.data - 1
    logc = np.log1p(kg.counts[edge].astype(np.float64))
    deg = kg.degree.astype(np.float64)
    strength = np.bincount(rows, weights=logc, minlength=n)
    by_type = np.bincount(rows * n_types + kg.node_types[adj.indices], minlength=n * n_types).reshape(n, n_types)
    year = kg.edges["year"].to_numpy()[edge].astype(np.float64)
    known = year >= 0
    first = np.full(n, np.inf)
    last = np.full(n, -np.inf)
    np.minimum.at(first, rows[known], year[known])
    np.maximum.at(last, rows[known], year[known])
    dated = np.isfinite(first)
    # undated nodes sit at the middle of the graph's own years (a supplied node's do not move it)
    own = known & ~np.isin(rows, kg.supplied)
    mid = float(np.median(year[own])) if own.any() else 0.0
    cols = np.column_stack(
        [
            np.log1p(deg),
            np.log1p(strength),
            np.log1p(by_type),
            np.divide(strength, deg, out=np.zeros(n), where=deg > 0),
            np.where(dated, first, mid),
            np.where(dated, last, mid),
        ]
    )
    # standardised as the graph without the descriptions (KG.describe) would be, where a supplied node has no edge:
    # a description does not move the other nodes' inputs
    ref = cols.copy()
    ref[kg.supplied] = 0.0
    ref[kg.supplied, -2:] = mid
    mean, std = ref.mean(0), ref.std(0)
    return np.divide(cols - mean, std, out=np.zeros_like(cols), where=std > 0).astype(np.float32)


def node_inputs(kg: KG, names: np.ndarray | None = None) -> np.ndarray:
    """``node_statistics`` of ``kg``, with the (N, d) unit name embeddings appended when given.
    The name embeddings are the last d columns (the plus decoders read their cosine from there)."""
    stats = node_statistics(kg)
    return stats if names is None else np.hstack([stats, names.astype(np.float32)])


def link_feature_names(kg: KG) -> tuple[str, ...]:
    typed = tuple(f"common_via_{t}" for t in kg.schema.node_types)
    return ("log_deg_src", "log_deg_dst", "common_neighbours", "adamic_adar", "resource_allocation",
            "jaccard", "weighted_two_hop", "paths_3") + typed  # fmt: skip


def link_features(kg: KG, src: np.ndarray, dst: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """(n, 8 + T) structural features of the pairs (src[i], dst[i]) on ``kg``, log-scaled counts
    (names in ``link_feature_names``): endpoint degrees, common neighbours (all, and per node type
    of the middle node: the 2-hop metapath counts), Adamic-Adar, resource allocation, Jaccard, the
    count-weighted two-hop signal sum_z log(1+c(u,z)) log(1+c(z,v)), and the number of 3-step
    walks u-a-b-v (the simple 3-paths when u, v are not adjacent).

    Every feature is a sparse product A[S] M A[:, D] over sources S x destinations D
    (``_link_products``), computed for batches of ``batch_size`` distinct sources against the
    destinations they are paired with and read at the pairs; ``link_blocks`` returns whole
    blocks (a candidate space scored source batch by source batch). Cost: the products grow with
    the sources' 2-hop neighbourhoods and the destinations' degrees, not with |S| x |D|; measured
    in bench_triage.py --feature-cost. The pair's own edge, if ``kg`` has it, is not removed here:
    training pairs are scored on a graph without their edge (``hygrail.triage.train.FoldPairs``),
    as val/test pairs are.
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if src.shape != dst.shape:
        raise ValueError(f"src and dst differ in length: {len(src)} vs {len(dst)}")
    out = np.zeros((len(src), len(link_feature_names(kg))), dtype=np.float32)
    if len(src) == 0:
        return out
    sources, row_of = np.unique(src, return_inverse=True)
    order = np.argsort(row_of, kind="stable")
    mats = _link_matrices(kg)
    # Products cost ~ the block, not the pairs: when each source meets few of the destinations
    # (random pairs), fewer sources per batch keep the block close to the pairs it serves.
    density = len(src) / len(sources) / len(np.unique(dst))
    batch_size = max(1, round(batch_size * min(1.0, 8 * density)))
    rows = row_of[order]  # once: gathered anew for every batch, it was quadratic in the pairs (61% of an epoch's
    # link features on whole HPO, py-spy, issue #57)
    for s in range(0, len(sources), batch_size):
        lo, hi = np.searchsorted(rows, [s, s + batch_size])
        sel = order[lo:hi]
        targets, col = np.unique(dst[sel], return_inverse=True)
        row = row_of[sel] - s
        products, deg_s, deg_d = _link_products(sources[s : s + batch_size], targets, mats)
        dense = len(sources[s : s + batch_size]) * len(targets) <= 4_000_000  # reading a dense block is faster
        vals = [p.toarray()[row, col] if dense else np.asarray(p[row, col]).ravel() for p in products]
        out[sel] = _finish(vals, deg_s[row], deg_d[col])
    return out


def link_blocks(kg: KG, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """(|S|, |D|, 8 + T) ``link_features`` of every pair in sources x targets."""
    products, deg_s, deg_d = _link_products(np.asarray(sources), np.asarray(targets), _link_matrices(kg))
    shape = (len(sources), len(targets))
    vals = [p.toarray().ravel() for p in products]
    feats = _finish(vals, np.repeat(deg_s, shape[1]), np.tile(deg_d, shape[0]))
    return feats.reshape(*shape, -1)


class LinkBlocks:
    """``link_blocks`` against a fixed ``dst``: what ``BlockPairFeatures`` is to ``pair_features``
    (a candidate space scored block by block)."""

    def __init__(self, kg: KG, dst: np.ndarray):
        self.kg, self.dst = kg, np.array(dst, dtype=np.int64)

    def __call__(self, src: np.ndarray) -> np.ndarray:
        return link_blocks(self.kg, np.array(src, dtype=np.int64), self.dst)


def _link_products(sources: np.ndarray, targets: np.ndarray, m: dict) -> tuple[list, np.ndarray, np.ndarray]:
    """Sparse |S| x |D| products: typed common neighbours (T), Adamic-Adar, resource allocation,
    weighted two-hop, 3-walks; and the two sides' degrees."""
    b, w = m["b"], m["w"]
    left = b[sources]
    right = b[targets].T.tocsr()  # A[:, D] = A[D]^T (A symmetric)
    typed = [(left @ mask) @ right for mask in m["type_masks"]]
    others = [(left @ m["inv_log_deg"]) @ right, (left @ m["inv_deg"]) @ right,
              w[sources] @ w[targets].T.tocsr(), (left @ b) @ right]  # fmt: skip
    return typed + others, m["deg"][sources], m["deg"][targets]


def _finish(vals: list[np.ndarray], deg_s: np.ndarray, deg_d: np.ndarray) -> np.ndarray:
    """Columns in ``link_feature_names`` order from the products' values at the pairs."""
    n_types = len(vals) - 4
    typed, (aa, ra, two_hop, walks3) = vals[:n_types], vals[n_types:]
    cn = np.sum(typed, axis=0)
    union = deg_s + deg_d - cn
    cols = [np.log1p(deg_s), np.log1p(deg_d), np.log1p(cn), aa, ra,
            np.divide(cn, union, out=np.zeros_like(cn), where=union > 0), np.log1p(two_hop), np.log1p(walks3),
            *(np.log1p(t) for t in typed)]  # fmt: skip
    return np.column_stack(cols).astype(np.float32)


# Built once per graph object: training computes fresh negatives' features on its fold graphs every
# step, and rebuilding took 1.8 ms of a 7.4 ms 64-pair call (10 of 17 ms at data.scale=5; measured).
_LINK_MATRICES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _link_matrices(kg: KG) -> dict:
    """Binary and log-count adjacency, degrees, and the diagonal weightings of ``kg`` (cached)."""
    if kg not in _LINK_MATRICES:
        _LINK_MATRICES[kg] = _build_link_matrices(kg)
    return _LINK_MATRICES[kg]


def _build_link_matrices(kg: KG) -> dict:
    b, _, deg, _, inv_log_deg = _pair_structure(kg)
    adj = kg.adjacency
    # log(1+count) weights here, where R-GCN's features use the per-type normalised edge_weights
    w = sp.csr_matrix((np.log1p(kg.counts[adj.data - 1]).astype(np.float64), adj.indices, adj.indptr), shape=adj.shape)
    n_types = len(kg.schema.node_types)
    # The diagonals as CSR: a product with a DIA matrix converts it to CSR first, every time (8% of an
    # epoch's link features on whole HPO, py-spy; issue #57). Same matrices, same products.
    return {
        "b": b,
        "w": w,
        "deg": deg,
        "inv_log_deg": sp.diags(inv_log_deg).tocsr(),
        "inv_deg": sp.diags(np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)).tocsr(),
        "type_masks": [sp.diags((kg.node_types == t).astype(np.float64)).tocsr() for t in range(n_types)],
    }
