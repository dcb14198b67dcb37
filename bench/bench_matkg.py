"""MatKG release loader and subgraph sampler at full release size (issue 2).

    python bench/bench_matkg.py                                 # full size: ~70k nodes, ~2.7 M edges, 20 M mentions
    python bench/bench_matkg.py --scale 2 --mentions 200000     # a quick check
    python bench/bench_matkg.py --mentions 0 --workdir /tmp/matkg --keep   # no year join; keep the files

A synthetic MatKG (conf/data/matkg_synthetic.yaml; scale 23.334 is the release's size) is written
in the release format and read back by ``load_matkg``, in three fresh processes so that each
process's peak RSS counts only its own work:
  make        generate the graph; SUBRELOBJ.csv (both directions per edge, as the release lists
              them); ENTPTNERDOI.csv (papers mentioning graph nodes, so that edges get years)
  load        load_matkg without years; kg.adjacency; temporal_split(chm_apl); sample_subgraph(3000)
  load+years  load_matkg with the ENTPTNERDOI year join; kg.adjacency; temporal_split(chm_apl)
Peak RSS is ru_maxrss: the process's maximum so far, so a step's figure includes earlier steps'.
Target (issue 2): load + adjacency + split <= 60 s and <= 4 GB.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from hygrail.data import data_config
from hygrail.data.matkg import load_matkg
from hygrail.data.split import temporal_split
from hygrail.data.stats import kg_stats
from hygrail.data.subgraph import sample_subgraph
from hygrail.data.synthetic import generate
from hygrail.kg import KG, Schema

RELATION = "chm_apl"
SUBGRAPH_NODES = 3000
TARGET_S, TARGET_GB = 60.0, 4.0
MENTIONS_PER_PAPER = 12  # mean entities per DOI (geometric, clipped to 2..200)
CHUNK_MENTIONS = 2_000_000  # ENTPTNERDOI rows built and written at a time, to bound the writer's memory


def schema_and_cfg(scale: float) -> tuple[Schema, dict]:
    cfg = data_config(scale=scale)
    return Schema.from_config(cfg["schema"]), cfg


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


class Steps:
    """Times each step (wall, CPU of all threads) and records the peak RSS after it."""

    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.rows: list[dict] = []

    def run(self, name: str, fn, *args):
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn(*args)
        row = {"phase": self.phase, "step": name, "wall_s": time.perf_counter() - wall,
               "cpu_s": time.process_time() - cpu, "peak_gb": peak_gb()}  # fmt: skip
        self.rows.append(row)
        print(f"  {name:<24} {row['wall_s']:8.2f} s wall {row['cpu_s']:8.2f} s CPU   peak RSS {row['peak_gb']:6.2f} GB",
              flush=True)  # fmt: skip
        return out

    def save(self, workdir: Path) -> None:
        (workdir / f"steps-{self.phase}.json").write_text(json.dumps(self.rows))


# -- release-format files ---------------------------------------------------------------------
def write_subrelobj(kg: KG, path: Path) -> None:
    """Subject,Object,Rel,Count: each undirected edge as two rows, Rel naming Subject's type first."""
    u, v = kg.edges["u"].to_numpy(), kg.edges["v"].to_numpy()
    names, types = kg.nodes["name"], kg.nodes["type"]
    fwd = pl.DataFrame({"Subject": names.gather(u), "Object": names.gather(v),
                        "ts": types.gather(u), "to": types.gather(v), "Count": kg.counts})  # fmt: skip
    rows = pl.concat([
        fwd.select("Subject", "Object", pl.format("{}-{}", "ts", "to").alias("Rel"), "Count"),
        fwd.select(pl.col("Object").alias("Subject"), pl.col("Subject").alias("Object"),
                   pl.format("{}-{}", "to", "ts").alias("Rel"), "Count"),
    ])  # fmt: skip
    # The release is not sorted by pair; shuffled rows keep the loader from profiting by accident.
    rows.sample(fraction=1.0, shuffle=True, seed=0).write_csv(path)


