"""The honest-margins tables of experiments/discovery.md (issue #45) from retrospective cells' folders:
whole space (each learned ranking against the best ranking of another family, by AUC and AP, paired
over the answers) and per entity (hits@10 lift against the best other ranking of each row, paired over
entities), with how much the stack leans on names. ``--compact``: the per-entity table one line per
cell and row.

    python bench/margins_table.py outputs/retro/hpo-2012 outputs/retro/hpo-2015 ... [--methods ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

LEARNED = ["Stack (trees + GNN)", "Stack without GNN", "Stack without GNN or names", "GNN", "TSH"]


def _pm(v: float, se: float, digits: int = 3) -> str:
    return f"{v:+.{digits}f} ± {se:.{digits}f}"


def whole_space(cells: list[Path], methods: list[str]) -> str:
    lines = ["| cell | ranking | AUC | best other by AUC | AUC margin | AP | best other by AP | AP gain |",
             "|---|---|---|---|---|---|---|---|"]
    for cell in cells:
        m = pl.read_csv(cell / "retrospective_margins.csv")
        for r in m.filter(pl.col("method").is_in(methods)).iter_rows(named=True):
            lines.append(f"| {cell.name} | {r['method']} | {r['auc']:.4f} | {r['best_auc']} ({r['best_auc_value']:.4f}) | "
                         f"{_pm(r['auc_margin'], r['auc_margin_se'], 4)} | {r['ap']:.4f} | {r['best_ap']} "
                         f"({r['best_ap_value']:.4f}) | {100 * r['ap_gain']:+.0f}% ± {100 * r['ap_gain_se']:.0f}% |")
    return "\n".join(lines)


def per_entity(cells: list[Path], methods: list[str]) -> str:
    lines = ["| cell | row | entities | ranking | hits@10 | best other | lift (SE) |", "|---|---|---|---|---|---|---|"]
    for cell in cells:
        e = pl.read_csv(cell / "retrospective_entities.csv", infer_schema_length=None)
        best = next(c for c in e.columns if c.startswith("lift vs best other"))
        for r in e.filter(pl.col("method").is_in(methods)).iter_rows(named=True):
            lift = "" if r["lift_hits_at_10"] is None else \
                f"{_pm(r['lift_hits_at_10'], r['lift_hits_at_10_se'])} ({r['lift_hits_at_10'] / r['lift_hits_at_10_se']:+.1f} SE)"
            lines.append(f"| {cell.name} | {r['entities known']} | {r['entities']:,} | {r['method']} | "
                         f"{r['hits_at_10']:.3f} | {r[best]} | {lift} |")
    return "\n".join(lines)


def per_entity_compact(cells: list[Path], methods: list[str]) -> str:
    """One line per cell and row: its entities, each method's hits@10 and its lift against the best other
    ranking (± SE), the best other ranking of the first method."""
    head = "| cell | row | entities | " + " | ".join(methods) + f" | best other than {methods[0]} |"
    lines = [head, "|" + "---|" * (len(methods) + 4)]
    for cell in cells:
        e = pl.read_csv(cell / "retrospective_entities.csv", infer_schema_length=None)
        best = next(c for c in e.columns if c.startswith("lift vs best other"))
        for (row,), part in e.group_by("entities known", maintain_order=True):
            by = {r["method"]: r for r in part.iter_rows(named=True)}
            cols = []
            for m in methods:
                r = by.get(m)
                cols.append("" if r is None else f"{r['hits_at_10']:.3f} ({_pm(r['lift_hits_at_10'], r['lift_hits_at_10_se'])})"
                            if r["lift_hits_at_10"] is not None else f"{r['hits_at_10']:.3f}")
            other = by[methods[0]][best] if methods[0] in by else ""
            value = by[other]["hits_at_10"] if other in by else float("nan")
            lines.append(f"| {cell.name} | {row} | {part['entities'][0]:,} | " + " | ".join(cols) + f" | {other} ({value:.3f}) |")
    return "\n".join(lines)


def measures(cells: list[Path], method: str, rows: list[str]) -> str:
    """Issue #55's table: one line per cell and row, ``method``'s hits@10, P@10 and NDCG@10 with each one's lift
    against the best other ranking of the row by that measure (paired over entities, ± SE, in SE)."""
    heads = [("hits", "hits_at_10"), ("P", "precision_at_10"), ("NDCG", "ndcg_at_10")]
    lines = ["| cell | row | entities | " + " | ".join(f"{h}@10 (lift vs best other)" for h, _ in heads) + " |",
             "|---|---|---|" + "---|" * len(heads)]
    for cell in cells:
        e = pl.read_csv(cell / "retrospective_entities.csv")
        for row in rows:
            r = e.filter((pl.col("entities known") == row) & (pl.col("method") == method))
            if not r.height:
                continue
            r = r.row(0, named=True)
            cols = []
            for _, col in heads:
                lift, se = r.get(f"lift_{col}"), r.get(f"lift_{col}_se")
                best = r.get(f"lift vs best other ({col})")
                cols.append(f"{r[col]:.3f} ({_pm(lift, se)}, {lift / se:+.1f} SE, vs {best})" if lift is not None and se
                            else f"{r[col]:.3f}")
            lines.append(f"| {cell.name} | {row} | {r['entities']:,} | " + " | ".join(cols) + " |")
    return "\n".join(lines)


def ablation(cells: list[Path], with_: str, without: str) -> str:
    """What one ranking adds over its variant without a part (issue #55: the text feature), per row and band of
    the entity's degree in the relation at the cutoff: the paired difference of hits@10, P@10 and NDCG@10."""
    from trust_table import BANDS, band_of

    from hygrail.discovery.entity_retro import KNOWN_ROW, NEW_ROW

    lines = ["| cell | row | band | entities | hits@10 | P@10 | NDCG@10 |", "|---|---|---|---|---|---|---|"]
    for cell in cells:
        e = pl.read_csv(cell / "retrospective_per_entity.csv", infer_schema_length=None)
        for row in (KNOWN_ROW, NEW_ROW):
            part = e.filter(pl.col("entities known") == row)
            bands = [("all", part)] + ([(band_of(lo, hi), part.filter(pl.col("relation_degree").is_between(lo, hi or 1 << 62)))
                                       for lo, hi in BANDS] if row == KNOWN_ROW else [])
            for band, rows in bands:
                if rows.height < 2:
                    continue
                cols = []
                for m in ("hits@10", "P@10", "NDCG@10"):
                    d = (rows[f"{m} {with_}"].cast(pl.Float64) - rows[f"{m} {without}"].cast(pl.Float64)).to_numpy()
                    se = d.std(ddof=1) / len(d) ** 0.5
                    cols.append(_pm(float(d.mean()), float(se)))
                lines.append(f"| {cell.name} | {row} | {band} | {rows.height:,} | " + " | ".join(cols) + " |")
    return "\n".join(lines)


def without(cells: list[Path], methods: list[str], leave_out: list[str]) -> str:
    """The per-entity hits@10 lifts recomputed from the entities' rows with some rankings left out of "best other"
    (e.g. the per-entity ranker's variants: the table as it stands before issue #55), paired over entities."""
    from hygrail.discovery.entity_retro import KNOWN_ANY_ROW, KNOWN_ROW, NEW_ROW, family

    keys = {"Stack (trees + GNN)": "stack_with_gnn", "Stack without GNN": "stack_without_gnn",
            "Stack without GNN or names": "stack_without_names"}
    lines = ["| cell | row | entities | " + " | ".join(methods) + f" | best other than {methods[0]} (left out: " + ", ".join(leave_out) + ") |",
             "|---|---|---|" + "---|" * (len(methods) + 1)]
    for cell in cells:
        e = pl.read_csv(cell / "retrospective_per_entity.csv", infer_schema_length=None)
        names = [c.removeprefix("hits@10 ") for c in e.columns if c.startswith("hits@10 ")]
        pool = [n for n in names if n not in leave_out]
        for row in (KNOWN_ROW, KNOWN_ANY_ROW, NEW_ROW):
            part = e.filter(pl.col("entities known") == row)
            if not part.height:
                continue
            hits = {n: part[f"hits@10 {n}"].cast(pl.Float64).to_numpy() for n in names}
            cols, best_of = [], None
            for m in methods:
                others = [o for o in pool if family(keys.get(o, o)) != family(keys.get(m, m))]
                best = max(others, key=lambda o: hits[o].mean())
                d = hits[m] - hits[best]
                cols.append(f"{hits[m].mean():.3f} ({_pm(d.mean(), d.std(ddof=1) / len(d) ** 0.5)})")
                best_of = best_of or f"{best} ({hits[best].mean():.3f})"
            lines.append(f"| {cell.name} | {row} | {part.height:,} | " + " | ".join(cols) + f" | {best_of} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cells", nargs="+", type=Path)
    ap.add_argument("--methods", default=",".join(LEARNED))
    ap.add_argument("--compact", action="store_true", help="per entity: one line per cell and row, the methods as columns")
    ap.add_argument("--measures", default=None, metavar="METHOD",
                    help="issue #55's table for METHOD: hits@10, P@10, NDCG@10 and their lifts on the known and new rows")
    ap.add_argument("--ablation", default=None, metavar="WITH,WITHOUT",
                    help="the paired difference of two rankings per row and degree band (e.g. the text feature's)")
    ap.add_argument("--leave-out", default=None, help="per entity: recompute the lifts with these rankings left out")
    a = ap.parse_args()
    if a.leave_out:
        print(without(a.cells, a.methods.split(","), a.leave_out.split(",")))
        return
    if a.ablation:
        print(ablation(a.cells, *a.ablation.split(",")))
        return
    if a.measures:
        from hygrail.discovery.entity_retro import KNOWN_ROW, NEW_ROW

        print(measures(a.cells, a.measures, [KNOWN_ROW, NEW_ROW]))
        return
    methods = a.methods.split(",")
    print(whole_space(a.cells, methods), "\n")
    print(per_entity_compact(a.cells, methods) if a.compact else per_entity(a.cells, methods))


if __name__ == "__main__":
    main()
