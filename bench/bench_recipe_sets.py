"""He et al.'s precursor-set benchmark on the whole recipes, temporal split (issue #47;
hygrail/recipes/benchmark.py): success@1/3/5/10 by exact set match for the set ranker, He et al.'s
method (element similarity), per-element popularity and the stacked ranker's per-precursor scores
composed into sets, with the paired differences; then the same rows on He et al.'s own split replayed
(hygrail/recipes/he_split.py); prints Markdown (experiments/recipes_sets.md).

    .venv/bin/python bench/bench_recipe_sets.py                  # cutoffs 2010 and 2014, 3-year horizon
    .venv/bin/python bench/bench_recipe_sets.py --no-stack       # without the stack row (no GNN: ~5 min)
    .venv/bin/python bench/bench_recipe_sets.py --split he       # He et al.'s split only (~2 min)
    .venv/bin/python bench/bench_recipe_sets.py --out outputs/recipes_bench   # also one CSV row per target
    .venv/bin/python bench/bench_recipe_sets.py --no-stack --split temporal --trust experiments/trust/syn_tgt_pre_sets.csv
                                                 # the page's trust figures (hygrail/recipes/trust.py)

The stack row trains the cutoff's GNN as ``make retro DATA=synthesis_recipes CUTOFF=...`` does (the same
config, conf/experiment/retro_synthesis_recipes.yaml, so the same cache entry: ~7 min a cutoff when not
cached) and fits the stack (cached too).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]


def config(cutoff: int, outputs: str):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=["experiment=retro_synthesis_recipes", f"discover.cutoff={cutoff}",
                                            f"paths.outputs={outputs}"])


def cells(cols: list[str], row: dict) -> str:
    out = []
    for c in cols:
        v = row[c]
        out.append(f"{v:.3f} ± {row[c + '_se']:.3f}" if f"{c}_se" in row else str(v))
    return "| " + " | ".join(out) + " |"


def markdown(df: pl.DataFrame, first: str) -> list[str]:
    cols = [first] + [c for c in df.columns if c != first and not c.endswith("_se")]
    names = [c.replace("success_at_", "success@").replace("at_", "@") for c in cols]
    return ["| " + " | ".join(names) + " |", "|" + "---|" * len(cols), *(cells(cols, r) for r in df.iter_rows(named=True))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cutoffs", default="2010,2014")
    ap.add_argument("--horizon", type=int, default=3)
    ap.add_argument("--no-stack", action="store_true", help="leave out the stack row (no GNN training)")
    ap.add_argument("--out", default=None, help="a folder for one CSV row per (cutoff, target)")
    ap.add_argument("--identity", default=None, help="recipes.identity: composition (He et al.'s, the default) or "
                                                         "formula (as written: the first protocol)")
    ap.add_argument("--split", choices=("temporal", "he", "both"), default="both",
                    help="the issue's temporal cutoffs, He et al.'s own split replayed, or both")
    ap.add_argument("--trust", default=None, help="a CSV for the temporal cells' trust rows (recipes.trust: the page "
                                                  "reads them; hygrail/recipes/trust.py)")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from omegaconf import OmegaConf

    from hygrail.data import data_path
    from hygrail.recipes import options, trust
    from hygrail.recipes.benchmark import benchmark, paired, table_of
    from hygrail.recipes.page import recipe_table
    from hygrail.recipes.ranker import SetRanker
    from hygrail.recipes.scores import missing, per_identity, stack_scores

    outputs = os.environ.get("HYGRAIL_OUTPUTS", str(ROOT / "outputs"))
    cutoffs = [int(c) for c in args.cutoffs.split(",")] if args.split != "he" else []
    cfg = config(cutoffs[0] if cutoffs else 2014, outputs)  # the recipes options; the year matters to the stack only
    d = options(OmegaConf.to_container(cfg.recipes, resolve=True) | ({"identity": args.identity} if args.identity else {}))
    t0 = time.perf_counter()
    table, _, _ = recipe_table(data_path(str(cfg.data.path)), Path(cfg.paths.cache) / "recipes", d["identity"])
    print(f"recipe table: {table.height:,} recipes in {time.perf_counter() - t0:.1f} s; precursors by {d['identity']}")
    spellings: dict[str, set[str]] = {}  # identity -> written formulas: the KG's precursor names (the stack's rows)
    for pres, written in table.select("precursors", "spellings").iter_rows():
        for p, w in zip(pres, written):
            spellings.setdefault(p, set()).add(w)
    kg_target = dict(table.select("material", "target").unique("material").iter_rows())
    per_target, trust_rows = [], []
    for cutoff in cutoffs:
        t_cell = time.perf_counter()
        scores, stack_seconds = None, {}
        if not args.no_stack:
            from hygrail.recipes.library import after

            materials = [t.material for t in after(table, cutoff, args.horizon)]
            by_target, stack_seconds = stack_scores(config(cutoff, outputs), cutoff, [kg_target[m] for m in materials])
            scores = {m: per_identity(by_target[kg_target[m]], spellings) for m in materials if kg_target[m] in by_target}
            stack_seconds["targets without a row"] = missing(by_target, [kg_target[m] for m in materials])
        ranker = SetRanker(d["neighbours"], d["composed"], d["window"], seed=int(cfg.seed))
        cell = benchmark(table, cutoff, args.horizon, d["volatile"], d["free"], ranker, scores)
        seconds = time.perf_counter() - t_cell
        f = cell.facts
        print(f"\n## Cutoff {cutoff}, answers {f['answer years']}\n")
        print(f"{f['targets']:,} test targets: {f['new targets']:,} first recorded in {f['answer years']}, "
              f"{f['known targets with a new set']:,} recorded by {cutoff} with a new set then; "
              f"{f['new targets with an unseen composition']:,} new ones with a composition no library material has "
              f"(He et al.'s kind, 'unseen'); "
              f"{f['targets with more than one answer set']:,} have more than one answer set. Library: "
              f"{f['library recipes']:,} recipes of {f['library materials']:,} materials dated <= {cutoff}. "
              f"Ceiling (an answer set obeying the rules, of library precursors): {f['ceiling']:.3f}; the set "
              f"ranker's candidates hold an answer for {f['ranker recall']:.3f}. "
              f"Ranker fit on {cutoff - d['window'] + 1}-{cutoff}: {f['ranker fit rows']:,} candidate sets, "
              f"{f['ranker fit positives']:,} recorded.\n")
        for which in ("all", "new", "known", "unseen", "seen"):
            print(f"Targets: {which}\n")
            print("\n".join(markdown(table_of(cell, which=which), "method")), "\n")
        print("Paired differences (all targets)\n")
        print("\n".join(markdown(paired(cell), "difference")), "\n")
        print(f"seconds: cell {seconds:.0f}, ranker fit {f['ranker fit seconds']:.0f}, proposals (every row) "
              f"{f['proposal seconds']:.0f}" + "".join(f", stack {k} {v:.0f}" for k, v in stack_seconds.items()))
        per_target.append(pl.DataFrame({"cutoff": cutoff, "material": [t.material for t in cell.targets],
                                        "known": [t.known for t in cell.targets],
                                        "unseen": [t.unseen for t in cell.targets],
                                        "seen": [t.seen for t in cell.targets],
                                        "numeric": [t.numeric for t in cell.targets],
                                        "elements": [len(t.elements) for t in cell.targets],
                                        "answers": [len(t.answers) for t in cell.targets],
                                        **{f"{name} @{k}": s[:, j] for name, s in cell.success.items()
                                           for j, k in enumerate((1, 3, 5, 10))},
                                        **{f"{name} found@{k}": s[:, j] for name, s in cell.found.items()
                                           for j, k in enumerate((1, 3, 5, 10))}}))
        trust_rows.append(trust.rows(cell, args.horizon))
    if args.split != "temporal":
        he(table, d, int(cfg.seed))
    if args.out and per_target:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        pl.concat(per_target).write_csv(Path(args.out) / "per_target.csv")
        print(f"per target: {Path(args.out) / 'per_target.csv'}")
    if args.trust and trust_rows:
        Path(args.trust).parent.mkdir(parents=True, exist_ok=True)
        pl.concat(trust_rows).write_csv(args.trust, float_precision=4)
        print(f"trust table: {args.trust}")
    print(f"total {time.perf_counter() - t0:.0f} s")


def he(table: pl.DataFrame, d: dict, seed: int) -> None:
    """The rows on He et al.'s split replayed, proposing from each of its two libraries."""
    from hygrail.recipes import he_split
    from hygrail.recipes.benchmark import RANKER, paired, population, table_of
    from hygrail.recipes.ranker import SetRanker

    t0 = time.perf_counter()
    parts, cells = he_split.run(table, d["volatile"], d["free"], SetRanker(d["neighbours"], d["composed"], d["window"],
                                                                            seed=seed))
    sizes = dict(parts.parts.group_by("part").len().iter_rows())
    years = lambda ys: f"{ys[0]}-{ys[-1]}" if len(ys) > 1 else (str(ys[0]) if ys else "none")  # noqa: E731
    print(f"\n## He et al.'s split, replayed (test years {years(parts.test_years)}, validation "
          f"{years(parts.val_years)})\n")
    numeric, several = sum(t.unseen for t in parts.targets), sum(len(t.answers) > 1 for t in parts.targets)
    print(f"Dated recipes: {sizes.get('train', 0):,} train, {sizes.get('val', 0):,} validation, "
          f"{sizes.get('test', 0):,} test. {len(parts.targets):,} test targets ({numeric:,} with a numeric "
          f"composition; {several:,} with more than one answer set). Their "
          f"training part holds {parts.later_train:,} recipes dated after {parts.cutoff}. Ranker fit on "
          f"{parts.cutoff - d['window'] + 1}-{parts.cutoff}.\n")
    for label, cell in cells.items():
        f = cell.facts
        print(f"Library: {label} ({f['library recipes']:,} recipes); ceiling {f['ceiling']:.3f}, the set ranker's "
              f"candidates hold an answer for {f['ranker recall']:.3f}\n")
        print("\n".join(markdown(table_of(cell), "method")), "\n")
        print("\n".join(markdown(paired(cell), "difference")), "\n")
        # He et al. expand a target's variables into numbers: their test targets all have a numeric composition
        for which, what in (("numeric", "numeric composition (He et al.'s kind)"), ("written", "written name only")):
            print(f"Targets: {what}\n")
            print("\n".join(markdown(table_of(cell, which=which), "method")), "\n")
            print("\n".join(markdown(paired(cell, which=which), "difference")), "\n")
        numeric = population(cell, "numeric")
        gap = 0.82 - cell.success[RANKER][numeric, 2].mean()
        print(f"Gap to He et al.'s 82% at top 5, on the numeric-composition targets: {gap:+.3f}\n")
    fit = next(iter(cells.values())).facts["ranker fit seconds"]
    print(f"seconds: {time.perf_counter() - t0:.0f} (ranker fit {fit:.0f})")


if __name__ == "__main__":
    main()
