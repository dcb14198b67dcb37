"""The trust table a page reads (issue #56; hygrail/discovery/backtest.py): from whole-graph retrospective cells'
per-entity rows, how often each list's first 10 held an answer within the horizon, per population and degree band.

    python bench/trust_table.py outputs/retro/hpo-2012 outputs/retro/hpo-2015 outputs/retro/hpo-2018 \\
        outputs/retro/hpo-2021 --out experiments/trust/hpo_dis_phe.csv

Each cell folder holds ``retrospective_per_entity.csv`` (one row per evaluated entity and row of the per-entity
table, ``entity_retro.per_entity``) and ``metrics.json``. Rows read: "known at the cutoff" (population ``known``:
entities with partners at the cutoff that gain one within the horizon) and "new: first linked within the
horizon" (``new``). Bands: the entity's degree in the relation at the cutoff (``BANDS``, chosen before any figure
was read: the error analysis' groups of discovery.md), plus ``all``; a new entity has none, so ``all`` only.
Every list of the cell gets its rows (the page picks the one it shows). ``hit_rate``: the share of the band's
entities with an answer in the list's first ``k``; ``precision``: their mean precision@k; ``entities``: how many.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import polars as pl

from hygrail.discovery.backtest import COLUMNS
from hygrail.discovery.entity_retro import KNOWN_ROW, NEW_ROW

BANDS = ((1, 4), (5, 19), (20, 99), (100, None))
K = 10
ROWS = {KNOWN_ROW: "known", NEW_ROW: "new"}


def band_of(low: int, high: int | None) -> str:
    return f"{low}+" if high is None else f"{low}-{high}"


def cell_rows(folder: Path, relation: str, cutoff: int, horizon: int) -> list[dict]:
    each = pl.read_csv(folder / "retrospective_per_entity.csv", infer_schema_length=None)
    lists = [c.removeprefix(f"hits@{K} ") for c in each.columns if c.startswith(f"hits@{K} ")]
    out = []
    for row, population in ROWS.items():
        part = each.filter(pl.col("entities known") == row)
        if not part.height:
            continue
        bands = [("all", part)]
        if population == "known":
            bands += [(band_of(lo, hi), part.filter((pl.col("relation_degree") >= lo)
                                                  & (pl.col("relation_degree") <= (hi if hi is not None else 1 << 62))))
                      for lo, hi in BANDS]
        for band, rows in bands:
            if not rows.height:
                continue
            for name in lists:
                out.append({"relation": relation, "cutoff": cutoff, "horizon": horizon, "list": name,
                            "population": population, "band": band, "k": K, "entities": rows.height,
                            "hit_rate": float(rows[f"hits@{K} {name}"].mean()),
                            "precision": float(rows[f"P@{K} {name}"].mean())})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cells", nargs="+", type=Path, help="retrospective cell folders (outputs/retro/<data>-<cutoff>)")
    ap.add_argument("--relation", default=None, help="the relation's name (default: read from the folder's metrics)")
    ap.add_argument("--horizon", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    rows = []
    for cell in a.cells:
        m = re.search(r"(\d{4})$", cell.name)
        if m is None:
            raise SystemExit(f"{cell}: expected a cell folder named <data>-<cutoff year>")
        relation = a.relation or json.loads((cell / "metrics.json").read_text()).get("relation") or \
            {"hpo": "hpo_dis_phe", "synthesis_recipes": "syn_tgt_pre"}[cell.name.rsplit("-", 1)[0]]
        rows += cell_rows(cell, relation, int(m.group(1)), a.horizon)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows).select(COLUMNS).sort("list", "population", "band", "cutoff").write_csv(a.out)
    print(f"{len(rows)} rows from {len(a.cells)} cells into {a.out}")


if __name__ == "__main__":
    main()
