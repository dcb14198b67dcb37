"""Retrospective evaluation: did discovery find what the literature later found?

With ``discover.cutoff=YEAR`` everything (training, calibration, evidence, candidate exclusion)
sees only the edges dated <= YEAR (``KG.until``); the answers are the relation's edges first dated
after YEAR between two nodes already known by then (an edge to an entity first mentioned later is
not a candidate of any method; those are counted apart as ``future_unreachable``). Undated edges
are neither answers nor misses: ``KG.until`` masks them, so no ranking holds them and none is
penalised for a real link whose date is unknown (counted as ``retro_undated_excluded``). A future
edge the ontology already implies at the cutoff (an ancestor of a known annotation) is no
candidate either and is counted as ``future_implied``.

Every ranking is a list over the whole candidate space (ties broken by ``space.tiebreak``), scored
by precision@K, recall@K (against all reachable future edges) and average precision (the mean,
over the future edges, of the precision at each one's position in that list). The HyGRAIL ranking
puts the candidates it accepts first: those above b* (by GNN score), then those the LLM accepted
(by its confidence), then the rest by GNN score, and the ones the LLM rejected last.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hygrail.discovery import KS
from hygrail.kg import NO_YEAR, KG, DataError, Relation


def check_cutoff(kg: KG, relation: Relation, cutoff: int) -> None:
    """One-line errors for a cutoff that cannot give a retrospective evaluation."""
    years = kg.edges["year"].to_numpy()
    dated = years[years != NO_YEAR]
    if len(dated) == 0:
        raise DataError(f"discover.cutoff={cutoff}: this KG has no edge years (every year is unknown); "
                        f"a retrospective cutoff needs dated edges (set discover.cutoff=null)")
    if cutoff < dated.min():
        raise DataError(f"discover.cutoff={cutoff} is before the first dated edge ({dated.min()}): the graph "
                        f"known by then is empty; expected a year in {dated.min()}..{dated.max() - 1}")
    rel_years = kg.relation_edges(relation)["year"].to_numpy()
    if not (rel_years > cutoff).any():
        last = rel_years[rel_years != NO_YEAR].max() if (rel_years != NO_YEAR).any() else "none"
        raise DataError(f"discover.cutoff={cutoff}: no {relation.label} edge is dated after it (last: {last}), "
                        f"so there is nothing to find; expected a year before {last}")


@dataclass(frozen=True)
class Future:
    """The relation's edges first dated after the cutoff, as candidates of the cutoff graph."""

    src: np.ndarray  # reachable ones: both ends known by the cutoff
    dst: np.ndarray
    year: np.ndarray
    unreachable: int  # an end first appears after the cutoff: no method can propose them
    implied: int = 0  # implied at the cutoff by the ontology (not candidates)
    undated: int = 0  # observed edges of unknown date between known nodes: masked, neither answers nor misses


def future_edges(kg: KG, known: KG, relation: Relation, cutoff: int) -> Future:
    edges = kg.relation_edges(relation)
    later = edges.filter(edges["year"] > cutoff)
    src, dst = later["src"].to_numpy(), later["dst"].to_numpy()
    reach = (known.degree[src] > 0) & (known.degree[dst] > 0)
    implied = reach & known.excluded(src, dst)
    ok = reach & ~implied
    undated = edges.filter(edges["year"] == NO_YEAR)
    n_undated = int(((known.degree[undated["src"].to_numpy()] > 0) & (known.degree[undated["dst"].to_numpy()] > 0)).sum())
    return Future(src[ok], dst[ok], later["year"].to_numpy()[ok], int((~reach).sum()), int(implied.sum()), n_undated)


def labels_of(src: np.ndarray, dst: np.ndarray, future: Future, n_nodes: int, same_type: bool) -> np.ndarray:
    """1 where (src[i], dst[i]) is a future edge (same-type pairs in either order)."""
    def key(s, d):
        s, d = np.asarray(s, dtype=np.int64), np.asarray(d, dtype=np.int64)
        if same_type:
            s, d = np.minimum(s, d), np.maximum(s, d)
        return s * n_nodes + d

    return np.isin(key(src, dst), key(future.src, future.dst)).astype(np.int8)


def ranking_metrics(hits: np.ndarray, n_future: int, ks=KS) -> dict[str, float]:
    """precision@K, recall@K and average precision of a ranked list (``hits[i]``: the i-th
    candidate is a future edge); recall and AP over all ``n_future`` reachable future edges."""
    hits = np.asarray(hits, dtype=np.int64)
    found = np.cumsum(hits)
    out = {}
    for k in ks:
        top = int(found[min(k, len(hits)) - 1]) if len(hits) else 0
        out[f"precision_at_{k}"] = top / k
        out[f"recall_at_{k}"] = top / n_future if n_future else 0.0
    where = np.flatnonzero(hits) + 1
    out["average_precision"] = float(np.sum(np.arange(1, len(where) + 1) / where) / n_future) if n_future else 0.0
    return out


def hygrail_order(gnn_order: np.ndarray, auto_accept: np.ndarray, llm_yes: np.ndarray, llm_no: np.ndarray,
                  confidence: np.ndarray) -> np.ndarray:
    """The HyGRAIL ranking (module docstring) as positions into the candidate arrays.

    ``gnn_order``: the GNN ranking; boolean masks over the candidates: ``auto_accept`` (above b*),
    ``llm_yes`` / ``llm_no`` (reviewed and accepted / rejected by HyGRAIL's decision rule);
    ``confidence``: the reviewer's confidence where ``llm_yes``."""
    group = np.full(len(auto_accept), 2, dtype=np.int8)
    group[llm_no] = 3
    group[llm_yes] = 1
    group[auto_accept] = 0
    position = np.empty(len(gnn_order), dtype=np.int64)
    position[gnn_order] = np.arange(len(gnn_order))
    conf = np.where(llm_yes, -np.nan_to_num(np.asarray(confidence, dtype=np.float64), nan=0.0), 0.0)
    return np.lexsort((position, conf, group))
