"""Which graph context lets the embedded 1.5B judge rank the HPO band (issue #37)?

Reviews the SAME band pairs under each evidence variant (``VARIANTS``: the statement alone, the
profile mode of hygrail/evidence/profile.py with all its parts or one part at a time, the paper's
template), one review at a time on one llama.cpp thread, and prints per variant the judge's
ranking AUC (P(yes)) with a 95% bootstrap interval (positives and negatives resampled separately),
the paired 95% interval of its difference from statement-only, the median seconds per review
(uncached calls; the load average beside it) and the median prompt tokens. The pairs are
``bench_review.band_picks``: a class-stratified sample of the routed band (val and test) of
`make run DATA=hpo`'s cell (3,000-node sample, rgcn_plus, routing=auto): half positives, so the
AUC is unbiased, a positive share is not. Contamination: how many sampled positives HPO curated
after the judge's training-data date (``llm.training_data_date``), and their AUC when >= 30.

Rows per pair and variant go to <outputs>/bench/context_band.csv; replies are cached under
<outputs>/cache/llm, so a rerun (or a larger --n, whose sample contains the smaller one only by
chance) costs seconds for what was reviewed.

    make bench-context [N=150] [VARIANTS=none,full]
    .venv/bin/python bench/bench_context.py --n 150 --variants none,full,features,ontology,similar
    .venv/bin/python bench/bench_context.py --show 3          # print the texts, no LLM
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_review import band_picks, band_sample, curated_after, load, run_config  # noqa: E402

# `make run DATA=hpo`'s cell (conf/experiment/default_run_hpo.yaml), zero-shot as it is.
HPO = ["data=hpo", "data.subgraph_nodes=3000", "relation=hpo_dis_phe", "backbone=rgcn_plus", "routing=auto",
       "llm.fewshot.n=0"]
VARIANTS = {
    "none": ["evidence=none"],  # the statement alone (make run DATA=hpo)
    "full": ["evidence=profile"],
    "features": ["evidence=profile", "evidence.ontology=false", "evidence.similar=0"],
    "ontology": ["evidence=profile", "evidence.features=0", "evidence.similar=0"],
    "similar": ["evidence=profile", "evidence.features=0", "evidence.ontology=false"],
    "template": ["evidence=template"],  # paper Table 9
}


def auc_interval(y: np.ndarray, a: np.ndarray, b: np.ndarray | None, seed: int, reps: int = 2000):
    """95% bootstrap interval of AUC(a), or of AUC(a) - AUC(b) on the same resamples (paired),
    positives and negatives resampled separately (the sample is class-stratified)."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    out = []
    for _ in range(reps):
        i = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))])
        out.append(roc_auc_score(y[i], a[i]) - (0.0 if b is None else roc_auc_score(y[i], b[i])))
    return float(np.quantile(out, 0.025)), float(np.quantile(out, 0.975))


def setup(overrides: list[str], outputs: str, n: int, seed: int):
    """(cfg, kg, split, triage, picked rows per part) of the cell, GNN scores cached."""
    from hygrail.stages import build_split, gnn_stage

    cfg = run_config(overrides, outputs)
    kg, split = build_split(cfg)
    t, _, _ = gnn_stage(cfg, kg, split)
    band, y_all, picked, pick = band_picks(split, t, n, seed)
    print(f"band [{t.band[0]:.3f}, {t.band[1]:.3f}]: {len(band['val'])} val + {len(band['test'])} test routed, "
          f"{int(y_all.sum())} positives; sample {len(picked)} ({int(y_all[picked].sum())} positives, seed {seed})")
    return cfg, kg, split, t, pick


