"""The retrospective evaluation of ``task=discover`` (with a cutoff): every ranking of the whole
candidate space against the edges dated after the cutoff, on ``retro``'s grid (``evaluate``);
HyGRAIL's list as a whole-space score (``hygrail_scores``); one row per answer with each method's
place in its list (``answers_table``), where ``bench/error_analysis.py`` reads who loses what."""

from __future__ import annotations

import dataclasses

import numpy as np
from omegaconf import DictConfig
import polars as pl

from hygrail.baselines.structural import relation_degree
from hygrail.discovery import entities, entity_retro, rerank, stack
from hygrail.discovery.novelty import distances, novelty_scores
from hygrail.discovery.retro import answers, degree_mask, margins, paired_precision, retrospective
from hygrail.discovery.scoring import GNNBlocks, PreferentialAttachment, TSHBlocks, walk
from hygrail.discovery.space import CandidateSpace, tiebreak
from hygrail.review import calibrate
from hygrail.triage.routing import Band, route


# Rankings of the retrospective evaluation, in the order the tables list them (key: MLflow's retro_<key>_*).
METHODS = {"gnn": "GNN", "hygrail": "HyGRAIL", "tsh": "TSH", "pa": "Preferential attachment", "cn": "Common neighbours",
           "paths3": "3-paths", "novelty": "GNN novelty-aware", "degree_adjusted": "GNN degree-adjusted"}


