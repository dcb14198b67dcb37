"""The ranked table of ``task=discover``: the GNN's head and every reviewed candidate in HyGRAIL's
order (``build_table``), each row a card read from the cut graph with its verdict and the rule that
gave it, with the numbers (``verdict_of``, ``card_records``), and the per-entity lists' verdicts and
cards (``entity_cards``). ``cards`` renders them."""

from __future__ import annotations

import json

import numpy as np
from omegaconf import DictConfig, OmegaConf
import polars as pl

from hygrail.data import CONF
from hygrail.discovery import entities
from hygrail.discovery.cards import COLUMNS
from hygrail.discovery.novelty import distances, hub_pairs, novelty_scores
from hygrail.discovery.retro import hygrail_order, reviewed_order
from hygrail.discovery.scoring import REGION_NAMES
from hygrail.discovery.trust import gnn_reason, review_reason
from hygrail.evidence.mode import Hypothesis
from hygrail.review import calibrate
from hygrail.stages import plain
from hygrail.triage.routing import Band, route


def build_table(cfg: DictConfig, split, triage, band: Band, w, head_prob: np.ndarray, reviewed: list,
                decisions: np.ndarray, order: str = "paper", fit=None, graph=None) -> pl.DataFrame:
    """The head (best ``top_k`` by GNN score: the first ``len(head_prob)`` of ``w.head``) and every
    reviewed candidate, in HyGRAIL's order (``discover.order``: ``retro.hygrail_order`` or
    ``retro.reviewed_order``, the latter ordering the accepted by ``calibrate.priority`` under the
    rule as fit, ``fit``), each row a card (``card_records``) read from ``graph`` (the cut graph;
    default the split's training graph)."""
    rows: dict[tuple[int, int], dict] = {}
    n_head = len(head_prob)
    for i, (s, t, p) in enumerate(zip(w.head.src[:n_head].tolist(), w.head.dst[:n_head].tolist(), head_prob.tolist())):
        rows[(s, t)] = {"gnn_rank": i + 1, "score": p}
    above = w.counts.get("auto_accept", 0)
    rule = cfg.llm.get("decision", "paper")
    prio = calibrate.priority([r.result for r in reviewed], fit, rule,
                              np.array([r.hypothesis.score for r in reviewed], dtype=float)) \
        if order == "reviewed" and reviewed and fit is not None else np.full(len(reviewed), np.nan)
    for j, r in enumerate(reviewed):
        key = (r.hypothesis.src, r.hypothesis.dst)
        # paper: the routed head is the top of the band: every candidate above b* ranks before it;
        # reviewed: the reviewed ones are the GNN's head itself
        rows.setdefault(key, {"gnn_rank": (j + 1) if order == "reviewed" else above + j + 1, "score": r.hypothesis.score})
        rows[key] |= {"reviewed": r, "decision": int(decisions[j]), "priority": float(prio[j])}
    keys = list(rows)
    table = card_records(cfg, split, triage, band, rows, order, fit, graph)
    region = route(table["score"].to_numpy(), band)
    gnn_order = np.argsort(table["gnn_rank"].to_numpy(), kind="stable")
    verdicts = table["verdict"].to_numpy()
    llm = np.array([k in rows and "reviewed" in rows[k] for k in keys])
    if order == "reviewed":
        listed = reviewed_order(gnn_order, llm, verdicts == "accept",
                                np.array([rows[k].get("priority", np.nan) for k in keys], dtype=float))
    else:
        listed = hygrail_order(gnn_order, region == 1, llm & (verdicts == "accept"), llm & (verdicts == "reject"),
                               table["confidence"].fill_null(0.0).to_numpy())
    return table[listed].with_columns(pl.Series("rank", np.arange(1, len(listed) + 1)))


def verdict_of(row: dict, region: int, band: Band, threshold: float, order: str, fit, rule: str) -> tuple[str, str]:
    """(verdict, decided by) of one candidate (a ``card_records`` row): the review rule's for a
    reviewed pair in the band (under ``reviewed``, whatever its region), else its region's, each with
    the numbers that gave it (``trust.review_reason``, ``trust.gnn_reason``)."""
    rev = row.get("reviewed")
    if rev is None or (order != "reviewed" and region != -1):
        return {1: "accept", 0: "reject"}.get(region, "unreviewed"), gnn_reason(region, float(row["score"]), band, threshold)
    verdict, res = ("accept" if row["decision"] else "reject"), rev.result
    if rev.prepared.skip:
        return verdict, f"evidence mode: {rev.prepared.skip}"
    if res and res.ok:
        return verdict, review_reason(res, fit, rule, row["score"])
    return verdict, f"LLM failed: GNN fallback ({verdict})"


def card_evidence(evidence: dict) -> dict:
    """The retrieval settings of the cards' template evidence: the run's evidence mode's own, or for
    a mode without graph retrieval (``evidence=profile``) those of conf/evidence/template.yaml."""
    if "k" not in evidence:
        evidence = plain(OmegaConf.load(CONF / "evidence" / "template.yaml"))
    return evidence | {"mode": "template"}


