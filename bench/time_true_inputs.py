"""What the time-true inputs of issue #45 change on whole HPO at each cutoff: is_a edges that touch a
term created after the cutoff (``KG.until`` drops them now), the ancestry pairs the hierarchy loses,
the diseases' candidate pairs excluded as implied by the 2025 hierarchy that no longer are; and of
the split's held-out rows (the stack's fit rows before), how many ``data.split.held_out_rows`` keeps
per population and how many positives it drops for sharing their year with the training graph.

    python bench/time_true_inputs.py [--cutoffs 2012,2015,2018]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl
from hydra import compose, initialize_config_dir

from hygrail.data import load_kg
from hygrail.data.split import graph_date, held_out_rows, split_from_config
from hygrail.stages import plain

CONF = Path(__file__).resolve().parents[1] / "conf"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cutoffs", default="2012,2015,2018")
    args = ap.parse_args()
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=retro_hpo"])
    kg = load_kg(plain(cfg.data))
    rel = kg.schema.relation(cfg.relation.name)
    isa = kg.schema.edge_type("Phenotype", "Phenotype")
    for cutoff in map(int, args.cutoffs.split(",")):
        cut = kg.until(cutoff)
        made = kg.made_by(cutoff)
        e = kg.edges.filter(pl.col("type") == isa)
        late = ~(made[e["u"].to_numpy()] & made[e["v"].to_numpy()])
        lost_anc = kg.ancestors.nnz - cut.ancestors.nnz
        # implied pairs among the cut graph's known diseases and terms, under the 2025 and the cutoff's hierarchy
        old = kg.until(cutoff)
        old.ancestors = kg.ancestors
        dis, phe = cut.nodes_of_type(rel.src), cut.nodes_of_type(rel.dst)
        dis, phe = dis[cut.known[dis]], phe[cut.known[phe]]
        now_ex = cut.implied_adjacency[dis][:, phe].nnz
        then_ex = old.implied_adjacency[dis][:, phe].nnz
        split = split_from_config(cut, rel, cfg.split)
        rows, graphs = held_out_rows(split)
        held = pl.concat([split.part("val"), split.part("test")])
        date = graph_date(split.graph("val"), rel)
        straddle = held.filter((pl.col("label") == 1) & (pl.col("year") <= date)).height
        counts = rows.group_by("population", "label").len().sort("population", "label")
        print(f"HPO {cutoff}: is_a edges touching a term created later {int(late.sum()):,} of {e.height:,}; "
              f"ancestry pairs lost {lost_anc:,}; implied disease-term pairs (known nodes) {then_ex:,} -> {now_ex:,}")
        print(f"  held-out rows {held.height:,} ({int(held['label'].sum()):,} positives); feature date {date}; "
              f"positives dated <= it (same-year straddle, dropped) {straddle:,}; kept:")
        for r in counts.iter_rows(named=True):
            print(f"    {r['population']:5} label {r['label']}: {r['len']:,}")


if __name__ == "__main__":
    main()
