"""Load benchmark of the two real KGs (issue #27): data=hpo and data=synthesis_recipes, full graphs.

    python bench/bench_real_kgs.py                  # both, each in a fresh process
    python bench/bench_real_kgs.py --kg hpo --profile

Per KG, in a fresh process (so its peak RSS is its own): load, the adjacency, the ontology-implied
pairs (HPO) and the temporal split of the target relation (20 negatives per positive, as a run
does), with seconds and peak RSS (resource.getrusage) after each step; then nodes and edges per
type, the dated share and year range of each edge type, and for HPO how many Disease-Phenotype
edges a Gene-Phenotype edge already spells out (genes_to_phenotype.txt joins gene-disease links
with the diseases' annotations: a held-out annotation of a disease with a known gene keeps a
Disease-Gene-Phenotype path in the training graph). Target: load <= 60 s and <= 4 GB on 2 cores.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import subprocess
import sys

import numpy as np
import polars as pl
import scipy.sparse as sp
from omegaconf import OmegaConf

from bench_data import Steps, peak_gb
from hygrail.data import data_config
from hygrail.kg import NO_YEAR, Relation

TARGET = {"hpo": "hpo_dis_phe", "synthesis_recipes": "syn_tgt_pre"}


def bench(name: str, profile: bool) -> None:
    from hygrail.data import load_kg
    from hygrail.data.split import temporal_split

    cfg = OmegaConf.to_container(OmegaConf.create(data_config(name)), resolve=True)  # ${oc.env:...} in paths
    steps = Steps()
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    kg = steps.run("load_kg", load_kg, cfg)
    load_s, load_gb = steps.total, peak_gb()
    steps.run("adjacency", lambda: kg.adjacency)
    if kg.ancestors is not None:
        implied = steps.run("implied_adjacency", lambda: kg.implied_adjacency)
        print(f"  implied pairs (true-path rule, both orders): {implied.nnz:,}; ancestors nnz {kg.ancestors.nnz:,}")
    relation = kg.schema.relation(TARGET[name])
    split = steps.run(f"temporal_split({relation.name})", temporal_split, kg, relation)
    if prof:
        prof.disable()
    print("  split: " + ", ".join(f"{s} {c['pos']}+{c['neg']}" for s, c in split.counts().items()) + f" ({split.kind})")
    verdict = "OK" if load_s <= 60 and load_gb <= 4 else "OVER TARGET"
    print(f"  load {load_s:.1f} s, peak RSS {load_gb:.2f} GB (target <= 60 s, <= 4 GB: {verdict}); "
          f"load+adjacency+split {steps.total:.1f} s, peak RSS {peak_gb():.2f} GB")  # fmt: skip

    print(f"  {kg}")
    for t, n in kg.nodes.group_by("type").len().sort("len", descending=True).iter_rows():
        print(f"    {t:<20} {n:>8,} nodes")
    per_type = (
        kg.edges.group_by("type")
        .agg(pl.len().alias("n"), pl.col("count").sum().alias("rows"), (pl.col("year") != NO_YEAR).mean().alias("dated"),
             pl.col("year").filter(pl.col("year") != NO_YEAR).min().alias("first"), pl.col("year").max().alias("last"))
        .sort("n", descending=True)
    )  # fmt: skip
    for t, n, rows, dated, first, last in per_type.iter_rows():
        years = f"{first}-{last}" if first is not None else "-"
        mark = "  <- target" if t == kg.schema.edge_type(relation.src, relation.dst) else ""
        print(f"    {t:<20} {n:>8,} edges  count sum {rows:>8,}  dated {dated:6.1%}  years {years}{mark}")
    if name == "hpo":
        print(f"  Disease-Phenotype edges also spelled out by a Gene-Phenotype edge: {leak_share(kg):.1%}")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(20)


def leak_share(kg) -> float:
    """Share of Disease-Phenotype edges (d, p) with a gene g: Gene-Disease (g, d) and Gene-Phenotype (g, p)."""
    n = kg.num_nodes

    def matrix(src: str, dst: str) -> sp.csr_matrix:
        e = kg.relation_edges(Relation(f"{src}-{dst}", src, dst))
        return sp.csr_matrix((np.ones(e.height), (e["src"].to_numpy(), e["dst"].to_numpy())), shape=(n, n))

    via_gene = matrix("Disease", "Gene") @ matrix("Gene", "Phenotype")
    dp = kg.relation_edges(kg.schema.relation("hpo_dis_phe"))
    hit = np.asarray(via_gene[dp["src"].to_numpy(), dp["dst"].to_numpy()]).ravel() > 0
    return float(hit.mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kg", choices=["hpo", "synthesis_recipes", "both"], default="both")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--phase", choices=list(TARGET), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        return bench(args.phase, args.profile)
    for name in TARGET if args.kg == "both" else [args.kg]:
        print(f"data={name}: full graph (fresh process)", flush=True)
        subprocess.run([sys.executable, __file__, "--phase", name] + (["--profile"] if args.profile else []), check=True)


if __name__ == "__main__":
    main()