def write_entptnerdoi(kg: KG, path: Path, n_mentions: int, seed: int = 0) -> None:
    """Entity,Part_of_text,NER_Tag,DOI,Preferred_Entity,Year: ~n_mentions rows, all naming graph nodes.

    Each paper mentions both ends of one uniformly drawn edge, dated with that edge's synthetic year,
    plus entities drawn in proportion to degree (edge endpoints), so most edges are co-mentioned.
    Every row matches a node: the worst case for the year join's memory.
    """
    rng = np.random.default_rng(seed)
    u, v, years = (kg.edges[c].to_numpy() for c in ("u", "v", "year"))
    endpoints = np.concatenate([u, v])
    years = np.where(years >= 0, years, rng.integers(1995, 2024, len(years)))
    # n_mentions // 2 + 1 papers of >= 2 mentions always reach n_mentions; keep just enough of them.
    k = np.clip(rng.geometric(1 / MENTIONS_PER_PAPER, n_mentions // 2 + 1), 2, 200)
    k = k[: np.searchsorted(np.cumsum(k), n_mentions) + 1]
    names, types = kg.nodes["name"], kg.nodes["type"]
    # Chunks of whole papers, ~CHUNK_MENTIONS rows each.
    cum = np.cumsum(k)
    bounds = np.unique(np.r_[0, np.searchsorted(cum, np.arange(CHUNK_MENTIONS, cum[-1], CHUNK_MENTIONS)), len(k)])
    with open(path, "wb") as f:
        for start, stop in zip(bounds[:-1], bounds[1:]):
            sizes = k[start:stop]
            anchor = rng.integers(len(u), size=len(sizes))
            first = np.repeat(np.cumsum(sizes) - sizes, sizes)
            pos = np.arange(sizes.sum()) - first  # position of a mention within its paper
            ent = endpoints[rng.integers(len(endpoints), size=len(pos))]
            paper_anchor = np.repeat(anchor, sizes)
            ent = np.where(pos == 0, u[paper_anchor], np.where(pos == 1, v[paper_anchor], ent))
            name = names.gather(ent)
            pl.DataFrame({
                "Entity": name.str.to_lowercase(),  # the surface form; the loader reads Preferred_Entity
                "Part_of_text": pl.repeat("Abstract", len(pos), eager=True),
                "NER_Tag": types.gather(ent),
                "DOI": "10.1000/hyg." + pl.Series(np.repeat(np.arange(start, stop), sizes)).cast(pl.String),
                "Preferred_Entity": name,
                "Year": np.repeat(years[anchor], sizes),
            }).write_csv(f, include_header=start == 0)  # fmt: skip


# -- phases (each in its own process) ---------------------------------------------------------
def make(workdir: Path, scale: float, n_mentions: int) -> None:
    schema, cfg = schema_and_cfg(scale)
    steps = Steps("make")
    kg = steps.run("generate", generate, schema, cfg)
    # The release lists edges only, so a node without edges is not in it (nor in the loaded KG).
    print(f"  {kg}; {int((kg.degree == 0).sum())} nodes without edges")
    steps.run("write SUBRELOBJ.csv", write_subrelobj, kg, workdir / "SUBRELOBJ.csv")
    if n_mentions:
        steps.run("write ENTPTNERDOI.csv", write_entptnerdoi, kg, workdir / "ENTPTNERDOI.csv", n_mentions)
    sizes = {p.name: p.stat().st_size / 2**20 for p in sorted(workdir.glob("*.csv"))}
    print("  files: " + ", ".join(f"{k} {v:.0f} MB" for k, v in sizes.items()))
    steps.save(workdir)


def load(workdir: Path, scale: float, with_years: bool) -> None:
    schema, _ = schema_and_cfg(scale)
    steps = Steps("load+years" if with_years else "load")
    mentions = workdir / "ENTPTNERDOI.csv" if with_years else None
    kg = steps.run("load_matkg", load_matkg, workdir / "SUBRELOBJ.csv", schema, mentions)
    print(f"  {kg}; {int((kg.edges['year'] >= 0).sum())} edges dated")
    steps.run("adjacency", lambda: kg.adjacency)
    split = steps.run(f"temporal_split({RELATION})", temporal_split, kg, schema.relation(RELATION))
    print("  split: " + ", ".join(f"{s} {c['pos']}+{c['neg']}" for s, c in split.counts().items()))
    if not with_years:
        sub = steps.run(f"sample_subgraph({SUBGRAPH_NODES})", sample_subgraph, kg, SUBGRAPH_NODES, 42)
        describe_subgraph(kg, sub)
    steps.save(workdir)


def describe_subgraph(kg: KG, sub: KG) -> None:
    d_sub, d_full = kg_stats(sub)["density"], kg_stats(kg)["density"]  # the paper's E / (N (N - 1))
    print(f"  subgraph: {sub}; density {d_sub:.3g} vs full {d_full:.3g} (ratio {d_sub / d_full:.3f})")
    full_n = np.bincount(kg.node_types, minlength=len(kg.schema.node_types))
    sub_n = np.bincount(sub.node_types, minlength=len(kg.schema.node_types))
    print("  nodes per type (subgraph / full): " + ", ".join(
        f"{t} {s}/{f}" for t, s, f in zip(kg.schema.node_types, sub_n, full_n)))  # fmt: skip


# -- driver ------------------------------------------------------------------------------------
def summary(workdir: Path, phases: list[str]) -> None:
    rows = [r for p in phases for r in json.loads((workdir / f"steps-{p}.json").read_text())]
    print(f"\nSummary (peak RSS: the process's maximum after the step)\n"
          f"  {'phase':<11} {'step':<24} {'wall s':>8} {'CPU s':>8} {'peak GB':>8}")  # fmt: skip
    for r in rows:
        print(f"  {r['phase']:<11} {r['step']:<24} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {r['peak_gb']:8.2f}")
    for phase in ("load", "load+years"):
        # load, adjacency, split: the first three steps of a load phase.
        timed = [r for r in rows if r["phase"] == phase][:3]
        if not timed:
            continue
        wall, peak = sum(r["wall_s"] for r in timed), timed[-1]["peak_gb"]
        verdict = "OK" if wall <= TARGET_S and peak <= TARGET_GB else "OVER TARGET"
        print(f"  {phase}: load+adjacency+split {wall:.1f} s, peak RSS {peak:.2f} GB "
              f"(target <= {TARGET_S:.0f} s, <= {TARGET_GB:.0f} GB: {verdict})")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=23.334, help="synthetic MatKG scale (23.334: release size)")
    ap.add_argument("--mentions", type=int, default=20_000_000, help="ENTPTNERDOI rows; 0 skips the year join")
    ap.add_argument("--workdir", type=Path, help="where the CSVs go (default: a new temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder and its files")
    ap.add_argument("--phase", choices=["make", "load", "load+years"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="  %(levelname)s %(name)s: %(message)s")
    if args.phase == "make":
        return make(args.workdir, args.scale, args.mentions)
    if args.phase:
        return load(args.workdir, args.scale, args.phase == "load+years")

    temporary = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="bench_matkg_")) if temporary else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    phases = ["make", "load"] + (["load+years"] if args.mentions else [])
    try:
        for phase in phases:
            print(f"{phase} (scale {args.scale}, {args.mentions} mentions; fresh process)", flush=True)
            subprocess.run([sys.executable, __file__, "--phase", phase, "--workdir", str(workdir),
                            "--scale", str(args.scale), "--mentions", str(args.mentions)], check=True)  # fmt: skip
        summary(workdir, phases)
    finally:
        if temporary and not args.keep:
            shutil.rmtree(workdir)
        else:
            print(f"files kept in {workdir}")


if __name__ == "__main__":
    main()
