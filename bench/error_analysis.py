"""Where a ranking loses, and to what (issue #35): the error analysis of one `make retro` cell.

    python bench/error_analysis.py outputs/retro/hpo-2018
    python bench/error_analysis.py outputs/retro/hpo-2018 --ours "Stack without GNN"

Reads what the cell wrote: ``retrospective_answers.csv`` (each answer's place in every whole-space
list: 0 = first) and ``retrospective_per_entity.csv`` (each entity's hits@10 by every method).
The baseline is the best of every other ranking in the cell (issue #45: TSH, the GNN alone, the trees on
transitions, RotatE, the heuristics and the name-aware baselines; never a variant of ours, e.g. another
stack): by mean place (whole space; 1 - mean place is the AUC up to the answers' order among themselves)
and by hits@10 (per entity).

1. Whole space: the answers grouped by the relation degree of each end in the cut graph. For each
   group: its answers, 1 - mean place of ours and of the baseline (an AUC within the group), and its
   share of the whole AUC difference (the group's sum of place differences over all answers; > 0:
   ours ahead), largest first: the groups where the difference comes from.
2. Per entity: the entities where ours misses at 10 and the baseline hits (losses) and the reverse
   (wins), by the entity's relation degree and its number of answers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

OURS = "Stack (trees + GNN)"
EDGES = [0, 1, 5, 20, 100, 1000]


def degree_group(col: str) -> pl.Expr:
    """Relation degree -> '0', '1-4', '5-19', ... (EDGES)."""
    expr = pl.lit(f"{EDGES[-1]}+")
    for lo, hi in reversed(list(zip(EDGES, EDGES[1:]))):
        expr = pl.when(pl.col(col) < hi).then(pl.lit(f"{lo}-{hi - 1}" if hi - 1 > lo else f"{lo}")).otherwise(expr)
    return expr


def family(method: str) -> str:
    """The stack's variants are one family (as entities.family): no margin is taken between them."""
    return "Stack" if method.startswith("Stack") else method


def best_baseline(columns: list[str], prefix: str, score, ours: str) -> str:
    names = [c for c in columns if c.startswith(prefix) and family(c[len(prefix):]) != family(ours)]
    if not names:
        raise SystemExit(f"no baseline columns '{prefix}...' among {columns}")
    return max(names, key=score)


def whole_space(answers: pl.DataFrame, ours: str) -> None:
    mine = f"place {ours}"
    if mine not in answers.columns:
        raise SystemExit(f"retrospective_answers.csv: no column {mine!r}; expected one of "
                         f"{[c[6:] for c in answers.columns if c.startswith('place ')]}")
    answers = answers.fill_nan(None).drop_nulls(mine)  # headline answers only (the CSV writes NaN for the others)
    base = best_baseline(answers.columns, "place ", lambda c: -answers[c].mean(), ours)
    n = answers.height
    print(f"whole space: {n:,} answers; ours = {ours}: 1 - mean place {1 - answers[mine].mean():.4f}; "
          f"best baseline = {base[6:]}: {1 - answers[base].mean():.4f}")
    table = (answers.with_columns(degree_group("left_relation_degree").alias("left degree"),
                                  degree_group("right_relation_degree").alias("right degree"))
             .group_by("left degree", "right degree")
             .agg(pl.len().alias("answers"), (1 - pl.col(mine).mean()).alias("ours"),
                  (1 - pl.col(base).mean()).alias("baseline"),
                  ((pl.col(base) - pl.col(mine)).sum() / n).alias("share of the difference"))
             .sort("share of the difference", descending=True))
    with pl.Config(tbl_rows=-1, tbl_width_chars=160, float_precision=4, tbl_hide_dataframe_shape=True):
        print(table)


def per_entity(each: pl.DataFrame, ours: str) -> None:
    mine = next((c for c in each.columns if c.startswith("hits@") and c.endswith(f" {ours}")), None)
    if mine is None:
        raise SystemExit(f"retrospective_per_entity.csv: no hits column for {ours!r}")
    prefix = mine[: mine.index(" ") + 1]
    for row, part in each.group_by("entities known", maintain_order=True):
        base = best_baseline(part.columns, prefix, lambda c: part[c].mean(), ours)
        print(f"\nper entity ({row[0]}): {part.height:,} entities; {mine} {part[mine].mean():.3f}, "
              f"best baseline {base} {part[base].mean():.3f}")
        table = (part.with_columns(degree_group("relation_degree").alias("relation degree"),
                                   pl.when(pl.col("answers") < 3).then(pl.lit("1-2"))
                                   .when(pl.col("answers") < 10).then(pl.lit("3-9")).otherwise(pl.lit("10+"))
                                   .alias("answers after"))
                 .group_by("relation degree", "answers after")
                 .agg(pl.len().alias("entities"), pl.col(mine).mean().alias("ours"), pl.col(base).mean().alias("baseline"),
                      ((pl.col(base) == 1) & (pl.col(mine) == 0)).sum().alias("losses"),
                      ((pl.col(mine) == 1) & (pl.col(base) == 0)).sum().alias("wins"),
                      pl.col("relation_degree").min().alias("lowest"), pl.col("answers").min().alias("fewest"))
                 .with_columns((pl.col("wins").cast(pl.Int64) - pl.col("losses").cast(pl.Int64)).alias("net"))
                 .sort("lowest", "fewest").drop("lowest", "fewest"))
        with pl.Config(tbl_rows=-1, tbl_width_chars=160, float_precision=3, tbl_hide_dataframe_shape=True):
            print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cell", type=Path, help="a make retro output folder, e.g. outputs/retro/hpo-2018")
    ap.add_argument("--ours", default=OURS, help=f"the ranking analysed (default: {OURS})")
    a = ap.parse_args()
    for name in ("retrospective_answers.csv", "retrospective_per_entity.csv"):
        if not (a.cell / name).exists():
            raise SystemExit(f"{a.cell / name}: not found; run make retro (this version writes it) for that cell")
    whole_space(pl.read_csv(a.cell / "retrospective_answers.csv"), a.ours)
    per_entity(pl.read_csv(a.cell / "retrospective_per_entity.csv"), a.ours)


if __name__ == "__main__":
    main()