def card_records(cfg: DictConfig, split, triage, band: Band, rows: dict[tuple[int, int], dict], order: str = "paper",
                 fit=None, graph=None) -> pl.DataFrame:
    """One card per pair of ``rows`` ((src, dst) -> gnn_rank, score (the GNN's probability), and for a
    reviewed pair its ``reviewed`` and ``decision``), in ``rows``' order, without ``rank``: the
    evidence read from ``graph`` (default the split's training graph), the novelty view among these
    pairs (``novelty``), the verdict and which rule gave it, with the numbers (``trust.gnn_reason``,
    ``trust.review_reason``). Under ``reviewed`` a reviewed row's verdict is the rule's whatever its
    region. What the main table and the per-entity cards (``entity_cards``) both show."""
    from hygrail.evidence.naturalize import Template

    graph = split.train_graph if graph is None else graph
    keys = list(rows)
    src = np.array([k[0] for k in keys], dtype=np.int64)
    dst = np.array([k[1] for k in keys], dtype=np.int64)
    score = np.array([rows[k]["score"] for k in keys], dtype=np.float64)
    region = route(score, band)
    # the novelty view among the listed hypotheses (``novelty``): plausibility is the GNN's order
    d = cfg.discover
    distance = distances(graph, src, dst, int(d.distance_cap))
    deg = graph.degree.astype(np.float64)
    novel, adjusted = novelty_scores(-np.array([rows[k]["gnn_rank"] for k in keys], dtype=np.float64), distance,
                                     deg[src] * deg[dst], float(d.novelty_beta))
    hub = hub_pairs(graph, src, dst, float(d.hub_percentile))
    templates = plain(cfg.relation)["templates"]
    rule = cfg.llm.get("decision", "paper")
    threshold = triage.threshold
    cards = Template(card_evidence(plain(cfg.evidence)), templates, triage.calibrated()).prepare(
        graph, split.relation, [Hypothesis(int(s), int(t), float(p)) for s, t, p in zip(src, dst, score)])
    records = []
    for i, (k, reg, card) in enumerate(zip(keys, region, cards)):
        row, rev = rows[k], rows[k].get("reviewed")
        res = rev.result if rev else None
        verdict, by = verdict_of(row, int(reg), band, threshold, order, fit, rule)
        theirs = rev.prepared.text if rev else None
        records.append({
            "gnn_rank": row["gnn_rank"], "left": graph.label(k[0]), "right": graph.label(k[1]), "score": float(row["score"]),
            "region": REGION_NAMES[int(reg)], "verdict": verdict, "decided_by": by,
            "review": res.review if res else None, "confidence": res.confidence if res else None,
            "reasoning": (res.reasoning or res.failure) if res else None, "statement": card.statement,
            "evidence": card.text, "reviewer_evidence": theirs if theirs != card.text else None,
            "structured": json.dumps(card.structured), "future_year": None, "distance": int(distance[i]),
            "hub_pair": bool(hub[i]), "novelty": float(novel[i]), "degree_adjusted": float(adjusted[i]),
            "left_id": k[0], "right_id": k[1]})
    return pl.DataFrame(records, schema_overrides={"review": pl.String, "confidence": pl.Float64, "reasoning": pl.String,
                                                    "reviewer_evidence": pl.String, "future_year": pl.Int32})


def entity_cards(cfg: DictConfig, split, triage, band: Band, report: entities.EntityReport, reviewed: list,
                 decisions: np.ndarray, fit, graph) -> None:
    """Each per-entity list's verdicts (every row, as the ranked table decides them: a pair the run
    reviewed by the rule, any other by its region; ``verdict_of``) and the evidence cards of its
    first ``discover.entity_cards`` rows (``card_records``, the ranked table's builder, on ``graph``,
    the cut graph), into the report (``EntityList.table``'s ``verdict``, ``EntityList.cards``).
    Cost: one evidence retrieval per card, as for the ranked table's 1,000 (2.2 s on the synthetic
    MatKG, ``entities``' module docstring); the option bounds it."""
    n = int(cfg.discover.get("entity_cards", 0))
    order, rule, rel = cfg.discover.get("order", "paper"), cfg.llm.get("decision", "paper"), split.relation
    by_pair = {(r.hypothesis.src, r.hypothesis.dst): (r, int(dec)) for r, dec in zip(reviewed, decisions)}
    for e in report.lists:
        node, partner = e.entity.node, e.table["id"].to_numpy()
        if rel.src == rel.dst:
            pairs = list(zip(np.minimum(node, partner).tolist(), np.maximum(node, partner).tolist()))
        else:
            pairs = [(node, p) if e.entity.node_type == rel.src else (p, node) for p in partner.tolist()]
        rows = {}
        gnn_score = e.table["gnn_score" if "gnn_score" in e.table.columns else "score"]  # the band reads the GNN's
        for rank, key, score in zip(e.table["rank"].to_list(), pairs, gnn_score.to_list()):
            rows[key] = {"gnn_rank": rank, "score": score}
            if key in by_pair:
                rows[key] |= {"reviewed": by_pair[key][0], "decision": by_pair[key][1]}
        region = route(gnn_score.to_numpy(), band)
        verdicts = [verdict_of(rows[k], int(r), band, triage.threshold, order, fit, rule)[0] for k, r in zip(pairs, region)]
        e.table = e.table.with_columns(pl.Series("verdict", verdicts, dtype=pl.String))
        if n and pairs and node < graph.num_nodes:  # a new composition's node is not in the cut graph: no evidence there
            carded = {k: rows[k] for k in pairs[:n]}
            e.cards = card_records(cfg, split, triage, band, carded, order, fit, graph).with_columns(
                pl.col("gnn_rank").alias("rank")).select(COLUMNS)
