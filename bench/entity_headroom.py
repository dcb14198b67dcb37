"""How far a per-entity list is from issue #55's goal, and how far it could go: for each cell and row (known at
the cutoff, new within the horizon), per measure (hits@10, NDCG@10), the list's lift over the best other ranking
(paired over entities, as ``bench/margins_table.py --measures``), the lift that 2 SE would take at the measured
paired spread (2 x SE: the entity count sets it), and the oracle's headroom: the mean over entities of the best
value any ranking of the table reached for that entity, less the best other's mean (an upper bound on what
choosing one list per entity could add; a ranker re-ordering the pools can exceed it only where no list put the
answers first).

    python bench/entity_headroom.py outputs/retro/hpo-2012 outputs/retro/hpo-2015 ... --method "Per-entity ranker"
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from hygrail.discovery.entity_retro import KNOWN_ROW, NEW_ROW

MEASURES = {"hits@10": "hits_at_10", "NDCG@10": "ndcg_at_10"}  # per-entity column -> the cell's summary column


def rows(cell: Path, method: str) -> list[dict]:
    """The cell's own lift of ``method`` over the best other ranking (``retrospective_entities.csv``, as
    ``entity_retro.lift`` computed it in the run), and the oracle over every ranking's per-entity values."""
    summary = pl.read_csv(cell / "retrospective_entities.csv", infer_schema_length=None)
    each = pl.read_csv(cell / "retrospective_per_entity.csv", infer_schema_length=None)
    out = []
    for row in (KNOWN_ROW, NEW_ROW):
        part = each.filter(pl.col("entities known") == row)
        mine = summary.filter((pl.col("entities known") == row) & (pl.col("method") == method))
        if not part.height or not mine.height:
            continue
        mine = mine.row(0, named=True)
        for measure, col in MEASURES.items():
            lift, se = mine.get(f"lift_{col}"), mine.get(f"lift_{col}_se")
            if lift is None or se is None:
                continue
            lists = [c for c in part.columns if c.startswith(f"{measure} ") and part[c].null_count() == 0]
            oracle = part.select(pl.max_horizontal(lists)).to_series().mean()
            best = mine[col] - lift
            out.append({"cell": cell.name, "row": row, "entities": part.height, "measure": measure,
                        "value": mine[col], "best other": f"{mine[f'lift vs best other ({col})']} ({best:.3f})",
                        "lift": lift, "se": se, "needed": 2 * se, "oracle headroom": oracle - best})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cells", nargs="+", type=Path)
    ap.add_argument("--method", default="Per-entity ranker")
    a = ap.parse_args()
    print("| cell | row | entities | measure | value | best other | lift (SE) | 2 SE | oracle headroom |")
    print("|---|---|---|---|---|---|---|---|---|")
    for cell in a.cells:
        for r in rows(cell, a.method):
            print(f"| {r['cell']} | {r['row'].split(':')[0]} | {r['entities']:,} | {r['measure']} | {r['value']:.3f} | "
                  f"{r['best other']} | {r['lift']:+.3f} ± {r['se']:.3f} | {r['needed']:.3f} | "
                  f"{r['oracle headroom']:+.3f} |")


if __name__ == "__main__":
    main()
