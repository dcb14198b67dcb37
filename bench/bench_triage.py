"""Triage benchmark: paper backbones, the *_plus options and TSH side by side, and routing=auto.

    .venv/bin/python bench/bench_triage.py                                   # everything (hours on 2 cores)
    .venv/bin/python bench/bench_triage.py --data matkg_synthetic --relations chm_apl --methods hgt,hgt_plus,tsh
    .venv/bin/python bench/bench_triage.py --data biokg --methods hgt_plus,tsh
    .venv/bin/python bench/bench_triage.py --methods heteroconv_plus,hgt_plus,rgcn_plus,tsh --graph-seeds 0,1,2,3,4 --seeds 42,0,1
    .venv/bin/python bench/bench_triage.py --data matkg_synthetic --methods heteroconv_plus,tsh --scale 2 --graph-seeds 0,1,2,3,4 --seeds 42,0,1
    .venv/bin/python bench/bench_triage.py --data matkg_synthetic --methods heteroconv_plus,tsh,tsh+planted --scale 2 --graph-seeds 0,1,2,3,4
    .venv/bin/python bench/bench_triage.py --data hpo --subgraph-nodes 8000 --seeds 42,0,1 --diagnose \
        --methods rgcn,hgt,heteroconv,rgcn_plus,hgt_plus,heteroconv_plus,tsh,pa,cn,aa,paths3,l3,degree   # real KGs (issue #27)
    .venv/bin/python bench/bench_triage.py --data synthesis_recipes --subgraph-nodes 3000 --seeds 42,0,1 --graph-cut time ...
    .venv/bin/python bench/bench_triage.py --data synthesis_recipes --subgraph-nodes 3000 --seeds 42,0,1 \
        --methods heteroconv_plus,hgt_plus,rgcn_plus,tsh,heteroconv_plus+compat,hgt_plus+compat,rgcn_plus+compat,tsh+compat
    .venv/bin/python bench/bench_triage.py --ablation                         # why HGT does not learn (chm_apl)
    .venv/bin/python bench/bench_triage.py --speed --methods rgcn             # Lightning vs plain loop, s/epoch
    .venv/bin/python bench/bench_triage.py --feature-cost                     # us per pair of the link features

Data: the synthetic MatKG at paper size (7 relations) and the second KG (``bench/biokg.py``, written
as CSV and read back through ``data=biokg``'s CSV loader, 2 relations). ``--graph-seeds`` draws
each KG anew per generator seed: at paper size a relation has 28-124 test positives, so one graph
cannot separate methods 0.02 AP apart. Split seeds (``--seeds``) redraw negatives, training and head
folds but keep the graph's test positives, so independent graphs are the replicates the standard
errors count; split seeds still matter for F1, whose validation max-F1 threshold moves with the
draw (heteroconv_plus - TSH on CHM-APL, graphs 0-4: F1 +0.002 with split seed 42 alone, +0.022 over 42, 0, 1,
where before 8bc43a3 it read +0.035 and -0.029; experiments/triage.md), so F1 comparisons use several (``--seeds 42,0,1``). Trained scores are cached
under --cache (the pipeline's cache, keyed by split + config + seed), so a rerun only recomputes
what changed.

Real KGs (``--data hpo,synthesis_recipes``, issue #27; experiments/real_kgs_triage.md): HPO
disease-phenotype (hpo_dis_phe: a partial split, ORPHA annotations are undated and sort into
train), HPO gene-disease (hpo_gen_dis: a RANDOM split, no dates, flagged RANDOM in every table) and
recipes target-precursor (syn_tgt_pre: partial, its undated recipes all in train), read as
``data=<x>`` reads them, whole or as the ``--subgraph-nodes`` sample (``--graph-seeds``: its
data.subgraph_seed, default 42). One graph, so the standard errors are over split seeds, which on a
temporal split redraw negatives, training and folds but not the test positives (a random split's
seed redraws those too). ``--graph-cut time``: split.graph_cut=time (an undated relation is left
out, with the split's reason). ``--methods`` also takes the structural baselines
``pa,cn,aa,paths3,l3,degree`` (``hygrail.baselines.structural.structural_scores`` with
conf/method/<name>.yaml as the sweep composes it). Per relation, ``relation_tables`` prints every
row with its standard error and the paired difference of the best *_plus option to the best of
TSH / PA / CN / 3-paths, both picked by validation AP; ``--diagnose`` says why a heuristic can win
(3-path and common-neighbour coverage, cold-start ends, degrees; ``diagnostics``).

Cost of one cell on the real KGs (seconds, one thread of a shared 2-core box, split seed 42, whole
cell: inputs, training, scoring; 8000-node seeds 0/1 ran on a quieter box, ~30% faster):
                      rgcn  hgt  heteroconv  rgcn_plus  hgt_plus  heteroconv_plus  TSH  structural
    hpo_dis_phe 3000    38    7      5          33         13          7           ~30*   < 1
    hpo_dis_phe 8000   468   92     82         138         73         58             2    < 1
    hpo_gen_dis 8000    27   15      6          24         25         19           0.1    < 1
    syn_tgt_pre 3000    32    9      6          66         23         28             1    < 1
    syn_tgt_pre 8000   391  106    106         386        286        237             5    < 1
    (* the first cell of a process embeds the entity names.) Whole graph: heteroconv 30.5 s per
    epoch on hpo_dis_phe (3.7 M training pairs; 100 epochs ~ 51 min), 10.5 s on syn_tgt_pre (~17
    min); hgt_plus 85-100 s per epoch on syn_tgt_pre after 8 min of inputs (30-70 min with early
    stopping), > 7.5 min before its first epoch on hpo_dis_phe; TSH 415 s / 200 s; structural
    <= 150 s (3-paths on hpo_dis_phe). So the whole graph does not fit (17-70 min per GNN cell,
    54 cells); 8000 nodes for all three relations is ~42 min a seed (~2 h for three). Chosen: HPO
    at 8000 nodes (at 3000 hpo_gen_dis keeps 77 edges, 8 validation / 15 test positives, too few
    for a threshold or an error bar; at 8000 57 / 114) and recipes at the paper's 3000 (138 / 277
    positives; its 8000 cells cost 25 min a seed). Measured: the graph_cut=relation table (all 13
    rows, seeds 42, 0, 1) took 47 min of cells (HPO 42, recipes 6), graph_cut=time 34 more.

Printed per relation and method: validation average precision (the figure to choose options
and hyperparameters on: the plus options' validation scores are out-of-fold; TSH's are in-sample, its weights being fit
on validation, so its validation AP is optimistic), test AUC, average
precision, F1 at the validation max-F1 threshold (GNN-only), F1h = F1 at routing.threshold=half_max_f1
(half the validation max F1, ``decision_threshold``), F1* = the best F1 any threshold
reaches on test (bench-only, a choice made on test: it separates a method's ranking from the transfer of its
validation threshold: an F1 shortfall with an equal F1* lies in the threshold, not the ranking), fit seconds (0 on a cache hit). Then, per method, the routing table:
the band's share of test for routing=default (paper m, n) and routing=auto (conf/routing/auto.yaml),
whether the auto band's cost cap was binding, GNN-only F1, and the oracle F1 of HyGRAIL with a
perfect reviewer (a bench-only upper bound: routed test hypotheses get their true label, the rest
the band's decision), so that "the band holds the hard cases" is measured, not assumed.

``tsh+planted`` (synthetic MatKG only) is a reference row, not a method: TSH's classifier over its
descriptors plus the generator's hidden pair structure (shared topic and niche, related topics:
``Planted.pair_structure``), fit on validation as TSH is. It says how far above TSH a ranking can
get on this KG when it knows the topics, and the summary prints the share of that AP headroom
each option takes. Measured (experiments/triage.md; graphs 0-4, split seed 42, after 8bc43a3): +0.052 AP
at paper size, of which heteroconv_plus takes 39%; +0.041 at data.scale 2, of which it takes 11%.

--ablation trains HGT on chm_apl step by step from the paper's setting to hgt_plus:
paper; + leak-free folds, fresh negatives, selection on val AP; + informative node inputs (still
the cosine decoder); + MLP decoder over link features; + validation head over the link features;
the head over TSH's inputs instead; the better of the two on validation (= hgt_plus).
--speed: seconds per epoch of the lean Lightning Trainer vs the same module in a plain loop (target
ratio <= 1.15), fastest of --repeats interleaved runs.
--feature-cost: microseconds per pair of ``link_features`` (pairs API) and ``link_blocks`` (256
CHM sources x every APL node, the discovery shape), of R-GCN's six features, and of the plus
backbones' block features with their head's TSH inputs (``HeadPairs``, names on), on the synthetic
MatKG at --feature-scales.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf
from sklearn.metrics import average_precision_score, f1_score, roc_auc_score

from hygrail.data import data_config, load_kg
from hygrail.data.split import temporal_split
from hygrail.data.synthetic import generate_with_topics
from hygrail.kg import DataError, Schema
from hygrail.thresholds import decision_threshold, f1_threshold, max_f1
from hygrail.triage.routing import calibrate_band, route
from hygrail.triage.train import build_module, fit, triage_scores

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
MATKG_RELATIONS = "chm_apl,chm_pro,pro_apl,smt_pro,chm_smt,chm_dsc,chm_cmt"
BIOKG_RELATIONS = "cpd_dis,gen_dis"
# The real KGs (data=hpo, data=synthesis_recipes): their target relations, in conf/data/schema/<data>.yaml.
REAL_RELATIONS = {"hpo": "hpo_dis_phe,hpo_gen_dis", "synthesis_recipes": "syn_tgt_pre"}
RELATIONS = {"matkg_synthetic": MATKG_RELATIONS, "biokg": BIOKG_RELATIONS} | REAL_RELATIONS
METHODS = "heteroconv,hgt,rgcn,heteroconv_plus,hgt_plus,rgcn_plus,tsh"
# Structural baselines as bench rows: conf/method/<name>.yaml (name: structural), hygrail/baselines/structural.py.
STRUCTURAL = ("pa", "cn", "aa", "paths3", "l3", "degree")
PLUS = ("heteroconv_plus", "hgt_plus", "rgcn_plus")
# The baselines the best option is paired with (the best of them by validation AP, per relation).
REFERENCES = ("tsh", "pa", "cn", "paths3")
PLANTED = "tsh+planted"  # bench-only reference row: TSH that also reads the hidden topics (planted_scores)
# ``<method>+compat`` (tsh, a plus backbone): the method with the compatibility descriptor (hygrail/descriptors.py),
# TSH's method.compatible / the head's backbone.head_compatible set to the KG's entry here (the values of
# conf/experiment/triage_options_synthesis_recipes_compat*.yaml and of discover.compatible in
# discover_entities_synthesis_recipes.yaml): a precursor's elements other than O, C, H, N in the target's.
COMPAT = "+compat"
COMPATIBLE = {"synthesis_recipes": {"via": "Element", "ignore": ["O", "C", "H", "N"]}}


def backbone_cfg(name: str, epochs: int | None = None) -> dict:
    cfg = OmegaConf.to_container(OmegaConf.load(CONF / f"backbone/{name}.yaml"))
    return cfg if epochs is None else cfg | {"epochs": epochs}


def composed(group: str, name: str, **overrides) -> dict:
    """``conf/<group>/<name>.yaml`` as the sweep composes it (its defaults list merged, interpolations
    such as the recipes' ``${oc.env:HYGRAIL_SHARED,...}`` resolved), with ``overrides``."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose(config_name=None, overrides=[f"+{group}={name}"])
    return OmegaConf.to_container(cfg[group], resolve=True) | overrides


def load(data: str, workdir: Path, graph_seed: int = 0, scale: float = 1.0, subgraph_nodes: int | None = None):
    """(KG, its planted structure or None): the KG drawn by the generator with ``graph_seed`` (0: the
    default graph), the synthetic MatKG at ``data.scale`` = ``scale`` (1: paper size; the second KG
    has one size and no planted structure here). A real KG (``REAL_RELATIONS``) is read as
    ``data=<data>`` reads it, whole or as the ``subgraph_nodes`` sample drawn with
    ``data.subgraph_seed`` = ``graph_seed``."""
    if data in REAL_RELATIONS:
        return load_kg(composed("data", data, subgraph_nodes=subgraph_nodes, subgraph_seed=graph_seed)), None
    if data == "biokg":
        from biokg import generate  # bench/ is this script's folder

        from hygrail.data.csv import save_csv

        folder = workdir / f"biokg-{graph_seed}"
        save_csv(generate(seed=graph_seed), folder)
        return load_kg(data_config("biokg", path=str(folder))), None
    cfg = data_config(data, scale=scale, seed=graph_seed)
    return generate_with_topics(Schema.from_config(cfg["schema"]), cfg)  # = load_kg(cfg): no subgraph here


def scores_of(method: str, split, seed: int, args, planted=None) -> tuple[np.ndarray, np.ndarray, float]:
    """(val scores, test scores, seconds) of a backbone (cached), of TSH, of a structural baseline,
    or of TSH + planted; ``<tsh or plus backbone>+compat`` with the compatibility descriptor on."""
    if method.endswith(COMPAT):
        base = method.removesuffix(COMPAT)
        if base == "tsh":
            from hygrail.baselines.tsh import tsh_scores

            r = tsh_scores(split, tsh_config() | {"compatible": args.compatible})
            return r.val, r.test, r.seconds
        cfg = backbone_cfg(base, args.epochs) | {"head_compatible": args.compatible}
        s = triage_scores(split, cfg, seed, args.cache, progress=True)
        return s.val, s.test, s.fit_seconds
    if method == PLANTED:
        return planted_scores(split, planted, tsh_config())
    if method in STRUCTURAL:
        from hygrail.baselines.structural import structural_scores

        r = structural_scores(split, composed("method", method))
        return r.val, r.test, r.seconds
    if method == "tsh":
        from hygrail.baselines.tsh import tsh_scores

        r = tsh_scores(split, tsh_config())
        return r.val, r.test, r.seconds
    s = triage_scores(split, backbone_cfg(method, args.epochs), seed, args.cache, progress=True)
    return s.val, s.test, s.fit_seconds


def tsh_config() -> dict:
    return OmegaConf.to_container(OmegaConf.load(CONF / "method/tsh.yaml"))


def planted_scores(split, planted, cfg: dict) -> tuple[np.ndarray, np.ndarray, float]:
    """TSH's classifier over its descriptors plus the planted pair structure
    (``Planted.pair_structure``: shared topic and niche, related topics), fit on validation as TSH
    is. Bench-only: it reads what the generator hid from every model, to measure how far above
    TSH a ranking can get on this KG when it knows the topics (a reference, not a bound)."""
    from hygrail.baselines import tsh
    from hygrail.descriptors import design, pair_features

    t0 = time.perf_counter()
    x, y = {}, {}
    for part in ("val", "test"):
        p = split.part(part)
        src, dst = p["src"].to_numpy(), p["dst"].to_numpy()
        x[part] = np.hstack([design(pair_features(split.train_graph, src, dst, cfg)), planted.pair_structure(src, dst)])
        y[part] = p["label"].to_numpy()
    model = tsh.fit_classifier(x["val"], y["val"], cfg.get("classifier") or {})
    return model.predict_proba(x["val"])[:, 1], model.predict_proba(x["test"])[:, 1], time.perf_counter() - t0


def oracle_f1(routed: np.ndarray, y_test: np.ndarray) -> float:
    """F1 of HyGRAIL with a perfect reviewer: the band's decision (``route``) outside, the true label inside."""
    pred = np.where(routed == -1, y_test, routed)
    return float(f1_score(y_test, pred, zero_division=0))


def quality(data: str, kgs: dict, relations: list[str], methods: list[str], args) -> dict:
    """Per relation, graph and seed: every method's figures; then ``relation_tables`` and ``summary``.
    ``kgs``: graph seed -> (KG, planted structure or None). A replicate is a (graph seed, split seed)
    pair; only other graph seeds (or, on a real KG, other subgraph samples) give other test positives
    of a temporal split (the split seed redraws negatives, training and head folds, not the
    positives); a random split's seed also redraws its test positives. A relation the split cannot
    cut as asked (``split.graph_cut=time`` on an undated relation) is left out with its reason."""
    routing = {name: OmegaConf.to_container(OmegaConf.load(CONF / f"routing/{name}.yaml")) for name in ("default", "auto")}
    print(f"\n== {data}, split.graph_cut={args.graph_cut}: " + "; ".join(f"graph seed {g}: {kg}" for g, (kg, _) in kgs.items()))
    print(f"{'relation':<12}{'split':>9}{'graph':>6}{'seed':>5} {'method':<23}{'valAP':>6}{'testAUC':>8}{'AP':>7}{'F1':>7}{'F1h':>7}"
          f"{'F1*':>7}{'cell s':>7}{'band def':>9}{'band auto':>10}{'cap':>5}{'m':>7}{'n':>7}{'oracle':>8}")  # fmt: skip
    rows, kept = {}, []
    for rel in relations:
        for graph, (kg, planted) in kgs.items():
            for seed in args.seeds:  # the seed draws the split's negatives, the training and the head's folds
                try:
                    split = temporal_split(kg, kg.schema.relation(rel), seed=seed, graph_cut=args.graph_cut)
                except DataError as e:
                    print(f"{rel:<12} left out: {e}")
                    break
                if args.diagnose and seed == args.seeds[0]:
                    diagnostics(split, graph)
                y_val, y_test = split.part("val")["label"].to_numpy(), split.part("test")["label"].to_numpy()
                warm = warm_pairs(split)
                kind = split.kind.upper() if split.kind == "random" else split.kind  # a random split is flagged everywhere
                for method in methods:
                    t0 = time.perf_counter()
                    s_val, s_test, _ = scores_of(method, split, seed, args, planted)
                    seconds = time.perf_counter() - t0  # the whole cell: inputs, training or fit, scoring (0-ish on a cache hit)
                    f1 = f1_score(y_test, s_test >= f1_threshold(s_val, y_val), zero_division=0)
                    bands = {k: calibrate_band(s_val, y_val, cfg) for k, cfg in routing.items()}
                    routed = {k: route(s_test, b) for k, b in bands.items()}
                    share = {k: float(np.mean(r == -1)) for k, r in routed.items()}
                    auto = bands["auto"]
                    row = {"val_ap": average_precision_score(y_val, s_val), "auc": roc_auc_score(y_test, s_test),
                           "ap": average_precision_score(y_test, s_test), "f1": f1, "f1_test_best": max_f1(s_test, y_test)[0],
                           "f1_half": f1_score(y_test, s_test >= decision_threshold(s_val, y_val, "half_max_f1"), zero_division=0),
                           "band_default": share["default"], "band_auto": share["auto"], "capped": auto.capped,
                           "oracle": oracle_f1(routed["auto"], y_test), "test_pos": int(y_test.sum()),
                           "val_pos": int(y_val.sum()), "kind": kind, "seconds": seconds,
                           "ap_warm": average_precision_score(y_test[warm], s_test[warm]) if y_test[warm].any() else float("nan"), "warm_pos": int(y_test[warm].sum())}  # fmt: skip
                    rows[(rel, method, (graph, seed))] = row
                    print(f"{rel:<12}{kind:>9}{graph:>6}{seed:>5} {method:<23}{row['val_ap']:>6.3f}{row['auc']:>8.3f}{row['ap']:>7.3f}"
                          f"{f1:>7.3f}{row['f1_half']:>7.3f}{row['f1_test_best']:>7.3f}{seconds:>7.1f}{share['default']:>9.1%}"
                          f"{share['auto']:>10.1%}{'yes' if auto.capped else 'no':>5}{auto.m:>7.3f}{auto.n:>7.3f}{row['oracle']:>8.3f}",
                          flush=True)  # fmt: skip
            else:
                continue
            break
        else:
            kept.append(rel)
    reps = [(g, s) for g in kgs for s in args.seeds]
    relation_tables(rows, kept, methods, reps, args)
    summary(rows, kept, methods, reps)
    return rows


def warm_pairs(split) -> np.ndarray:
    """Test pairs whose two ends both have an edge in the graph they are scored on. A temporal split's
    new entities come with their links (a disease curated in the test years, a target first made then):
    such positives have an end no method has seen, the negatives rarely do, and discovery never
    proposes them (its candidates are known nodes). AP on the warm pairs alone says what a ranking
    does where the graph has something to say (bench-only, a description of test, no choice)."""
    test, deg = split.part("test"), split.graph("test").degree
    return (deg[test["src"].to_numpy()] > 0) & (deg[test["dst"].to_numpy()] > 0)


def standard_error(values: dict, graphs: list) -> tuple[float, str]:
    """(SE, over what) of the mean of per-replicate ``values`` ({(graph, seed): v}): over graphs (a
    graph's replicates averaged first, since they share its test positives) when there are several,
    else over the split seeds; nan with one replicate."""
    if len(graphs) > 1:
        x, over = [np.mean([v for (g, _), v in values.items() if g == graph]) for graph in graphs], "graphs"
    else:
        x, over = list(values.values()), "split seeds"
    return (float(np.std(x, ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")), over


def best_by_validation(rows: dict, rel: str, candidates: list[str], reps: list) -> str | None:
    """The candidate with the highest mean validation AP on ``rel`` (a choice made on validation only)."""
    present = [m for m in candidates if all((rel, m, r) in rows for r in reps)]
    return max(present, key=lambda m: np.mean([rows[(rel, m, r)]["val_ap"] for r in reps])) if present else None


def relation_tables(rows: dict, relations: list[str], methods: list[str], reps: list, args) -> None:
    """Per relation: every method's mean over replicates with its standard error (``standard_error``):
    test AUC, AP, F1 at the validation max-F1 threshold, the routing=auto band's share of test and the
    oracle gain (oracle F1 - F1: what a perfect reviewer of the band adds); then the paired
    difference of the best *_plus option (``+compat`` ones included when run) to the best of TSH / PA /
    CN / 3-paths, both chosen by mean validation AP, with the standard error of the paired difference;
    where ``tsh+compat`` ran, the same option minus it, and the best ``+compat`` option minus it."""
    graphs = list(dict.fromkeys(g for g, _ in reps))
    size = f"subgraph {args.subgraph_nodes} nodes" if getattr(args, "subgraph_nodes", None) else "whole graph"
    for rel in relations:
        first = rows[(rel, methods[0], reps[0])]
        _, over = standard_error({r: 0.0 for r in reps}, graphs)
        flag = "  << RANDOM split: no edge years, easier than a temporal one" if first["kind"] == "RANDOM" else ""
        print(f"\n{rel}: split {first['kind']}{flag}; split.graph_cut={args.graph_cut}; {size}; {len(reps)} replicate(s) "
              f"{reps}, mean (SE over {over}); val/test positives {first['val_pos']}/{first['test_pos']}")
        print(f"{'method':<23}{'valAP':>7}{'test AUC':>16}{'AP':>16}{'F1':>16}{'auto band':>11}{'oracle gain':>16}"
              f"{'AP warm':>16}{'cell s':>8}   (AP warm: the {first['warm_pos']} test positives with both ends seen, warm_pairs)")
        for m in methods:
            line = f"{m:<23}{np.mean([rows[(rel, m, r)]['val_ap'] for r in reps]):>7.3f}"
            for key in ("auc", "ap", "f1", "band_auto", "gain", "ap_warm"):
                v = {r: (rows[(rel, m, r)]["oracle"] - rows[(rel, m, r)]["f1"]) if key == "gain" else rows[(rel, m, r)][key] for r in reps}
                se, _ = standard_error(v, graphs)
                mean = np.mean(list(v.values()))
                line += f"{mean:>11.1%}" if key == "band_auto" else f"{mean:>9.3f} ({se:.3f})"
            line += f"{np.mean([rows[(rel, m, r)]['seconds'] for r in reps]):>8.1f}"
            print(line)
        options = [m for m in methods if m.removesuffix(COMPAT) in PLUS]
        option = best_by_validation(rows, rel, options, reps)
        reference = best_by_validation(rows, rel, [m for m in methods if m in REFERENCES], reps)
        if option is None or reference is None:
            continue
        pairs = [(f"best option by val AP {option} - best of {'/'.join(m for m in REFERENCES if m in methods)} by val AP "
                  f"{reference}:", option, reference)]
        tsh_compat = "tsh" + COMPAT
        if tsh_compat in methods:  # what the option adds beyond the feature TSH reads too
            pairs.append((f"best option by val AP {option} - {tsh_compat}:", option, tsh_compat))
            with_feature = best_by_validation(rows, rel, [m for m in options if m.endswith(COMPAT)], reps)
            if with_feature not in (None, option):
                pairs.append((f"best {COMPAT} option by val AP {with_feature} - {tsh_compat}:", with_feature, tsh_compat))
        for text, a, b in pairs:
            line = text
            for key in ("auc", "ap", "f1"):
                d = {r: rows[(rel, a, r)][key] - rows[(rel, b, r)][key] for r in reps}
                se, _ = standard_error(d, graphs)
                line += f"  d{key.upper()} {np.mean(list(d.values())):+.3f} ({se:.3f}) [{sum(v >= 0 for v in d.values())}/{len(d)}]"
            print(line)


def diagnostics(split, graph: int) -> None:
    """Why a heuristic can beat a GNN on a relation (bench-only, reads test labels to describe the
    data, chooses nothing): positives per part; the share of validation/test positives and negatives
    with a 3-path in the relation (A Aᵀ A > 0) and with a common neighbour over all edge types; the
    share whose source or target has no edge of the relation in the training graph (cold start: a
    relation-degree 0 end), and whose source or target has no edge at all (unseen: ``warm_pairs``); median relation and all-edge degrees of the ends; the AUC of the plain
    product of relation degrees."""
    from hygrail.baselines import structural

    counts = split.counts()
    print(f"   diagnostics {split.relation.name} (graph {graph}): positives train/val/test "
          f"{counts['train']['pos']}/{counts['val']['pos']}/{counts['test']['pos']}, kind {split.kind}, dated {split.dated}")
    for part in ("val", "test"):
        p = split.part(part)
        kg, src, dst, y = split.graph(part), p["src"].to_numpy(), p["dst"].to_numpy(), p["label"].to_numpy().astype(bool)
        p3 = structural.paths3(kg, split.relation, src, dst) > 0
        cn = structural.common_neighbours(kg, src, dst) > 0
        deg = structural.degree_features(kg, split.relation, src, dst)  # d_r(u), d_r(v), d(u), d(v)
        cold_src, cold_dst = deg[:, 0] == 0, deg[:, 1] == 0
        unseen = (deg[:, 2] == 0) | (deg[:, 3] == 0)
        for label, sel in (("pos", y), ("neg", ~y)):
            med = np.median(deg[sel], axis=0)
            print(f"   {part:<5}{label}: 3-path {p3[sel].mean():6.1%}  CN>0 {cn[sel].mean():6.1%}  src cold {cold_src[sel].mean():6.1%}"
                  f"  dst cold {cold_dst[sel].mean():6.1%}  an end unseen {unseen[sel].mean():6.1%}  median d_r(src) {med[0]:.0f} "
                  f"d_r(dst) {med[1]:.0f} d(src) {med[2]:.0f} d(dst) {med[3]:.0f}")
        print(f"   {part:<5}AUC of d_r(src)*d_r(dst): {roc_auc_score(y, deg[:, 0] * deg[:, 1]):.3f}; of d_r(dst) alone "
              f"{roc_auc_score(y, deg[:, 1]):.3f}; of d_r(src) alone {roc_auc_score(y, deg[:, 0]):.3f}", flush=True)


def summary(rows: dict, relations: list[str], methods: list[str], reps: list[tuple[int, int]]) -> None:
    """Means over relations (of each relation's mean over replicates), each option against TSH
    relation by relation, and, per option, the per-relation paired differences: mean, their standard error over graphs (replicates of one graph share its test
    positives, so they are averaged first; no error with one graph), and how many replicates the
    option was >= TSH in."""
    def mean(rel: str, m: str, key: str) -> float:
        return float(np.mean([rows[(rel, m, r)][key] for r in reps]))

    if not relations:
        return
    graphs = list(dict.fromkeys(g for g, _ in reps))
    seeds = list(dict.fromkeys(s for _, s in reps))
    print(f"\n{len(reps)} replicate(s) (graph seed, split seed): {reps}; relation values are means over them")
    print(f"{'method':<23}{'valAP':>7}{'AUC':>7}{'AP':>7}{'F1':>7}{'F1h':>7}{'auto band':>10}{'oracle-F1':>10}"
          "  AP >= TSH  F1 >= TSH  F1h >= TSH  band in 25-55%")  # fmt: skip
    for m in methods:
        line = (f"{m:<23}" + "".join(f"{np.mean([mean(r, m, k) for r in relations]):>7.3f}" for k in ("val_ap", "auc", "ap", "f1", "f1_half"))
                + f"{np.mean([mean(r, m, 'band_auto') for r in relations]):>10.1%}"
                + f"{np.mean([mean(r, m, 'oracle') - mean(r, m, 'f1') for r in relations]):>+10.3f}")  # fmt: skip
        wins = {k: "-" for k in ("ap", "f1", "f1_half")}
        if "tsh" in methods and m != "tsh":
            wins = {k: f"{sum(mean(r, m, k) >= mean(r, 'tsh', k) for r in relations)}/{len(relations)}" for k in wins}
        line += f"  {wins['ap']:<11}{wins['f1']:<11}{wins['f1_half']:<12}"
        line += f"{sum(0.25 <= mean(r, m, 'band_auto') <= 0.55 for r in relations)}/{len(relations)}"
        print(line)
    options = [m for m in methods if m != "tsh" and m not in STRUCTURAL]  # structural rows: relation_tables pairs them
    if "tsh" not in methods or not options:
        return
    for option in options:  # every option: picking one by its test AP would be a choice made on test
        print(f"\n{option} - TSH per relation: mean paired difference over replicates (standard error over "
              f"{len(graphs)} graph(s)) [replicates with {option} >= TSH]; test positives per graph")
        print(f"{'relation':<9}{'AP':>7}{'TSH AP':>8}{'dAP':>17}{'F1':>7}{'TSH F1':>8}{'dF1':>17}"
              f"{'F1h':>7}{'TSH F1h':>8}{'dF1h':>17}{'F1*':>7}{'TSH F1*':>8}{'dF1*':>17}  test pos")  # fmt: skip
        for r in relations:
            line = f"{r:<9}"
            for k in ("ap", "f1", "f1_half", "f1_test_best"):
                d = {rep: rows[(r, option, rep)][k] - rows[(r, "tsh", rep)][k] for rep in reps}
                per_graph = [np.mean([v for (g, _), v in d.items() if g == graph]) for graph in graphs]
                se = f"({np.std(per_graph, ddof=1) / np.sqrt(len(graphs)):.3f})" if len(graphs) > 1 else ""
                wins = f"[{sum(v >= 0 for v in d.values())}/{len(d)}]"
                line += f"{mean(r, option, k):>7.3f}{mean(r, 'tsh', k):>8.3f}{np.mean(list(d.values())):>+8.3f}{se:>7}{wins:>6}"
            line += "  " + "/".join(str(rows[(r, option, (g, seeds[0]))]["test_pos"]) for g in graphs)
            print(line)
    if PLANTED in methods:
        room = np.mean([mean(r, PLANTED, "ap") - mean(r, "tsh", "ap") for r in relations])
        print(f"\nheadroom: {PLANTED} - TSH, AP {room:+.3f} (mean over relations); share of it each option takes:")
        for option in (m for m in options if m != PLANTED):
            gain = np.mean([mean(r, option, "ap") - mean(r, "tsh", "ap") for r in relations])
            print(f"  {option:<17}AP {gain:+.3f}  {gain / room:>6.0%}")


ABLATION = [
    ("hgt (paper, App. B.1)", "hgt", {}),
    ("+ leak-free folds, fresh negatives, val-AP selection", "hgt",
     {"folds": 4, "select_on": "ap", "val_every": 1, "patience": 10}),
    ("+ node inputs (statistics + names), cosine decoder", "hgt_plus", {"decoder": "cosine", "head_folds": 0}),
    ("+ MLP decoder over link features", "hgt_plus", {"head_folds": 0}),
    ("+ validation head over [logit, link features]", "hgt_plus", {"head_inputs": "link"}),
    ("  head over [logit, TSH's inputs] instead", "hgt_plus", {"head_inputs": "tsh"}),
    ("  the better of the two on validation (= hgt_plus)", "hgt_plus", {}),
]  # fmt: skip


def ablation(kg, args) -> None:
    split = temporal_split(kg, kg.schema.relation("chm_apl"), seed=args.seed)
    y_val, y_test = split.part("val")["label"].to_numpy(), split.part("test")["label"].to_numpy()
    print(f"\n== ablation, chm_apl: from the paper's HGT to hgt_plus\n{'step':<55}{'valAUC':>7}{'testAUC':>8}{'AP':>7}{'F1':>7}")
    for label, name, over in ABLATION:
        s = triage_scores(split, backbone_cfg(name, args.epochs) | over, args.seed, args.cache)
        f1 = f1_score(y_test, s.test >= f1_threshold(s.val, y_val), zero_division=0)
        print(f"{label:<55}{roc_auc_score(y_val, s.val):>7.3f}{roc_auc_score(y_test, s.test):>8.3f}"
              f"{average_precision_score(y_test, s.test):>7.3f}{f1:>7.3f}", flush=True)  # fmt: skip


def plain_loop(split, cfg: dict, seed: int) -> float:
    """The same module, steps and validation schedule as ``fit``, without Lightning: seconds."""
    import lightning as L

    L.seed_everything(seed, verbose=False)
    module, batches, train_data = build_module(split, cfg)
    opt = module.configure_optimizers()
    t0 = time.perf_counter()
    for epoch in range(1, int(cfg["epochs"]) + 1):
        module.train()
        for k in range(len(train_data)):
            loss = module._loss(train_data[k])
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch % int(cfg["val_every"]) == 0:
            module.eval()
            with torch.no_grad():
                module.validation_step(batches["val"], 0)
    return time.perf_counter() - t0


def speed(kg, methods: list[str], args) -> None:
    split = temporal_split(kg, kg.schema.relation("chm_apl"), seed=args.seed)
    print(f"\n== speed, chm_apl\n{'backbone':<17}{'epochs':>7}{'L s/ep':>8}{'plain s/ep':>11}{'ratio':>7}")
    for name in methods:
        if name == "tsh":
            continue
        cfg = backbone_cfg(name, args.epochs) | {"patience": None}  # same epochs in both modes
        epochs = int(cfg["epochs"])
        fit(split, cfg | {"epochs": 2, "val_every": 1}, args.seed)  # untimed warm-up (PyG codegen, allocator)
        runs, plains = [], []
        for _ in range(args.repeats):  # interleaved, so that load from other processes hits both
            runs.append(fit(split, cfg, args.seed).seconds)
            plains.append(plain_loop(split, cfg, args.seed))
        run, plain = min(runs), min(plains)
        print(f"{name:<17}{epochs:>7}{run / epochs:>8.3f}{plain / epochs:>11.3f}{run / plain:>7.2f}", flush=True)


def feature_cost(args) -> None:
    from hygrail.triage.backbones import HeadPairs
    from hygrail.triage.features import link_blocks, link_features, pair_features

    head = HeadPairs(backbone_cfg("hgt_plus")["names"])  # the configs' name encoder

    print(f"\n== pair-feature cost, us/pair (one core)\n{'graph':<42}{'link, block':>12}{'link, pairs':>12}"
          f"{'link, random':>13}{'rgcn6, random':>14}{'+head, block':>13}")  # fmt: skip
    rng = np.random.default_rng(0)
    for scale in (float(x) for x in args.feature_scales.split(",")):
        kg = load_kg(data_config(scale=scale))
        chm, apl = kg.nodes_of_type("CHM"), kg.nodes_of_type("APL")
        sources = chm[:256]
        src, dst = np.repeat(sources, len(apl)), np.tile(apl, len(sources))
        rs, rd = rng.choice(chm, 50_000), rng.choice(apl, 50_000)
        if head.cfg["embedding"]:  # names are encoded once per process: not a per-pair cost
            from hygrail.names import embed_names

            embed_names([kg.names[i] for i in np.r_[sources, apl]], head.cfg["embedding_model"])
        cost = []
        for run, n in ((lambda: link_blocks(kg, sources, apl), len(src)), (lambda: link_features(kg, src, dst), len(src)),
                       (lambda: link_features(kg, rs, rd), len(rs)), (lambda: pair_features(kg, rs, rd), len(rs)),
                       (lambda: head.blocks(kg, apl)(sources), len(src))):  # fmt: skip
            t0 = time.perf_counter()
            run()
            cost.append((time.perf_counter() - t0) / n * 1e6)
        print(f"{str(kg):<42}" + "".join(f"{c:>12.2f}" for c in cost), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="matkg_synthetic,biokg", help="comma list: matkg_synthetic, biokg, hpo, synthesis_recipes")
    ap.add_argument("--relations", default=None, help="comma list (default: all of each KG)")
    ap.add_argument("--methods", default=METHODS, help=f"comma list: backbones (conf/backbone), tsh, {PLANTED}, the "
                    f"structural baselines {','.join(STRUCTURAL)}, and tsh{COMPAT} / <plus backbone>{COMPAT} (the "
                    f"compatibility descriptor on; --data {', '.join(COMPATIBLE)})")
    ap.add_argument("--epochs", type=int, default=None, help="override every backbone's epochs (quick looks)")
    ap.add_argument("--seeds", default="42", help="comma list; quality tables average over them (the ablation and --speed use the first)")
    ap.add_argument("--graph-seeds", default=None, help="comma list of generator seeds: each draws another KG (default 0: "
                    "the default one), i.e. other test positives; the quality tables average over graphs x seeds. On a real "
                    "KG with --subgraph-nodes: data.subgraph_seed values, each another sample (default 42, the config's)")
    ap.add_argument("--subgraph-nodes", type=int, default=None, help="real KGs: data.subgraph_nodes, the type/density-"
                    "preserving sample (3000: the paper's); default: the whole graph")
    ap.add_argument("--graph-cut", default="relation", choices=("relation", "time"), help="split.graph_cut: relation (the "
                    "paper's) or time (also every other edge dated from the validation start; hygrail/data/split.py)")
    ap.add_argument("--diagnose", action="store_true", help="per relation (first seed): 3-path and common-neighbour "
                    "coverage, cold-start ends and degrees of val/test positives and negatives")
    ap.add_argument("--scale", type=float, default=1.0, help="data.scale of the synthetic MatKG for the quality tables "
                    "(1: paper size; 2 has ~3.4x the edges, so more test positives per relation)")
    ap.add_argument("--cache", type=Path, default=ROOT / "outputs/cache/triage")
    ap.add_argument("--ablation", action="store_true", help="only the HGT ablation on chm_apl")
    ap.add_argument("--speed", action="store_true", help="only Lightning vs plain-loop seconds per epoch")
    ap.add_argument("--feature-cost", action="store_true", help="only the pair-feature cost")
    ap.add_argument("--feature-scales", default="1,5", help="data.scale values for --feature-cost")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.scale != 1.0 and "biokg" in args.data.split(","):
        ap.error(f"--scale {args.scale}: the second KG has one size; pass --data matkg_synthetic")
    unknown = set(args.data.split(",")) - set(RELATIONS)
    if unknown:
        ap.error(f"--data {','.join(sorted(unknown))}: expected some of {', '.join(RELATIONS)}")
    if args.subgraph_nodes and set(args.data.split(",")) - set(REAL_RELATIONS):
        ap.error(f"--subgraph-nodes samples a real KG ({', '.join(REAL_RELATIONS)}); the synthetic ones have --scale")
    compat = [m for m in args.methods.split(",") if m.endswith(COMPAT)]
    if stray := [m for m in compat if m.removesuffix(COMPAT) not in ("tsh", *PLUS)]:
        ap.error(f"--methods {','.join(stray)}: {COMPAT} goes with tsh or a plus backbone ({', '.join(PLUS)})")
    if compat and (lacking := set(args.data.split(",")) - set(COMPATIBLE)):
        ap.error(f"--methods {','.join(compat)}: no compatibility setting for --data {','.join(sorted(lacking))}; "
                 f"expected {', '.join(COMPATIBLE)} (COMPATIBLE in this script)")
    if PLANTED in args.methods.split(",") and args.data != "matkg_synthetic":
        ap.error(f"--methods {PLANTED} reads the synthetic MatKG's planted topics; pass --data matkg_synthetic")
    args.seeds = [int(x) for x in args.seeds.split(",")]
    args.seed = args.seeds[0]
    if args.graph_seeds is not None and len(args.graph_seeds.split(",")) > 1 and not args.subgraph_nodes \
            and set(args.data.split(",")) & set(REAL_RELATIONS):
        ap.error("--graph-seeds on a real KG draws other subgraph samples: pass --subgraph-nodes (the whole graph is one)")
    torch.set_num_threads(args.threads)
    methods = args.methods.split(",")
    if args.feature_cost:
        return feature_cost(args)
    with tempfile.TemporaryDirectory() as tmp:
        if args.ablation or args.speed:
            kg, _ = load("matkg_synthetic", Path(tmp))
            (ablation(kg, args) if args.ablation else speed(kg, methods, args))
            return
        asked = args.relations.split(",") if args.relations else None
        if asked and (stray := [r for r in asked if not any(r in RELATIONS[d].split(",") for d in args.data.split(","))]):
            ap.error(f"--relations {','.join(stray)}: not a relation of --data {args.data} ({RELATIONS})")
        for data in args.data.split(","):
            relations = [r for r in (asked or RELATIONS[data].split(",")) if r in RELATIONS[data].split(",")]
            if not relations:
                continue
            graph_seeds = [int(x) for x in (args.graph_seeds or ("42" if data in REAL_RELATIONS else "0")).split(",")]
            kgs = {g: load(data, Path(tmp), g, args.scale, args.subgraph_nodes) for g in graph_seeds}
            args.compatible = COMPATIBLE.get(data)
            quality(data, kgs, relations, methods, args)


if __name__ == "__main__":
    main()
