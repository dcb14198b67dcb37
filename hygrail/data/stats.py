"""Paper Table 1 and App. A, Tables 4-6 for any loaded KG: hypothesis-space sparsity, nodes per type,
edges per type, split sizes (with what kind of split each relation really got).

Table 5 lists the hypothesis relations' edge types first, then every other edge type in a row of
its own: on a KG of another schema the edge types that are not relations are most of what it
holds. Paper Table 5 sums MatKG's others (21 of its 28 edge types) in one row; a schema keeps
that layout with ``stats_other_edges: one_row`` (conf/data/schema/matkg.yaml does)."""

from __future__ import annotations

from typing import Mapping

import polars as pl

from hygrail.data.split import SPLITS, candidate_pairs, split_from_config
from hygrail.kg import KG, DataError

# Paper Table 1's columns and units: P in 1e5, C in 1e8, rho in 1e-3.
TABLE1_UNITS = {"P (1e5)": ("positives", 1e5), "C (1e8)": ("candidates", 1e8), "rho (1e-3)": ("density", 1e-3)}
OTHER_EDGES = ("each", "one_row")  # Table 5's edge types that are not relations: a row each, or one row


def kg_stats(kg: KG) -> dict:
    """Table 1 (hypothesis spaces), Table 4 (nodes per type) and Table 5 (edges per type: the
    hypothesis relations', the others' and their sum)."""
    nodes = dict(kg.nodes.group_by("type").len().iter_rows())
    order = {t: i for i, t in enumerate(kg.schema.node_types)}
    edges = dict(sorted(kg.edges.group_by("type").len().iter_rows(),
                        key=lambda r: tuple(order[t] for t in r[0].split("-"))))  # fmt: skip
    relation_edges, spaces = {}, {}
    for name, rel in kg.schema.relations.items():
        p = edges.pop(kg.schema.edge_type(rel.src, rel.dst), 0)
        relation_edges[name] = p
        c = candidate_pairs(kg, rel)
        # P: the relation's edges; C: |H_r| (paper §2.2); rho = P / C.
        spaces[name] = {"type": rel.label, "positives": p, "candidates": c, "density": p / c if c else 0.0}
    n = kg.num_nodes
    return {
        "hypothesis_spaces": spaces,
        "nodes": {t: int(nodes.get(t, 0)) for t in kg.schema.node_types},
        "num_nodes": n,
        "relation_edges": relation_edges,
        "other_edges": int(sum(edges.values())),
        "other_edge_types": {t: int(c) for t, c in edges.items()},  # in schema order
        "num_edges": kg.num_edges,
        # The paper's 1.097e-3 for 3,000 nodes and 9,874 edges is E / (N (N - 1)).
        "density": kg.num_edges / (n * (n - 1)) if n > 1 else 0.0,
    }


def split_stats(kg: KG, split_cfg: Mapping) -> dict:
    """Table 6: per hypothesis relation, positives and negatives in each split, plus the split's kind
    (temporal | partial | random), how many positives had a year, and the tie rule."""
    out = {}
    for name, rel in kg.schema.relations.items():
        split = split_from_config(kg, rel, split_cfg)
        out[name] = split.counts() | {"kind": split.kind, "dated": split.dated, "ties": split.ties}
    return out


def format_tables(stats: dict, splits: dict, other_edges: str = "each") -> str:
    """The tables as text; ``other_edges``: Table 5's non-relation edge types a row "each", or in
    "one_row" (paper Table 5's layout)."""
    if other_edges not in OTHER_EDGES:
        raise DataError(f"schema stats_other_edges={other_edges!r}; expected one of {', '.join(OTHER_EDGES)}")
    spaces = list(stats["hypothesis_spaces"].values())
    t1 = pl.DataFrame(
        {
            "Type": [s["type"] for s in spaces],
            **{label: [f"{s[key] / unit:#.3g}" for s in spaces] for label, (key, unit) in TABLE1_UNITS.items()},
            "P": [s["positives"] for s in spaces],
            "C": [s["candidates"] for s in spaces],
            "rho": [f"{s['density']:.3e}" for s in spaces],
        }
    )
    n = stats["num_nodes"]
    t4 = pl.DataFrame(
        {
            "Node Type": list(stats["nodes"]) + ["Total"],
            "# Nodes": list(stats["nodes"].values()) + [n],
            "Ratio": [f"{c / n:.2%}" for c in stats["nodes"].values()] + ["100%"],
        }
    )
    e = stats["num_edges"]
    others = stats["other_edge_types"] if other_edges == "each" else {"Other edge types": stats["other_edges"]}
    names = [*stats["relation_edges"], *others]
    counts = [*stats["relation_edges"].values(), *others.values(), e]
    t5 = pl.DataFrame(
        {
            "Edge Type": names + ["Total"],
            "# Edges": counts,
            "Ratio": [f"{c / e:.2%}" for c in counts],
        }
    )
    rows = []
    for rel, c in splits.items():
        row = {"Hypothesis Type": rel}
        for s in SPLITS:
            row |= {f"{s} pos": c[s]["pos"], f"{s} neg": c[s]["neg"], f"{s} total": c[s]["pos"] + c[s]["neg"]}
        rows.append(row | {"split": c["kind"], "dated": f"{c['dated']}/{sum(c[s]['pos'] for s in SPLITS)}"})
    t6 = pl.DataFrame(rows)
    total = t6.select(pl.lit("Total").alias("Hypothesis Type"), pl.exclude("Hypothesis Type", "split", "dated").sum())
    t6 = pl.concat([t6, total], how="diagonal").fill_null("")
    ties = sorted({c["ties"] for c in splits.values()})
    random = [r for r, c in splits.items() if c["kind"] != "temporal"]
    note = f"\nNot temporal (edges without a year; see the log): {', '.join(random)}" if random else ""
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True, tbl_width_chars=220):
        return (
            f"Table 1: hypothesis spaces (P positive links, C candidate pairs, rho = P / C)\n{t1}\n\n"
            f"Table 4: node types ({n} nodes)\n{t4}\n\n"
            f"Table 5: edge types ({e} edges, density {stats['density']:.3e})\n{t5}\n\n"
            f"Table 6: split sizes (split.ties={', '.join(ties)})\n{t6}{note}"
        )