def whole_context(cfg, kg, split):
    """The graph the evidence reads with ``--context whole``: the whole HPO KG as the split's training
    graph would hold it at whole-graph size, i.e. every edge dated at or before the last training
    positive's year, the undated ones (ORPHA annotations, is_a) as the training graph keeps them, and
    none of the split's validation/test positives; plus the sample's node id -> the whole KG's. On
    the 3,000-node sample a disease keeps 0-3 of its features (1,743 disease-phenotype edges), too
    few for any profile to say anything (--show prints them)."""
    import polars as pl

    from hygrail.data import load_kg
    from hygrail.kg import NO_YEAR
    from hygrail.stages import plain

    full = load_kg(plain(cfg.data) | {"subgraph_nodes": None})
    to_full = np.array([full.node_id(t, n) for n, t in zip(kg.names, kg.nodes["type"].to_list())], dtype=np.int64)
    train = split.part("train").filter((pl.col("label") == 1) & (pl.col("year") != NO_YEAR))
    cut = int(train["year"].max())
    held = pl.concat([split.part(p).filter(pl.col("label") == 1) for p in ("val", "test")])
    u, v = to_full[held["src"].to_numpy()], to_full[held["dst"].to_numpy()]
    drop = np.flatnonzero((full.edges["year"].to_numpy() != NO_YEAR) & (full.edges["year"].to_numpy() > cut))
    ids = np.array([full.edge_id(int(a), int(b)) for a, b in zip(u, v)], dtype=np.int64)
    graph = full.without_edges(np.union1d(drop, ids[ids >= 0]))
    print(f"context: the whole HPO KG to {cut} ({graph.num_edges} of {full.num_edges} edges; "
          f"{len(drop)} dated later and {int((ids >= 0).sum())} held-out positives removed)")
    return graph, to_full


def variant_mode(name: str, overrides: list[str], outputs: str, t):
    from hygrail.evidence.mode import load_mode

    c = run_config([*overrides, *VARIANTS[name]], outputs)
    return load_mode(OmegaConf.to_container(c.evidence, resolve=True),
                     OmegaConf.to_container(c.relation.templates, resolve=True), t.calibrated())


def contamination(args) -> None:
    """Positives first curated after the judge's training-data date: in the whole routed band and
    among every validation/test positive, not only in the reviewed sample (bench_review.curated_after)."""
    import polars as pl

    from hygrail.stages import llm_config

    cfg, kg, split, t, _ = setup(args.overrides, args.outputs, args.n, args.seed)
    date = str(llm_config(cfg)["training_data_date"])
    band = {"val": t.route_val == -1, "test": t.route_test == -1}
    for where in ("band", "all"):
        pairs = []
        for part in ("val", "test"):
            d = split.part(part).with_row_index("i").filter(pl.col("label") == 1)
            if where == "band":
                d = d.filter(pl.Series(band[part][d["i"].to_numpy()]))
            pairs += [(kg.label(a), kg.label(b)) for a, b in zip(d["src"], d["dst"])]
        after = curated_after(cfg, pairs, date)
        print(f"{where} (val + test) positives: {int(after.sum())} of {len(pairs)} first curated after {date}")


def context(which: str, cfg, kg, split):
    """(graph the evidence reads, hypothesis -> that graph's ids) for ``--context``: ``whole``
    (``whole_context``), ``sample`` (the split's training graph), ``auto`` (whole when the cell runs on
    a sample, ``data.subgraph_nodes``; else the training graph is already the whole one)."""
    from hygrail.evidence.mode import Hypothesis

    if which == "sample" or (which == "auto" and not cfg.data.get("subgraph_nodes")):
        return split.train_graph, lambda h: h
    graph, to_full = whole_context(cfg, kg, split)
    return graph, lambda h: Hypothesis(int(to_full[h.src]), int(to_full[h.dst]), h.score)


def show(args) -> None:
    cfg, kg, split, t, pick = setup(args.overrides, args.outputs, args.n, args.seed)
    from hygrail.stages import hypotheses

    graph, move = context(args.context, cfg, kg, split)
    rows = pick["test"][: args.show]
    for name in args.variants:
        mode = variant_mode(name, args.overrides, args.outputs, t)
        hyps = [move(h) for h in hypotheses(split.part("test"), rows, t.scores.test)]
        for p in mode.prepare(graph, split.relation, hyps, None):
            print(f"--- {name}: {p.statement}\n{p.text}\n{p.info}")


