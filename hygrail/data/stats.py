"""Paper App. A, Tables 4-6 for any loaded KG: nodes per type, edges per type, split sizes."""

from __future__ import annotations

from typing import Mapping

import polars as pl

from hygrail.data.split import SPLITS, temporal_split
from hygrail.kg import KG


def kg_stats(kg: KG) -> dict:
    """Table 4 (nodes per type) and Table 5 (hypothesis-relation edges, the rest as 'other')."""
    nodes = dict(kg.nodes.group_by("type").len().iter_rows())
    edges = dict(kg.edges.group_by("type").len().iter_rows())
    relation_edges = {}
    for name, rel in kg.schema.relations.items():
        relation_edges[name] = edges.pop(kg.schema.edge_type(rel.src, rel.dst), 0)
    n = kg.num_nodes
    return {
        "nodes": {t: int(nodes.get(t, 0)) for t in kg.schema.node_types},
        "num_nodes": n,
        "relation_edges": relation_edges,
        "other_edges": int(sum(edges.values())),
        "num_edges": kg.num_edges,
        # The paper's 1.097e-3 for 3,000 nodes and 9,874 edges is E / (N (N - 1)).
        "density": kg.num_edges / (n * (n - 1)) if n > 1 else 0.0,
    }


def split_stats(kg: KG, split_cfg: Mapping) -> dict:
    """Table 6: per hypothesis relation, positives and negatives in each split."""
    out = {}
    for name, rel in kg.schema.relations.items():
        split = temporal_split(
            kg, rel, tuple(split_cfg["ratios"]), int(split_cfg["neg_ratio"]), int(split_cfg["seed"])
        )
        out[name] = split.counts()
    return out


def format_tables(stats: dict, splits: dict) -> str:
    n = stats["num_nodes"]
    t4 = pl.DataFrame(
        {
            "Node Type": list(stats["nodes"]) + ["Total"],
            "# Nodes": list(stats["nodes"].values()) + [n],
            "Ratio": [f"{c / n:.2%}" for c in stats["nodes"].values()] + ["100%"],
        }
    )
    e = stats["num_edges"]
    names = [f"{r}" for r in stats["relation_edges"]]
    counts = list(stats["relation_edges"].values()) + [stats["other_edges"], e]
    t5 = pl.DataFrame(
        {
            "Edge Type": names + ["Other edge types", "Total"],
            "# Edges": counts,
            "Ratio": [f"{c / e:.2%}" for c in counts],
        }
    )
    rows = []
    for rel, c in splits.items():
        row = {"Hypothesis Type": rel}
        for s in SPLITS:
            row |= {f"{s} pos": c[s]["pos"], f"{s} neg": c[s]["neg"], f"{s} total": c[s]["pos"] + c[s]["neg"]}
        rows.append(row)
    t6 = pl.DataFrame(rows)
    t6 = pl.concat([t6, t6.select(pl.lit("Total").alias("Hypothesis Type"), pl.exclude("Hypothesis Type").sum())])
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True, tbl_width_chars=200):
        return (
            f"Table 4: node types ({n} nodes)\n{t4}\n\n"
            f"Table 5: edge types ({e} edges, density {stats['density']:.3e})\n{t5}\n\n"
            f"Table 6: split sizes\n{t6}"
        )