def evaluate(cfg: DictConfig, d: dict, split, space: CandidateSpace, gnn: GNNBlocks, band: Band, w, reviewed: list,
             decisions: np.ndarray, future, src: np.ndarray, dst: np.ndarray, fit=None,
             fitted: "stack.StackFit | None" = None, heads: "rerank.Heads | None" = None):
    """Every ranking of the whole candidate space under every condition of the retrospective grid
    (``retro``), exactly over every candidate: (``retro.Retrospective``, the headline's precision@k
    curves, metrics, the per-entity known rows' hits counted on the same vectors: row ->
    ``entity_retro.RowHits``, on the headline's horizon and on any later year; None for a same-type
    relation). The rankings, all read from the cut graph (``space.kg``), as the GNN's: the
    GNN, HyGRAIL (in ``discover.order``'s order, the list the report shows; ``fit``: the review rule
    as fit, which orders the accepted under ``reviewed``; paired against the GNN at ``ks`` and K =
    the review budget, ``retro.paired_precision``), TSH, preferential attachment, common neighbours
    (every edge type), for a relation between two node types the 3-path count (its common
    neighbours *in the relation* are 0 by construction: ``baselines.structural``), every baseline of
    ``discover.entity_baselines`` over the whole space too (popularity, the relation's popularity
    (e.g. precursor popularity), compatible popularity, the learned baselines), and, up to
    ``discover.eval_max_pairs`` candidates, the GNN's novelty-aware and degree-adjusted scores
    (``novelty``: a graph distance per pair, too slow beyond). Each method is scored by one walk
    when its turn comes and freed after (``retro.retrospective``). ``src``, ``dst``: ``space.pairs()``;
    ``heads``: where the stack's heads are kept for the tuned reviewer (``rerank.Heads``)."""
    seed, block = int(cfg.seed), int(d["block_pairs"])
    graph = space.kg

    def walked(make, label):
        return lambda: walk(space, make(), 1, seed, block, keep=True, desc=label).scores

    moved = {}  # hygrail_scores: where HyGRAIL's list first differs from the GNN's
    scores = {"gnn": w.scores,
              "hygrail": lambda: hygrail_scores(cfg, d, space, src, dst, gnn, band, w, reviewed, decisions, fit, moved),
              "tsh": walked(lambda: TSHBlocks(split, d["tsh"], space), "TSH"),
              "pa": walked(lambda: PreferentialAttachment(graph, space), "preferential attachment"),
              "cn": walked(lambda: entities.common_neighbours(graph, space, {}), "common neighbours")}
    if not space.same_type:
        scores["paths3"] = walked(lambda: entities.paths3(graph, space, {}), "3-paths")
    for b in entities.whole_space_baselines(d):
        scores[b] = walked(lambda b=b: entities.BASELINES[b][1](graph, space, entities.baseline_options(d)),
                           entities.BASELINES[b][0])
    for v in d.get("stack") or []:  # the GNN's kept logits, block by block in walk order
        scores[f"stack_{v}"] = walked(lambda v=v: fitted.scorer(v, space, stack.Kept(w.scores)), stack.VARIANTS[v])
    if space.size <= int(d["eval_max_pairs"]):
        pa = walk(space, PreferentialAttachment(graph, space), 1, seed, block, keep=True).scores
        scores["novelty"], scores["degree_adjusted"] = novelty_scores(
            w.scores, distances(graph, src, dst, int(d["distance_cap"])), pa, float(d["novelty_beta"]))
    labels = METHODS | {b: entities.BASELINES[b][0] for b in entities.whole_space_baselines(d)} | \
        {f"stack_{v}": stack.VARIANTS[v] for v in d.get("stack") or []}
    scores = {labels[k]: v for k, v in scores.items()}
    pos = space.positions(src, dst, future.src, future.dst)
    if (pos < 0).any():
        raise RuntimeError(f"{int((pos < 0).sum())} reachable future edges are no candidates of the cut graph")
    counted = bool((space.kg.relation_edges(space.relation)["count"] > 1).any() or (future.count > 1).any())
    grid = {"horizons": d["horizons"], "min_degrees": d["min_degrees"],
            "min_counts": d["min_counts"] if counted else [1]}  # a KG without counts: every link has one
    ks = d["ks"]
    budget = int(d["review_budget"]["candidates"])
    # the per-entity known rows, counted on each vector as the retrospective holds it (entity_retro.RowHits): on the
    # headline's horizon, and apart on answers of any later year
    known_rows, tap = None, None
    key = {label: k for k, label in labels.items()}
    if not space.same_type:
        ks_entity = sorted(int(k) for k in d["entity_ks"])
        horizon = entities.baseline_options(d)["horizon"]
        within = future.year <= int(cfg.discover.cutoff) + horizon
        known_rows = {row: entity_retro.RowHits(src, dst, pos[keep], ks_entity, len(space.dst), seed)
                      for row, keep in ((entity_retro.KNOWN_ROW, within), (entity_retro.KNOWN_ANY_ROW, np.ones_like(within)))
                      if keep.any()}
        per_entity = {"gnn", "tsh", *(d.get("entity_baselines") or []), *(f"stack_{v}" for v in d.get("stack") or [])}
        reviewed_label = stack.VARIANTS[rerank.VARIANT] if heads is not None else None

        def tap(label, s):
            if key[label] in per_entity:
                for rows in known_rows.values():
                    rows.add(key[label], s)
            if label == reviewed_label and entity_retro.KNOWN_ROW in known_rows:
                heads.from_vector(s, known_rows[entity_retro.KNOWN_ROW], src, dst)
    result = retrospective(scores, src, dst, (pos, future.year, future.count), None, space.kg.degree,
                           int(cfg.discover.cutoff), grid, ks, seed, int(d["degree_buckets"]),
                           keep_head=max([*ks, budget]), tap=tap)
    h, min_deg, min_count = result.headline
    y = np.zeros(len(src), dtype=np.int8)
    y[pos[answers(future.year, future.count, int(cfg.discover.cutoff), h, min_count) == 1]] = 1
    if min_deg > 0:  # the headline's usual degree 0 keeps every candidate (no per-candidate degree lookups)
        y *= degree_mask(space.kg.degree, src, dst, min_deg)
    order, gnn_order = result.heads[METHODS["hygrail"]], result.heads[METHODS["gnn"]]
    paired = paired_precision(order, gnn_order, y, [*ks, *([budget] if budget else [])])
    paired = paired.with_columns(pl.when(pl.col("K") == budget).then(pl.lit("= review budget")).otherwise(pl.lit(""))
                                 .alias("K is"))
    # margins against the best ranking of another family: the GNN's own lists (HyGRAIL's, the novelty views)
    # and the stack's variants are never each other's baseline (issue #45)
    family = {labels[k]: "gnn" for k in ("gnn", "hygrail", "novelty", "degree_adjusted") if k in labels} | \
        {stack.VARIANTS[v]: "stack" for v in d.get("stack") or []}
    result = dataclasses.replace(result, paired=paired, order=d.get("order", "paper"),
                                 answers=answers_table(space, future, result.places),
                                 margins=margins(result.headline_rows(), result.places, family))
    curves = result.curves
    metrics = {"retro_future_edges": float(len(future.src)), "retro_future_unreachable": float(future.unreachable),
               "retro_future_implied": float(future.implied), "retro_undated_excluded": float(future.undated),
               "retro_counts_known": float(counted),
               "retro_last_year": float(future.year.max()) if len(future.year) else float("nan"),
               # the whole-space list position where HyGRAIL's list first differs from the GNN's (0: never)
               "retro_hygrail_first_differs_at": float(moved.get("first", 0))}
    metrics["retro_review_budget"] = float(budget)
    for row in paired.iter_rows(named=True):  # the paired difference to the GNN at each K (headline answers)
        metrics |= {f"retro_hygrail_minus_gnn_precision_at_{row['K']}": row["HyGRAIL - GNN"],
                    f"retro_hygrail_gained_at_{row['K']}": float(row["gained"]),
                    f"retro_hygrail_lost_at_{row['K']}": float(row["lost"])}
    for v in (d.get("stack") or [] if reviewed else []):  # the reviewed list against the stacked ranker's
        for row in paired_precision(order, result.heads[stack.VARIANTS[v]], y, paired["K"]).iter_rows(named=True):
            metrics[f"retro_hygrail_minus_stack_{v}_precision_at_{row['K']}"] = row["HyGRAIL - GNN"]
    for row in result.headline_rows().iter_rows(named=True):
        metrics |= {f"retro_{key[row['method']]}_{k}": float(v) for k, v in row.items()
                    if k not in ("method", "horizon", "min_degree", "min_count", "n_candidates")}
    for row in result.margins.iter_rows(named=True):
        metrics |= {f"retro_{key[row['method']]}_{k}": float(v) for k, v in row.items()
                    if k.endswith(("_margin", "_margin_se")) or k.startswith("ap_gain")}
    return result, curves, metrics, known_rows