def band_rows(overrides: list[str], outputs: str, n: int, seed: int, variants: list[str], which: str = "auto",
              threads: int | None = 1, one_at_a_time: bool = True, rows_file: Path | None = None,
              limit: int | None = None):
    """Review the band sample under each variant; (per-pair rows, cfg, llm config). ``one_at_a_time``:
    one request per call (the latency a concurrency-1 pipeline sees, the embedded judge's case); else
    each part in one batch at the llm's concurrency (a served model). ``rows_file`` is rewritten after
    every variant, so a stopped run keeps what it measured (``--report``). ``limit``: review only a
    class-stratified subset of that many of the sample's pairs (single-part variants, when the time
    for the whole sample is not there; ``--report`` compares every variant on the pairs all have)."""
    import polars as pl

    from hygrail.review.stage import Reviewer
    from hygrail.stages import hypotheses, llm_config

    cfg, kg, split, t, pick = setup(overrides, outputs, n, seed)
    if limit:  # a class-stratified subset of the same pairs: its replies are shared with the whole sample's
        y = np.concatenate([split.part(p)["label"].to_numpy()[pick[p]] for p in ("val", "test")])
        keep, n_val = band_sample(y, limit, seed + 1), len(pick["val"])
        pick = {"val": pick["val"][keep[keep < n_val]], "test": pick["test"][keep[keep >= n_val] - n_val]}
    graph, move = context(which, cfg, kg, split)
    llm = llm_config(cfg)
    if llm.get("embedded") and threads:
        llm["embedded"]["threads"] = threads
    # per entity: its terms in the context graph (a disease first curated after the cut has none)
    e = graph.relation_edges(split.relation)
    known = np.bincount(e["src"].to_numpy(), minlength=graph.num_nodes)
    rows = []
    for name in variants:
        mode = variant_mode(name, overrides, outputs, t)
        t0 = time.perf_counter()
        with Reviewer(llm, mode, graph, split.relation, Path(outputs) / "cache" / "llm", int(cfg.seed)) as reviewer:
            for part, scores in (("val", t.scores.val), ("test", t.scores.test)):
                y = split.part(part)["label"].to_numpy()[pick[part]]
                hyps = hypotheses(split.part(part), pick[part], scores)
                moved = [move(h) for h in hyps]
                got = ([r for h in moved for r in reviewer.review([h])] if one_at_a_time else reviewer.review(moved))
                for h, m, r, lab in zip(hyps, moved, got, y):
                    res = r.result
                    rows.append({"variant": name, "part": part, "left": kg.label(h.src), "right": kg.label(h.dst),
                                 "label": int(lab), "gnn": h.score, "ok": bool(res is not None and res.ok),
                                 "p_yes": res.confidence if res is not None and res.ok else None,
                                 "seconds": res.latency if res is not None else None,
                                 "cache_hit": bool(res is not None and res.cache_hit),
                                 "prompt_tokens": res.prompt_tokens if res is not None else None,
                                 "tokens_est": r.prepared.info.get("profile_tokens_est"),
                                 "known_terms": int(known[m.src]),
                                 "text_chars": len(r.prepared.text or "") + len(r.prepared.statement)})
        df = pl.DataFrame(rows, infer_schema_length=None)
        if rows_file is not None:
            rows_file.parent.mkdir(parents=True, exist_ok=True)
            df.write_csv(rows_file)
        print(f"{name}: reviewed in {time.perf_counter() - t0:.0f} s; {load()}", flush=True)
    return df, cfg, llm


