"""How often a disease's list proposes a term whose opposite is recorded or also proposed (issue #56;
hygrail/discovery/opposites.py), on random diseases of the whole HPO graph, and how often the recorded
annotations themselves hold such a pair (the base rate: a record may hold both poles).

The lists are the first answer's (the stack without the GNN, fit or read from the cache as
``make discover`` does: conf/experiment/discover_hpo.yaml), so no GNN is trained here; each disease's
twins' annotations are left out as on the page.

    python bench/bench_contradictions.py [--n 100] [--k 10] [--seed 0]    # experiments/contradictions.md
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import numpy as np
from hydra import compose, initialize_config_dir

from hygrail.data import load_kg
from hygrail.discovery import entities, first_answer, options
from hygrail.discovery.compositions import recorded
from hygrail.discovery.opposites import Opposites
from hygrail.discovery.space import CandidateSpace
from hygrail.stages import build_split, plain

CONF = Path(__file__).resolve().parents[1] / "conf"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="random diseases")
    ap.add_argument("--k", type=int, default=10, help="the head of each list that is read")
    ap.add_argument("--seed", type=int, default=0, help="which diseases")
    args = ap.parse_args()
    t0 = time.perf_counter()
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=discover_hpo"])
    d = options(cfg) | {"entity_k": args.k}
    kg = load_kg(plain(cfg.data))
    rel = kg.schema.relation(cfg.relation.name)
    space = CandidateSpace(kg, rel)
    _, split = build_split(cfg, kg)
    diseases = np.random.default_rng(args.seed).choice(space.src, size=args.n, replace=False)
    wanted = entities.resolve(space, diseases.tolist())
    report, _ = first_answer.lists(d, split, space, wanted, cfg.backbone, int(cfg.seed), Path(cfg.paths.cache))
    opp = Opposites.of(kg, rel.dst)
    lists_with, vs_recorded, within, flagged, self_contra = 0, 0, 0, 0, 0
    kinds: Counter = Counter()
    examples = []
    for lst in report.lists:
        mine = recorded(kg, lst.entity.node, rel)["id"].to_list()
        ids = lst.table["id"].to_list()
        flags = opp.flags(ids, mine)
        if flags:
            lists_with += 1
            vs_recorded += any(w == "recorded" for f in flags.values() for _, w in f)
            within += any(w == "also suggested" for f in flags.values() for _, w in f)
            flagged += len(flags)
            for x, f in flags.items():
                kinds[(kg.names[x], kg.names[f[0][0]])] += 1
            if len(examples) < 8:
                x, f = next(iter(flags.items()))
                examples.append(f"{lst.entity.name}: {kg.names[x]} (opposite of {kg.names[f[0][0]]}, {f[0][1]})")
        self_contra += any(opp.conflict(a, b) for i, a in enumerate(mine) for b in mine[i + 1:])
    n = len(report.lists)
    print(f"{n} random diseases (seed {args.seed}), top {args.k} of the first answer's lists (Stack without GNN):")
    print(f"  lists with a contradiction: {lists_with} ({lists_with / n:.0%}); against the record {vs_recorded}, "
          f"within the list {within}; flagged suggestions {flagged} of {n * args.k}")
    print(f"  records holding an opposite pair themselves: {self_contra} ({self_contra / n:.0%})")
    print(f"  opposite pairs in hp.obo by the rule: {len(opp.pairs)}")
    print("  most frequent:", "; ".join(f"{a} vs {b} ({c})" for (a, b), c in kinds.most_common(8)))
    print("  examples:", *examples, sep="\n    ")
    co_recorded(kg, rel, opp)
    print(f"  {time.perf_counter() - t0:.0f} s")


def co_recorded(kg, rel, opp: Opposites, shown: int = 12) -> None:
    """Over every disease of the graph: how many record both poles of a pair (a term at or under each), and
    for each pair that many against its expectation were the two poles recorded independently
    (n_a * n_b / diseases): a pair recorded together more often than chance is no exclusion in the
    record (a disease's annotations pool its patients)."""
    edges = kg.relation_edges(rel)
    terms: dict[int, list[int]] = {}
    for s, t in zip(edges["src"].to_list(), edges["dst"].to_list()):
        terms.setdefault(s, []).append(t)
    has: dict[int, set[int]] = {}  # a pair's term -> the diseases recording it or a term under it
    for disease, mine in terms.items():
        for t in mine:
            for a in opp.up(t) & opp.partners.keys():
                has.setdefault(a, set()).add(disease)
    n = len(terms)
    rows = [(len(has[a] & has[b]), len(has[a]) * len(has[b]) / n, a, b) for a, b in opp.pairs if a in has and b in has]
    both = sum(r[0] for r in rows)
    print(f"whole graph: {n:,} diseases; {len(rows)} of the {len(opp.pairs)} pairs have both poles recorded somewhere; "
          f"diseases recording both poles, summed over pairs: {both:,} against {sum(r[1] for r in rows):,.0f} expected "
          f"by chance; diseases holding any such pair: {len({d for a, b in opp.pairs if a in has and b in has for d in has[a] & has[b]}):,}")
    for o, e, a, b in sorted(rows, key=lambda r: -r[0])[:shown]:
        print(f"  {kg.names[a]} / {kg.names[b]}: {o} diseases, {o / e:.1f} x chance")


if __name__ == "__main__":
    main()