def answers_table(space: CandidateSpace, future, places: dict[str, np.ndarray]) -> pl.DataFrame:
    """One row per answer (a future edge): its ends, year, each end's relation degree and all-edge
    degree in the cut graph, and each method's place in its whole-space list (``retro.Retrospective.places``;
    0 = first). Where a method loses AUC against another shows in the rows where its place is worse
    (``bench/error_analysis.py``)."""
    kg = space.kg
    rel_degree = relation_degree(kg, space.relation).astype(np.int64)
    src, dst = np.asarray(future.src), np.asarray(future.dst)
    return pl.DataFrame({"left_id": src, "right_id": dst, "left": [kg.label(int(u)) for u in src],
                         "right": [kg.label(int(v)) for v in dst], "year": np.asarray(future.year),
                         "left_relation_degree": rel_degree[src], "right_relation_degree": rel_degree[dst],
                         "left_degree": np.asarray(kg.degree)[src], "right_degree": np.asarray(kg.degree)[dst]}
                        | {f"place {name}": pl.Series(p).fill_nan(None) for name, p in places.items()})  # null: not a headline answer


def hygrail_scores(cfg: DictConfig, d: dict, space: CandidateSpace, src: np.ndarray, dst: np.ndarray, gnn: GNNBlocks,
                   band: Band, w, reviewed: list, decisions: np.ndarray, fit, moved: dict) -> np.ndarray:
    """HyGRAIL's list over the whole space as a score (higher first; ties by the same tiebreak as
    the GNN's), exactly ``retro.hygrail_order`` / ``retro.reviewed_order`` of the GNN's logits L
    without sorting the space: each group of the order is L shifted past the others' range (R > |L|),
    and the few reviewed candidates the rule accepts get their rank within their group (by
    confidence or priority, then GNN order). ``moved["first"]``: the 1-based position where the list
    first differs from the GNN's (0: never)."""
    logits = w.scores
    if not reviewed:  # the GNN's list itself (no float64 copy: 8 B a candidate)
        return logits
    h = logits.astype(np.float64, copy=True)
    at = space.positions(src, dst, np.array([r.hypothesis.src for r in reviewed]),
                         np.array([r.hypothesis.dst for r in reviewed]))
    r = float(np.abs(logits).max()) + 1.0
    moves = np.ones(len(at), dtype=bool)
    if d.get("order", "paper") == "reviewed":
        key = calibrate.priority([x.result for x in reviewed], fit, cfg.llm.get("decision", "paper"),
                                 np.array([x.hypothesis.score for x in reviewed], dtype=float)) if fit is not None \
            else np.zeros(len(reviewed))
    else:
        key = np.array([x.result.confidence if x.result and x.result.confidence is not None else 0.0 for x in reviewed])
        above = route(gnn.probability(logits), band) == 1
        h[above] += 4 * r + len(at) + 1  # above b*: first, in GNN order, whatever a review said
        moves = ~above[at]
    yes, no = at[moves & (decisions == 1)], at[moves & (decisions == 0)]
    key = np.nan_to_num(np.asarray(key, dtype=np.float64)[moves & (decisions == 1)], nan=0.0)
    first = np.lexsort((tiebreak(src[yes], dst[yes], int(cfg.seed)), -logits[yes], -key))
    h[no] = logits[no] - 3 * r  # rejected: last, in GNN order
    h[yes[first]] = 2 * r + np.arange(len(yes), 0, -1)  # accepted: after any above b*, by key then GNN order
    # only reviewed candidates move: the lists first differ at the smallest position any of them holds in
    # either list, among those whose two positions differ
    tb = tiebreak(src, dst, int(cfg.seed))
    rank = lambda s, i: int(np.count_nonzero(s > s[i]) + np.count_nonzero((s == s[i]) & (tb < tb[i])))  # noqa: E731
    pairs = [(rank(logits, i), rank(h, i)) for i in at]
    differ = [min(a, b) for a, b in pairs if a != b]
    moved["first"] = min(differ) + 1 if differ else 0
    return h