def summarise(df, cfg, llm, seed: int) -> dict:
    """Per variant on the pairs every variant reviewed with a verdict: AUC with its 95% interval, the
    paired 95% interval of its difference from statement-only (``none``, when measured), the median
    seconds per review (a cached reply's are its original call's), prompt tokens; the GNN's AUC on
    the same pairs; the contamination count."""
    import polars as pl
    from sklearn.metrics import roc_auc_score

    names = df["variant"].unique(maintain_order=True).to_list()
    keyed = df.with_columns(pl.concat_str("part", "left", "right", separator="|").alias("key"))
    ok = keyed.filter(pl.col("ok")).group_by("key").agg(pl.len().alias("k")).filter(pl.col("k") == len(names))["key"]
    kept = keyed.filter(pl.col("key").is_in(ok.implode())).sort("key")
    by = {n: kept.filter(pl.col("variant") == n) for n in names}
    first = by[names[0]]
    y, gnn = first["label"].to_numpy(), first["gnn"].to_numpy()
    out = {"pairs": len(y), "positives": int(y.sum()),
           "failures": {n: int((~keyed.filter(pl.col("variant") == n)["ok"]).sum()) for n in names},
           "gnn_auc": float(roc_auc_score(y, gnn)), "gnn_auc_ci": auc_interval(y, gnn, None, seed), "variants": {}}
    known = first["known_terms"].to_numpy() if "known_terms" in first.columns else None
    base = by["none"]["p_yes"].to_numpy() if "none" in by else None
    for n in names:
        d, p = by[n], by[n]["p_yes"].to_numpy()
        # a cached reply keeps its original call's seconds (ReviewResult.latency)
        v = {"auc": float(roc_auc_score(y, p)), "auc_ci": auc_interval(y, p, None, seed),
             "median_seconds": float(d["seconds"].median()), "uncached_calls": int((~d["cache_hit"]).sum()),
             "median_prompt_tokens": float(d["prompt_tokens"].median()), "max_prompt_tokens": int(d["prompt_tokens"].max())}
        if base is not None and n != "none":
            v["auc_minus_none"] = v["auc"] - float(roc_auc_score(y, base))
            v["auc_minus_none_ci"] = auc_interval(y, p, base, seed)
        if known is not None and 0 < y[known > 0].sum() < (known > 0).sum():
            v["auc_known_terms"] = float(roc_auc_score(y[known > 0], p[known > 0]))
        val, test = (d["part"] == "val").to_numpy(), (d["part"] == "test").to_numpy()
        if 0 < y[val].sum() < val.sum() and 0 < y[test].sum() < test.sum():
            # what the judge adds to the GNN: a logistic fit over both (as llm.decision=calibrated fits
            # it) on the validation pairs, scored on the test pairs, beside the GNN alone there
            from sklearn.linear_model import LogisticRegression

            from hygrail.review.calibrate import logit

            x = np.column_stack([logit(gnn), logit(p)])
            both = LogisticRegression().fit(x[val], y[val]).decision_function(x[test])
            v["test_auc_gnn_plus_judge"] = float(roc_auc_score(y[test], both))
            out["test_auc_gnn"] = float(roc_auc_score(y[test], gnn[test]))
        est = d.filter(pl.col("tokens_est").is_not_null())
        if est.height:
            v["max_tokens_est"] = int(est["tokens_est"].max())
        out["variants"][n] = v
    if known is not None:
        out["known_terms"] = {"positives_with": int(((known > 0) & (y == 1)).sum()),
                              "negatives_with": int(((known > 0) & (y == 0)).sum())}
    date = llm.get("training_data_date")
    if cfg.data.loader == "hpo" and date:
        after = curated_after(cfg, list(zip(first["left"], first["right"])), str(date))
        k = int((after & (y == 1)).sum())
        out["contamination"] = {"training_data_date": str(date), "positives_curated_after": k}
        if k >= 30:
            sel = after | (y == 0)
            out["contamination"]["auc_after"] = {n: float(roc_auc_score(y[sel], by[n]["p_yes"].to_numpy()[sel]))
                                                 for n in names}
    return out


