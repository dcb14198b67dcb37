"""Evidence retrieval + template naturalization speed (issue: graph evidence).

Prints median / p95 / max ms per hypothesis for ``retrieve`` + ``render(mode="template")`` on
  - the paper-size synthetic MatKG (3,000 nodes) and a full-MatKG-size one (``--scale``, 23.334), via
    ``hygrail.data.synthetic.generate`` when that module exists, and
  - a heavy-tailed random graph with the whole MatKG release's size (70,002 nodes, ~2.5 M
    undirected edges, per-type shares from shared/matkg-sample/README.md): the hub stress case.
Hypotheses: val/test pairs of one relation (positives and sampled negatives) plus pairs built from
the most-connected endpoints of each side. The one-off per-graph set-up (CSR, statistics) is
reported apart, and within it the path-strength calibration (``evidence_cuts``: the relation's
own training edges retrieved once per graph). Target: <= 20 ms median at full size.

    .venv/bin/python bench/bench_evidence.py [--relation chm_apl] [--n 300] [--scale 23] [--skip-release]
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import numpy as np
import polars as pl
from omegaconf import OmegaConf

from hygrail.data import data_config
from hygrail.data.split import temporal_split
from hygrail.evidence.naturalize import render
from hygrail.evidence.retrieve import evidence_cuts, retrieve
from hygrail.kg import KG, Schema

CONF = Path(__file__).resolve().parents[1] / "conf"

# Whole MatKG release (shared/matkg-sample/README.md): rows per relation, one direction.
RELEASE_EDGES = {
    "PRO-PRO": 513_780, "CHM-CHM": 502_596, "CHM-PRO": 338_940, "PRO-DSC": 223_370, "PRO-CMT": 211_489,
    "CHM-CMT": 209_937, "CMT-CMT": 192_658, "CHM-DSC": 167_883, "DSC-DSC": 136_428, "PRO-APL": 120_372,
    "DSC-CMT": 116_373, "CHM-APL": 107_848, "APL-APL": 92_374, "CHM-SMT": 82_768, "PRO-SMT": 75_296,
    "SPL-SPL": 5_002, "SMT-SPL": 4_271, "APL-SPL": 3_005,
}
RELEASE_NODES = {"PRO": 37_265, "CHM": 31_182, "APL": 27_134, "SMT": 21_027, "CMT": 16_797, "SPL": 8_656, "DSC": 6_909}
RELEASE_ENTITIES = 70_002


def release_like(schema: Schema, seed: int = 0, zipf: float = 0.8) -> KG:
    """Heavy-tailed random KG of the release's size: Zipf endpoint popularity, counts >= 30."""
    rng = np.random.default_rng(seed)
    share = RELEASE_ENTITIES / sum(RELEASE_NODES.values())
    sizes = {t: max(1, round(n * share)) for t, n in RELEASE_NODES.items()}
    names, types, offset, pop = [], [], {}, {}
    for t in schema.node_types:
        offset[t] = len(names)
        names += [f"{t.lower()}_{i}" for i in range(sizes[t])]
        types += [t] * sizes[t]
        w = rng.permutation(sizes[t]) + 1.0
        pop[t] = w ** -zipf / np.sum(w ** -zipf)
    # Same-type rows (PRO-PRO) are listed in both directions in the README: halve them.
    listed = {schema.canonical(k): v // 2 if k[:3] == k[4:] else v for k, v in RELEASE_EDGES.items()}
    others = [
        schema.edge_type(a, b)
        for i, a in enumerate(schema.node_types)
        for b in schema.node_types[i:]
        if schema.edge_type(a, b) not in listed
    ]
    rest = min(listed.values())  # the README elides the smallest types ("..."): give each the smallest listed
    frames = []
    for etype in [*listed, *others]:
        a, _, b = etype.partition("-")
        n = listed.get(etype, rest)
        src = offset[a] + rng.choice(sizes[a], n, p=pop[a])
        dst = offset[b] + rng.choice(sizes[b], n, p=pop[b])
        lo, hi = np.minimum(src, dst), np.maximum(src, dst)
        key = np.unique(lo.astype(np.int64) * RELEASE_ENTITIES + hi)
        lo, hi = key // RELEASE_ENTITIES, key % RELEASE_ENTITIES
        ok = lo != hi
        frames.append(pl.DataFrame({"u": lo[ok], "v": hi[ok], "type": etype}))
    edges = pl.concat(frames)
    m = edges.height
    edges = edges.with_columns(
        pl.Series("count", (30 + rng.pareto(1.2, m) * 30).astype(np.int64).clip(30, 20_000)),
        pl.Series("year", rng.integers(1995, 2024, m).astype(np.int32)),
    )
    return KG(schema, pl.DataFrame({"name": names, "type": types}), edges)


def synthetic(scale: float) -> KG | None:
    try:
        from hygrail.data.synthetic import generate
    except ImportError:
        return None
    cfg = data_config(scale=scale)
    return generate(Schema.from_config(cfg["schema"]), cfg)


def hypotheses(kg: KG, split, n: int, n_hub: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n val/test pairs plus n_hub pairs among the most-connected endpoints of each side."""
    rng = np.random.default_rng(seed)
    held = split.pairs.filter(pl.col("split") != "train")
    pick = rng.choice(held.height, min(n, held.height), replace=False)
    src, dst = held["src"].to_numpy()[pick], held["dst"].to_numpy()[pick]
    deg = kg.degree
    rel = split.relation
    top_s = kg.nodes_of_type(rel.src)[np.argsort(-deg[kg.nodes_of_type(rel.src)])[:n_hub]]
    top_d = kg.nodes_of_type(rel.dst)[np.argsort(-deg[kg.nodes_of_type(rel.dst)])[:n_hub]]
    rnd_d = rng.choice(kg.nodes_of_type(rel.dst), n_hub)
    hub_src = np.concatenate([top_s, top_s])
    hub_dst = np.concatenate([top_d[rng.permutation(n_hub)], rnd_d])
    return np.stack([src, dst], 1), np.stack([hub_src, hub_dst], 1)


def time_pairs(kg: KG, pairs: np.ndarray, relation, cfg, templates) -> np.ndarray:
    ms = np.empty(len(pairs))
    for i, (u, v) in enumerate(pairs):
        t0 = time.perf_counter()
        ev = retrieve(kg, int(u), int(v), relation, cfg)
        render(ev, "template", templates, 0.5, cfg)
        ms[i] = (time.perf_counter() - t0) * 1e3
    return ms


def report(name: str, kg: KG, relation_name: str, n: int, cfg, templates) -> None:
    relation = kg.schema.relation(relation_name)
    t0 = time.perf_counter()
    split = temporal_split(kg, relation)
    graph = split.train_graph
    t1 = time.perf_counter()
    normal, hubs = hypotheses(graph, split, n, 10, seed=0)
    warm = time_pairs(graph, normal[:1], relation, cfg, templates)[0]  # builds CSR + statistics
    t_normal = time_pairs(graph, normal, relation, cfg, templates)
    t_hubs = time_pairs(graph, hubs, relation, cfg, templates)
    both = np.concatenate([t_normal, t_hubs])
    deg = graph.degree
    print(f"\n== {name}: {graph!r}, max degree {deg.max()}, relation {relation_name}")
    cuts = evidence_cuts(graph, relation, cfg)  # cached by the first call: its cost is inside that call
    print(f"   split {t1 - t0:.1f} s; first call (CSR + stats + calibration) {warm:.0f} ms, of which "
          f"calibration {cuts.seconds * 1e3:.0f} ms ({cuts.calibration_pairs} edges, {cuts.calibration_paths} paths)")
    print(f"   cuts: strong {cuts.strong:.3f}, moderate {cuts.moderate:.3f}; hub degree "
          + ", ".join(f"{t} {d:.0f}" for t, d in cuts.hub_degree.items()))
    for label, t in (("val/test pairs", t_normal), ("hub pairs", t_hubs), ("all", both)):
        print(
            f"   {label:15s} n={len(t):4d}  median {np.median(t):7.2f} ms  p95 {np.percentile(t, 95):7.2f} ms  "
            f"max {t.max():7.2f} ms"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--relation", default="chm_apl")
    ap.add_argument("--n", type=int, default=300, help="val/test hypotheses timed per graph")
    ap.add_argument("--scale", type=float, default=23.334, help="synthetic scale for full-MatKG size")
    ap.add_argument("--skip-release", action="store_true", help="skip the release-size heavy-tailed graph")
    args = ap.parse_args()
    cfg = OmegaConf.load(CONF / "evidence/template.yaml")
    templates = OmegaConf.to_container(OmegaConf.load(CONF / f"relation/{args.relation}.yaml"))["templates"]
    cfg = OmegaConf.to_container(cfg)
    schema = Schema.from_config(OmegaConf.to_container(OmegaConf.load(CONF / "data/schema/matkg.yaml")))

    for scale in (1.0, args.scale):
        t0 = time.perf_counter()
        kg = synthetic(scale)
        if kg is None:
            print("hygrail.data.synthetic not available: synthetic graphs skipped")
            break
        print(f"\nsynthetic scale {scale}: generated in {time.perf_counter() - t0:.1f} s")
        report(f"synthetic x{scale:g}", kg, args.relation, args.n, cfg, templates)
        del kg
    if not args.skip_release:
        t0 = time.perf_counter()
        kg = release_like(schema)
        print(f"\nrelease-size heavy-tailed graph built in {time.perf_counter() - t0:.1f} s")
        report("release-size heavy-tailed", kg, args.relation, args.n, cfg, templates)
    print(f"\npeak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
