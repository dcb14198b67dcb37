"""The benchmark's second KG: a synthetic biomedical graph with another schema and degree profile.

    python bench/biokg.py outputs/biokg            # writes nodes.csv + edges.csv (2,930 nodes, 20,170 edges)
    python -m hygrail.sweep data=biokg relation=cpd_dis method=gnn_only backbone=hgt_plus

It exists to check that the triage works on a KG that is not MatKG-shaped, loaded the way a new
user would load one (``data=csv`` with its own schema, ``conf/data/biokg.yaml`` +
``conf/data/schema/biokg.yaml`` + ``conf/relation/{cpd_dis,gen_dis}.yaml``). What differs from the
synthetic MatKG (``hygrail/data/synthetic.py``):

- schema: genes (GEN), diseases (DIS), compounds (CPD), pathways (PWY), phenotypes (PHE),
  tissues (ANA); hypothesis relations compound-treats-disease (``cpd_dis``) and
  gene-associated-with-disease (``gen_dis``);
- degree profile: the gene-gene interaction network grows by preferential attachment (power-law
  tail: the best-connected genes have 40-80 gene partners), every other type has narrow, Poisson-like degrees;
  support counts are small (1 + geometric) with no floor, where MatKG's are heavy-tailed >= 30;
- mechanism: links follow pathway biology, not topics and wedge closure: a disease involves one
  or two pathways, its genes come from them; a compound hits targets in one pathway and treats
  diseases involving it. Some years are unknown (empty), as in many real KGs;
- time: gene-disease links of highly connected genes and compound-disease links backed by a
  direct target-disease gene are old; indirect ones (target only in the disease's pathway, the
  "repurposing" links) are recent, so the temporal split tests on the indirect ones;
- names are identifiers (``GEN0421``, ``DIS017``): name embeddings carry no signal here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl
from omegaconf import OmegaConf

from hygrail.data.csv import save_csv
from hygrail.kg import NO_YEAR, KG, Schema

CONF = Path(__file__).resolve().parents[1] / "conf"
SIZES = {"GEN": 1500, "DIS": 400, "CPD": 700, "PWY": 40, "PHE": 250, "ANA": 40}


def schema() -> Schema:
    return Schema.from_config(OmegaConf.to_container(OmegaConf.load(CONF / "data/schema/biokg.yaml")))


def generate(seed: int = 0, scale: float = 1.0) -> KG:
    """A BioKG-like graph (module docstring); ``scale`` multiplies every node count."""
    rng = np.random.default_rng(seed)
    sizes = {t: max(4, int(round(n * scale))) for t, n in SIZES.items()}
    first = np.cumsum([0] + list(sizes.values()))[:-1]
    ids = {t: f + np.arange(n) for (t, n), f in zip(sizes.items(), first)}
    n_pwy = sizes["PWY"]
    rows: list[tuple[np.ndarray, np.ndarray, str, np.ndarray, np.ndarray]] = []

    def add(u, v, etype, years, counts=None):
        u, v = np.asarray(u), np.asarray(v)
        keep = u != v
        counts = 1 + rng.geometric(0.35, len(u)) if counts is None else counts
        rows.append((u[keep], v[keep], etype, np.asarray(years)[keep], np.asarray(counts)[keep]))

    def year(n, lo=1990, hi=2022):
        return rng.integers(lo, hi + 1, n)

    # Genes: a primary pathway, a second one for some; pathway membership edges (80% observed).
    n_gen = sizes["GEN"]
    pwy1 = rng.integers(0, n_pwy, n_gen)
    pwy2 = np.where(rng.random(n_gen) < 0.3, rng.integers(0, n_pwy, n_gen), -1)
    g_all = np.concatenate([np.arange(n_gen), np.flatnonzero(pwy2 >= 0)])
    p_all = np.concatenate([pwy1, pwy2[pwy2 >= 0]])
    seen = rng.random(len(g_all)) < 0.8
    add(ids["GEN"][g_all[seen]], ids["PWY"][p_all[seen]], "GEN-PWY", np.full(seen.sum(), NO_YEAR))

    # Gene-gene interactions: preferential attachment (2 partners per new gene) + within-pathway pairs.
    order = rng.permutation(n_gen)
    deg = np.ones(n_gen)
    pa_u, pa_v = [], []
    for i, g in enumerate(order[2:], start=2):
        prev = order[:i]
        p = deg[prev] / deg[prev].sum()
        for t in rng.choice(prev, 2, replace=False, p=p):
            pa_u.append(g)
            pa_v.append(t)
            deg[[g, t]] += 1
    same = [rng.choice(np.flatnonzero(pwy1 == p), size=(int(0.6 * (pwy1 == p).sum()), 2)) for p in range(n_pwy) if (pwy1 == p).sum() > 1]
    same = np.concatenate(same)
    u = np.concatenate([pa_u, same[:, 0]])
    v = np.concatenate([pa_v, same[:, 1]])
    add(ids["GEN"][u], ids["GEN"][v], "GEN-GEN", year(len(u)))
    hub = np.log1p(deg) / np.log1p(deg).max()  # 0..1, high for interaction hubs

    # Tissues: genes expressed in 1-4, diseases located in 1-2 (pathways have favourite tissues).
    n_ana = sizes["ANA"]
    pwy_tissue = rng.integers(0, n_ana, (n_pwy, 3))
    k = rng.integers(1, 5, n_gen)
    gu = np.repeat(np.arange(n_gen), k)
    tis = np.where(rng.random(len(gu)) < 0.6, pwy_tissue[pwy1[gu], rng.integers(0, 3, len(gu))], rng.integers(0, n_ana, len(gu)))
    add(ids["GEN"][gu], ids["ANA"][tis], "GEN-ANA", np.full(len(gu), NO_YEAR))

    # Diseases: one or two pathways; 2-12 genes drawn from them, hub genes preferred; 10% stray genes.
    n_dis = sizes["DIS"]
    d_pwy = np.stack([rng.integers(0, n_pwy, n_dis), np.where(rng.random(n_dis) < 0.4, rng.integers(0, n_pwy, n_dis), -1)], 1)
    members = [np.flatnonzero((pwy1 == p) | (pwy2 == p)) for p in range(n_pwy)]
    dg_u, dg_v, dg_year = [], [], []
    for d in range(n_dis):
        pool = np.unique(np.concatenate([members[p] for p in d_pwy[d] if p >= 0]))
        k = min(len(pool), int(rng.integers(2, 13)))
        w = 0.2 + hub[pool] ** 2
        genes = rng.choice(pool, k, replace=False, p=w / w.sum())
        stray = rng.integers(0, n_gen, rng.binomial(k, 0.1))
        genes = np.unique(np.concatenate([genes, stray]))
        dg_u.append(np.full(len(genes), d))
        dg_v.append(genes)
        # well-connected genes were studied first
        dg_year.append(np.clip(np.round(2022 - 30 * hub[genes] - rng.normal(0, 5, len(genes))), 1985, 2023))
    dg_u, dg_v, dg_year = np.concatenate(dg_u), np.concatenate(dg_v), np.concatenate(dg_year).astype(int)
    add(ids["GEN"][dg_v], ids["DIS"][dg_u], "GEN-DIS", dg_year)
    d_genes = [set(dg_v[dg_u == d].tolist()) for d in range(n_dis)]
    dt = rng.integers(0, 3, (n_dis, 2))
    dis_tis = np.concatenate([pwy_tissue[d_pwy[:, 0], dt[:, 0]], pwy_tissue[d_pwy[:, 0], dt[:, 1]]])
    add(ids["DIS"][np.tile(np.arange(n_dis), 2)], ids["ANA"][dis_tis], "DIS-ANA", year(2 * n_dis))

    # Phenotypes: each pathway has a few typical ones; diseases show 3-8 (mostly their pathways').
    n_phe = sizes["PHE"]
    pwy_phe = rng.integers(0, n_phe, (n_pwy, 6))
    k = rng.integers(3, 9, n_dis)
    du = np.repeat(np.arange(n_dis), k)
    phe = np.where(rng.random(len(du)) < 0.7, pwy_phe[d_pwy[du, 0], rng.integers(0, 6, len(du))], rng.integers(0, n_phe, len(du)))
    add(ids["DIS"][du], ids["PHE"][phe], "DIS-PHE", year(len(du)))

    # Compounds: a mechanism pathway, 1-4 targets in it (20% elsewhere); side effects from it too.
    n_cpd = sizes["CPD"]
    c_pwy = rng.integers(0, n_pwy, n_cpd)
    k = rng.integers(1, 5, n_cpd)
    cu = np.repeat(np.arange(n_cpd), k)
    tgt = np.array([rng.choice(members[c_pwy[c]]) if (rng.random() < 0.8 and len(members[c_pwy[c]])) else rng.integers(0, n_gen) for c in cu])
    add(ids["CPD"][cu], ids["GEN"][tgt], "CPD-GEN", year(len(cu)))
    c_targets = [set(tgt[cu == c].tolist()) for c in range(n_cpd)]
    k = rng.integers(2, 7, n_cpd)
    cu = np.repeat(np.arange(n_cpd), k)
    se = np.where(rng.random(len(cu)) < 0.5, pwy_phe[c_pwy[cu], rng.integers(0, 6, len(cu))], rng.integers(0, n_phe, len(cu)))
    add(ids["CPD"][cu], ids["PHE"][se], "CPD-PHE", year(len(cu)))

    # Treatments: a compound treats 1-3 diseases involving its pathway (10% stray). A direct link
    # (a target is one of the disease's genes) is old, a pathway-only one recent (repurposing).
    cd_u, cd_v, cd_year = [], [], []
    dis_of_pwy = [np.flatnonzero((d_pwy == p).any(1)) for p in range(n_pwy)]
    for c in range(n_cpd):
        pool = dis_of_pwy[c_pwy[c]]
        if len(pool) == 0:
            continue
        direct = np.array([len(c_targets[c] & d_genes[d]) > 0 for d in pool])
        w = np.where(direct, 3.0, 1.0)
        ds = rng.choice(pool, min(len(pool), int(rng.integers(1, 4))), replace=False, p=w / w.sum())
        if rng.random() < 0.1:
            ds = np.append(ds, rng.integers(0, n_dis))
        ds = np.unique(ds)
        is_direct = np.array([len(c_targets[c] & d_genes[d]) > 0 for d in ds])
        cd_u.append(np.full(len(ds), c))
        cd_v.append(ds)
        cd_year.append(np.where(is_direct, rng.integers(1985, 2012, len(ds)), rng.integers(2005, 2024, len(ds))))
    cd_u, cd_v, cd_year = np.concatenate(cd_u), np.concatenate(cd_v), np.concatenate(cd_year)
    add(ids["CPD"][cd_u], ids["DIS"][cd_v], "CPD-DIS", cd_year)

    names = [f"{t}{i:04d}" for t, n in sizes.items() for i in range(n)]
    types = [t for t, n in sizes.items() for _ in range(n)]
    edges = pl.DataFrame(
        {
            "u": np.concatenate([r[0] for r in rows]),
            "v": np.concatenate([r[1] for r in rows]),
            "type": np.concatenate([[r[2]] * len(r[0]) for r in rows]),
            "count": np.concatenate([r[4] for r in rows]).astype(np.int64),
            "year": np.concatenate([r[3] for r in rows]).astype(np.int32),
        }
    )
    s = schema()
    # Undirected, one edge per pair: order each pair, keep the first occurrence (count max, year min).
    edges = (
        edges.with_columns(pl.min_horizontal("u", "v").alias("u"), pl.max_horizontal("u", "v").alias("v"))
        .with_columns(pl.col("type").map_elements(s.canonical, return_dtype=pl.String))
        .group_by("u", "v", maintain_order=True)
        .agg(pl.col("type").first(), pl.col("count").max(), pl.col("year").filter(pl.col("year") >= 0).min().fill_null(NO_YEAR))
    )
    return KG(s, pl.DataFrame({"name": names, "type": types}), edges)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="folder for nodes.csv and edges.csv")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    kg = generate(args.seed, args.scale)
    nodes, edges = save_csv(kg, args.out)
    print(f"{kg}: wrote {nodes} and {edges}")


if __name__ == "__main__":
    main()