def report(s: dict) -> None:
    print(f"\n{s['pairs']} pairs ({s['positives']} positives) with a verdict under every variant (failures "
          f"{s['failures']}); GNN score AUC on them {s['gnn_auc']:.3f} {fmt(s['gnn_auc_ci'])}")
    if "known_terms" in s:
        k = s["known_terms"]
        print(f"entities with known terms in the context graph: {k['positives_with']} of {s['positives']} positives, "
              f"{k['negatives_with']} of {s['pairs'] - s['positives']} negatives")
    print("| variant | pairs | band AUC [95% CI] | minus statement-only [95% paired CI] | AUC, entities with known terms "
          f"| GNN + judge, test AUC (GNN alone {s.get('test_auc_gnn', float('nan')):.3f}) "
          "| median s/review (calls now, not cached) | median / max prompt tokens |")
    print("|---|---|---|---|---|---|---|---|")
    for n, v in s["variants"].items():
        diff = f"{v['auc_minus_none']:+.3f} {fmt(v['auc_minus_none_ci'])}" if "auc_minus_none" in v else ""
        sec = f"{v['median_seconds']:.1f} ({v['uncached_calls']})"
        kt = f"{v['auc_known_terms']:.3f}" if "auc_known_terms" in v else ""
        both = f"{v['test_auc_gnn_plus_judge']:.3f}" if "test_auc_gnn_plus_judge" in v else ""
        print(f"| {n} | {s['pairs']} | {v['auc']:.3f} {fmt(v['auc_ci'])} | {diff} | {kt} | {both} | {sec} | "
              f"{v['median_prompt_tokens']:.0f} / {v['max_prompt_tokens']} |")
        if "max_tokens_est" in v:
            print(f"  ({n}: the budget's estimate of statement + evidence tokens, max {v['max_tokens_est']})")
    if c := s.get("contamination"):
        print(f"contamination: {c['positives_curated_after']} of {s['positives']} sampled positives were first curated "
              f"after {c['training_data_date']}" + (f"; AUC on them against every sampled negative {c['auc_after']}"
                                                    if "auc_after" in c else "; too few for an AUC of their own (30 wanted)"))


def fmt(ci: tuple[float, float]) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=150, help="band pairs (class-stratified, seeded)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads (1: the issue's per-review figure)")
    ap.add_argument("--variants", default="none,full", help=f"comma-separated, of {','.join(VARIANTS)}")
    ap.add_argument("--context", choices=("auto", "whole", "sample"), default="auto",
                    help="the graph the evidence reads (context()): auto = whole_context() on a sample")
    ap.add_argument("--show", type=int, default=0, help="print this many test pairs' texts per variant, no LLM")
    ap.add_argument("--contamination", action="store_true", help="count late-curated positives in the whole band")
    ap.add_argument("--limit", type=int, default=None, help="review a class-stratified subset of this many pairs")
    ap.add_argument("--tag", default="", help="suffix of the rows file: context_band<tag>.csv")
    ap.add_argument("--report", nargs="+", default=None, help="rows files to report on (no review)")
    ap.add_argument("--outputs", default=os.environ.get("HYGRAIL_OUTPUTS", "outputs"))
    ap.add_argument("overrides", nargs="*", help="Hydra overrides of the cell (default: make run DATA=hpo's)")
    args = ap.parse_args()
    args.variants = args.variants.split(",")
    if unknown := [v for v in args.variants if v not in VARIANTS]:
        raise SystemExit(f"--variants {unknown}: expected some of {list(VARIANTS)}")
    args.overrides = args.overrides or HPO
    if args.show:
        return show(args)
    if args.contamination:
        return contamination(args)
    import polars as pl

    from hygrail.stages import llm_config

    if args.report:
        cfg = run_config(args.overrides, args.outputs)
        df = pl.concat([pl.read_csv(p, infer_schema_length=None) for p in args.report], how="diagonal_relaxed")
        llm = llm_config(cfg)
        df = df.unique(["variant", "part", "left", "right"], keep="first", maintain_order=True)
    else:
        rows = Path(args.outputs) / "bench" / f"context_band{args.tag}.csv"
        df, cfg, llm = band_rows(args.overrides, args.outputs, args.n, args.seed, args.variants, args.context,
                                 args.threads, rows_file=rows, limit=args.limit)
        print(f"per-pair rows: {rows}")
    report(summarise(df, cfg, llm, args.seed))


if __name__ == "__main__":
    main()
