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

import numpy as np
import polars as pl

from hygrail.discovery.entity_retro import KNOWN_ROW, NEW_ROW

MEASURES = ("hits@10", "NDCG@10")
FAMILIES = ("Per-entity ranker", "Stack")  # a ranking's variants, never each other's "best other" (entity_retro.family)


def family(label: str) -> str:
    return next((f for f in FAMILIES if label.startswith(f)), label)


def rows(cell: Path, method: str) -> list[dict]:
    each = pl.read_csv(cell / "retrospective_per_entity.csv", infer_schema_length=None)
    out = []
    for row in (KNOWN_ROW, NEW_ROW):
        part = each.filter(pl.col("entities known") == row)
        if not part.height:
            continue
        for measure in MEASURES:
            lists = [c.removeprefix(f"{measure} ") for c in part.columns if c.startswith(f"{measure} ")]
            lists = [x for x in lists if part[f"{measure} {x}"].null_count() == 0]
            if method not in lists:
                continue
            others = [x for x in lists if family(x) != family(method)]
            best = max(others, key=lambda x: part[f"{measure} {x}"].mean())
            mine, theirs = part[f"{measure} {method}"].to_numpy(), part[f"{measure} {best}"].to_numpy()
            diff = mine - theirs
            se = diff.std(ddof=1) / np.sqrt(len(diff))
            oracle = part.select(pl.max_horizontal([f"{measure} {x}" for x in lists])).to_series().to_numpy()
            out.append({"cell": cell.name, "row": row, "entities": part.height, "measure": measure,
                        "value": mine.mean(), "best other": f"{best} ({theirs.mean():.3f})", "lift": diff.mean(),
                        "se": se, "needed": 2 * se, "oracle headroom": oracle.mean() - theirs.mean()})
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
