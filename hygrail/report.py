"""Paper §5 tables and figures, regenerated from the MLflow store.

``python -m hygrail.report [--uri URI] [--experiment NAME ...] [--out DIR]`` writes Table 2
(recall/F1 per method x LLM x backbone), Table 3 (call rate and reduction per backbone), the
ranking table (test ROC-AUC and average precision of every method that scores pairs: GNN-only,
TSH, the structural baselines, with the lift over preferential attachment) as markdown and CSV, and with --figures Figs. 3-4 plus F1 vs call rate across (m, n) as PNG. With
--strategies it writes the evidence-strategies table instead (one row per evidence mode, quality
and cost per reviewed hypothesis, and F1 per evidence tier where a mode logs tiers). Fig. 2 (score
distribution and band) is drawn for every cell as it is logged (``tracking.score_figure``).

Pooling: the paper's Table 3 average (45.64%) is the plain mean of its three backbone rows, so its
numbers are means over cells; we therefore pool by macro-averaging per-relation test metrics
(``pool=macro``, the default). ``pool=micro`` recomputes precision/recall/F1 from the summed test
confusion counts of all relations instead (AUC and AP are always macro: they do not add up over
relations). With several seeds, cells show mean ± std over seeds.
A cell pooled over fewer relations than the table holds is marked (5/7); a HyGRAIL row run under a
review budget is marked ‡, one whose reviews were decided by the probability rule
(``llm.decision=probability``: P(yes) >= γ, not the paper's yes ∧ confidence >= γ) is marked §, one
decided by the combined rule (``llm.decision=calibrated``: P(yes) calibrated and combined with the
GNN score, hygrail/review/calibrate.py) is marked ¶. Two runs of one cell with different settings (say another data set or
routing purity) stop the report, naming the settings; ``--latest`` keeps the newest run instead.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # figures are files; no display on servers
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from hygrail.baselines.kge import LABEL as KGE_LABEL  # noqa: E402
from hygrail.baselines.structural import ROWS as STRUCTURAL_ROWS  # noqa: E402
from hygrail.baselines.transitions import LABEL as GBDT_LABEL  # noqa: E402
from hygrail.tracking import NO_LLM  # noqa: E402


LABELS = ("GNN", "HyGRAIL-NE", "HyGRAIL-Auto", "HyGRAIL-LLM")  # paper Table 2 rows, in its order
REGION_NAMES = {"auto_reject": "auto-reject (below a*)", "auto_accept": "auto-accept (above b*)",
                "reviewed": "LLM-reviewed", "over_budget": "routed, over budget (GNN decides)"}


def load_runs(uri: str, experiments: list[str]) -> pl.DataFrame:
    """Finished runs of the named experiments, one row per run, newest first per cell."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    ids = [e.experiment_id for name in experiments if (e := mlflow.get_experiment_by_name(name))]
    if not ids:
        raise SystemExit(f"error: no MLflow experiment named {experiments} in {uri}; run a sweep first")
    runs = mlflow.search_runs(ids, filter_string="attributes.status = 'FINISHED'", output_format="list")
    rows = []
    for r in runs:
        row = {"run_id": r.info.run_id, "start": r.info.start_time, **{f"tag.{k}": v for k, v in r.data.tags.items()}}
        row |= {f"param.{k}": v for k, v in r.data.params.items()}
        row |= {k: float(v) for k, v in r.data.metrics.items()}
        rows.append(row)
    if not rows:
        raise SystemExit(f"error: no finished runs in experiment(s) {experiments} of {uri}; run a sweep first")
    df = pl.DataFrame(rows, infer_schema_length=None)
    # A cell rerun with resume=false leaves two runs with one cell_key: keep the newest.
    return df.sort("start", descending=True).unique("tag.cell_key", keep="first", maintain_order=True)


CELL = ["tag.method_label", "tag.backbone", "llm", "tag.relation", "param.seed"]


def one_run_per_cell(runs: pl.DataFrame, latest: bool = False) -> pl.DataFrame:
    """Table rows average over relations and seeds, so each (method, backbone, LLM, relation, seed)
    must be one run. Runs that differ in anything else (data, routing, budget, ...) are an error
    naming what differs, or with ``latest`` the newest of them is kept."""
    runs = runs.with_columns(  # GNN-only and TSH used no LLM, whatever their llm tag says
        pl.when(pl.col("tag.method").is_in(NO_LLM)).then(pl.lit("–")).otherwise(pl.col("tag.llm")).alias("llm"))
    dup = runs.filter(pl.len().over(CELL) > 1)
    if dup.height == 0:
        return runs
    if latest:
        kept = runs.sort("start", descending=True).unique(CELL, keep="first", maintain_order=True)
        print(f"--latest: {runs.height - kept.height} older run(s) of the same cells left out")
        return kept
    first = dup.sort(CELL).head(1).to_dicts()[0]
    same = dup.filter(pl.all_horizontal(pl.col(c) == first[c] for c in CELL))
    params = [c for c in same.columns if c.startswith("param.") and same[c].n_unique() > 1]
    raise SystemExit(
        f"error: {same.height} runs of {first['tag.method_label']} {first['tag.backbone']} {first['llm']} "
        f"{first['tag.relation']} seed {first['param.seed']} differ in {', '.join(p[6:] for p in params) or 'nothing logged'} "
        f"(runs {', '.join(same['run_id'])}); put such runs in separate experiments (tracking.experiment=...), "
        f"delete the unwanted ones (make ui), or pass --latest to keep the newest")


def pool(runs: pl.DataFrame, keys: list[str], how: str = "macro") -> pl.DataFrame:
    """Test recall/F1/call rate per ``keys``: pooled over relations per seed, then mean ± std over seeds."""
    seed = "param.seed"
    per_seed_keys = keys + [seed]
    if how == "macro":
        per_seed = runs.group_by(per_seed_keys).agg(
            pl.col("test_recall").mean(), pl.col("test_f1").mean(), pl.col("test_call_rate").mean(),
            pl.col("tag.relation").n_unique().alias("relations"),
        )
    elif how == "micro":
        per_seed = runs.group_by(per_seed_keys).agg(
            pl.col("test_tp").sum(), pl.col("test_fp").sum(), pl.col("test_fn").sum(),
            pl.col("test_call_rate").mean(), pl.col("tag.relation").n_unique().alias("relations"),
        ).with_columns(
            (pl.col("test_tp") / (pl.col("test_tp") + pl.col("test_fn"))).fill_nan(0).alias("test_recall"),
            (2 * pl.col("test_tp") / (2 * pl.col("test_tp") + pl.col("test_fp") + pl.col("test_fn"))).fill_nan(0).alias("test_f1"),
        )
    else:
        raise SystemExit(f"error: pool={how!r}; expected macro or micro")
    return _over_seeds(per_seed, keys, ("test_recall", "test_f1", "test_call_rate"))


def _over_seeds(per_seed: pl.DataFrame, keys: list[str], metrics: tuple[str, ...]) -> pl.DataFrame:
    return per_seed.group_by(keys).agg(
        *[pl.col(c).mean().alias(c) for c in metrics],
        *[pl.col(c).std().fill_null(0).alias(f"{c}_std") for c in metrics],
        pl.len().alias("seeds"),
        pl.col("relations").min(),
    ).sort(keys)


def _cell(row: dict | None, metric: str, n_relations: int | None = None) -> str:
    if row is None:
        return "–"
    text = f"{row[metric]:.3f} ± {row[metric + '_std']:.3f}" if row["seeds"] > 1 else f"{row[metric]:.3f}"
    if n_relations and row["relations"] < n_relations:  # pooled over fewer relations than the table
        text += f" ({row['relations']}/{n_relations})"
    return text


def labels_of(runs: pl.DataFrame, method: str, paper: tuple[str, ...]) -> list[str]:
    """Row labels of ``method`` present: the paper's (``paper``) in its order, then the others sorted
    (other evidence modes, or a non-paper ``routing.threshold``: "GNN (half_max_f1)")."""
    present = set(runs.filter(pl.col("tag.method") == method)["tag.method_label"].to_list())
    return [x for x in paper if x in present] + sorted(present - set(paper))


def hygrail_labels(runs: pl.DataFrame) -> list[str]:
    return labels_of(runs, "hygrail", LABELS[1:])


def table2(runs: pl.DataFrame, how: str = "macro") -> tuple[str, pl.DataFrame]:
    """Paper Table 2: rows method per backbone block, columns (Rec., F1) per LLM; a table of runs
    without any LLM (GNN-only, TSH, structural) has one (Rec., F1) pair."""
    # GNN-only, TSH and structural runs carry the default llm tag too, but no LLM was involved.
    llms = sorted(runs.filter(pl.col("tag.method").is_in(["hygrail", "kgfm"]))["tag.llm"].unique().drop_nulls().to_list())
    columns = llms or [None]
    hy = pool(runs.filter(pl.col("tag.method") == "hygrail"), ["tag.method_label", "tag.backbone", "tag.llm"], how)
    gnn = pool(runs.filter(pl.col("tag.method") == "gnn_only"), ["tag.method_label", "tag.backbone"], how)
    kgfm = pool(runs.filter(pl.col("tag.method") == "kgfm"), ["tag.llm"], how) if "kgfm" in runs["tag.method"] else None
    tsh = pool(runs.filter(pl.col("tag.method") == "tsh"), ["tag.method_label"], how) if "tsh" in runs["tag.method"] else None
    structural = (pool(runs.filter(pl.col("tag.method") == "structural"), ["tag.method_label"], how)
                  if "structural" in runs["tag.method"] else None)
    n_rel = runs["tag.relation"].n_unique()
    budgeted = budget_notes(runs)
    rules = decision_rows(runs)
    fallback = fallback_notes(runs)
    head = "| Method | " + " | ".join(f"{m} Rec. | {m} F1" if m else "Rec. | F1" for m in columns) + " |"
    sep = "|---" * (1 + 2 * len(columns)) + "|"
    lines, flat = [], []

    def row(label: str, cells: list[dict | None], block: str, marked: frozenset = frozenset()):
        """``marked``: LLM columns whose values carry † (a sampled test set)."""
        shown = f"{label}‡" if (label, block) in budgeted else label
        shown += "".join(RULE_MARKS[rule] for rule in sorted(rules.get((label, block), ())))
        shown += f" ({fallback[label, block]})" if (label, block) in fallback else ""
        text = [f"{_cell(c, m, n_rel)}{'†' if llm in marked and c else ''}" for llm, c in zip(columns, cells)
                for m in ("test_recall", "test_f1")]
        lines.append(f"| {shown} | " + " | ".join(text) + " |")
        for llm, c in zip(columns, cells):
            if c is not None:
                flat.append({"block": block, "method": label, "llm": llm or "–", "sampled": llm in marked}
                            | {k: c[k] for k in c if k.startswith("test_")} | {"seeds": c["seeds"], "relations": c["relations"]})

    def find(df, **eq):
        if df is None:
            return None
        for r in df.iter_rows(named=True):
            if all(r[k] == v for k, v in eq.items()):
                return r
        return None

    if tsh is not None or kgfm is not None:
        lines += ["**Prior baselines**", "", head, sep]
        for label in labels_of(runs, "tsh", ("TSH",)):
            row(label, [find(tsh, **{"tag.method_label": label})] * len(columns), "baselines")
        if kgfm is not None:
            sampled = frozenset()
            if "test_sampled" in runs.columns:
                sampled = frozenset(runs.filter((pl.col("tag.method") == "kgfm") & (pl.col("test_sampled") == 1))["tag.llm"])
            row("KG-FM", [find(kgfm, **{"tag.llm": m}) for m in columns], "baselines", sampled)
            if sampled:
                lines += ["", "† sampled: metrics on a stratified sample of the test set (method.cap; size in test_evaluated)"]
        lines.append("")
    if structural is not None:
        lines += ["**Structural baselines** (training graph only; AUC and AP: ranking.md)", "", head, sep]
        for label in labels_of(runs, "structural", STRUCTURAL_ROWS):
            row(label, [find(structural, **{"tag.method_label": label})] * len(columns), "baselines")
        lines.append("")
    for bb in sorted(set(hy["tag.backbone"].to_list()) | set(gnn["tag.backbone"].to_list())):
        lines += [f"**GNN backbone: {bb}**", "", head, sep]
        for label in labels_of(runs, "gnn_only", ("GNN",)):
            g = find(gnn, **{"tag.method_label": label, "tag.backbone": bb})
            if g is not None:
                row(label, [g] * len(columns), bb)
        for label in hygrail_labels(runs):
            cells = [find(hy, **{"tag.method_label": label, "tag.backbone": bb, "tag.llm": m}) for m in columns]
            if any(cells):
                row(label, cells, bb)
        lines.append("")
    if budgeted:
        lines.append("‡ review budget: only part of the routed band was reviewed by the LLM; the rest kept the "
                     "GNN-only decision. LLM call rate (Table 3) is the routed share; the LLM decided:")
        lines += [f"- {label} ({bb}): {note}" for (label, bb), note in sorted(budgeted.items())]
    shown_rules = set().union(*rules.values())
    if "probability" in shown_rules:
        lines.append("§ decision rule: accept iff P(yes) >= γ (llm.decision=probability, γ on validation), not the "
                     "paper's review = yes ∧ confidence >= γ")
    if "calibrated" in shown_rules:
        lines.append("¶ decision rule: accept iff a logistic regression of (GNN score logit, calibrated P(yes)), fit on "
                     "the validation reviews, gives >= a validation cut (llm.decision=calibrated), not the paper's "
                     "review = yes ∧ confidence >= γ")
    return "\n".join(lines), pl.DataFrame(flat)


# Table 2 marks of HyGRAIL rows decided by a rule other than the paper's (llm.decision).
RULE_MARKS = {"probability": "§", "calibrated": "¶"}


def decision_rows(runs: pl.DataFrame) -> dict[tuple[str, str], set[str]]:
    """(label, backbone) of HyGRAIL rows -> the non-paper rules (``RULE_MARKS``) some of its runs were decided by."""
    if "param.llm.decision" not in runs.columns:
        return {}
    hy = runs.filter((pl.col("tag.method") == "hygrail") & pl.col("param.llm.decision").is_in(list(RULE_MARKS)))
    out: dict[tuple[str, str], set[str]] = {}
    for label, bb, rule in zip(hy["tag.method_label"], hy["tag.backbone"], hy["param.llm.decision"]):
        out.setdefault((label, bb), set()).add(rule)
    return out


def fallback_notes(runs: pl.DataFrame) -> dict[tuple[str, str], str]:
    """(label, block) of reviewing rows (HyGRAIL per backbone, KG-FM among the baselines) with
    reviews decided by ``method.on_failure`` -> "12% of reviews fell back" (the mean share over the
    row's runs): those decisions are not the reviewer's, and the row's label says so."""
    from hygrail.review.stage import fallback_note

    if "review_fallback_share" not in runs.columns:
        return {}
    rows = runs.filter(pl.col("tag.method").is_in(["hygrail", "kgfm"])).with_columns(
        pl.when(pl.col("tag.method") == "kgfm").then(pl.lit("baselines")).otherwise(pl.col("tag.backbone")).alias("block"))
    share = rows.group_by("tag.method_label", "block").agg(pl.col("review_fallback_share").fill_null(0.0).mean())
    return {(r["tag.method_label"], r["block"]): fallback_note(r["review_fallback_share"])
            for r in share.iter_rows(named=True) if r["review_fallback_share"] > 0}


def budget_notes(runs: pl.DataFrame) -> dict[tuple[str, str], str]:
    """(label, backbone) of HyGRAIL rows run under a review budget -> how much of the band the LLM
    decided, summed over the row's runs (relations, LLMs, seeds)."""
    if "test_routed_unreviewed" not in runs.columns:
        return {}
    over = runs.filter((pl.col("tag.method") == "hygrail") & (pl.col("test_routed_unreviewed") > 0))
    if over.height == 0:
        return {}
    sums = over.group_by("tag.method_label", "tag.backbone").agg(
        pl.col("test_reviewed").sum(), (pl.col("test_reviewed") + pl.col("test_routed_unreviewed")).sum().alias("routed"))
    return {(r["tag.method_label"], r["tag.backbone"]):
            f"{int(r['test_reviewed'])} of {int(r['routed'])} routed test hypotheses ({r['test_reviewed'] / r['routed']:.1%} of the band)"
            for r in sums.iter_rows(named=True)}


def attribution_table(runs: pl.DataFrame) -> str:
    """Which region of each HyGRAIL cell changed which test decisions against GNN-only: hypotheses,
    changed decisions, and the change in true / false positives (hygrail.metrics.attribution)."""
    from hygrail.metrics import REGIONS

    hy = runs.filter(pl.col("tag.method") == "hygrail")
    if hy.height == 0 or "test_attr_reviewed_n" not in hy.columns:
        return ""
    lines = ["| relation | backbone | method | LLM | region | test hypotheses | changed vs GNN | ΔTP | ΔFP |",
             "|---" * 9 + "|"]
    for r in hy.sort("tag.relation", "tag.backbone", "tag.method_label", "tag.llm").iter_rows(named=True):
        for region in REGIONS:
            n, changed, tp, fp = (r[f"test_attr_{region}_{k}"] for k in ("n", "changed", "tp", "fp"))
            lines.append(f"| {r['tag.relation']} | {r['tag.backbone']} | {r['tag.method_label']} | {r['tag.llm']} | "
                         f"{REGION_NAMES[region]} | {n:.0f} | {changed:.0f} | {tp:+.0f} | {fp:+.0f} |")
    return "\n".join(lines)


def runs_table(runs: pl.DataFrame) -> str:
    """One line per cell: what `make run` prints (precision/recall/F1, the score's AUC/AP where the
    method scores every pair, routing and LLM cost)."""
    cols = {
        "tag.relation": "relation", "tag.backbone": "backbone", "tag.method_label": "method", "tag.llm": "LLM",
        "param.llm.decision": "decision", "test_precision": "P", "test_recall": "R", "test_f1": "F1",
        "test_auc": "AUC", "test_ap": "AP",
        "test_call_rate": "LLM call rate (routed)",
        "test_reviewed": "test reviews", "test_routed_unreviewed": "routed, over budget",
        "llm_calls": "LLM calls", "llm_seconds": "LLM s",
    }
    df = runs.select([pl.col(c).alias(n) if c in runs.columns else pl.lit(None).alias(n) for c, n in cols.items()])
    no_llm = runs["tag.method"].is_in(NO_LLM)
    df = df.with_columns(pl.when(no_llm).then(pl.lit("–")).otherwise(pl.col("LLM")).alias("LLM"),
                         # runs logged before llm.decision existed used the paper's rule
                         pl.when(no_llm).then(pl.lit("–")).otherwise(pl.col("decision").fill_null("paper")).alias("decision"))
    lines = ["| " + " | ".join(cols.values()) + " |", "|---" * len(cols) + "|"]
    rates = {"P", "R", "F1", "AUC", "AP", "LLM call rate (routed)", "LLM s"}
    for r in df.sort("relation", "backbone", "method").iter_rows(named=True):
        cells = ["–" if v is None else f"{v:.3f}" if k in rates else str(int(v)) if isinstance(v, float) else str(v) for k, v in r.items()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table3(runs: pl.DataFrame, how: str = "macro") -> tuple[str, pl.DataFrame]:
    """Paper Table 3: test LLM call rate (the share of test hypotheses routed to the LLM) and its
    reduction per backbone. Routing depends on the GNN only, so each (backbone, relation, seed)
    counts once, however many LLM x evidence cells it has; micro pooling weights relations by their
    test size. Under a review budget the LLM reviewed only part of the band: ``reviewed`` is that
    share of test (shown when it differs from the call rate)."""
    hy = runs.filter(pl.col("tag.method") == "hygrail")
    if "test_review_rate" not in hy.columns:
        hy = hy.with_columns(pl.col("test_call_rate").alias("test_review_rate"))
    if "test_n" not in hy.columns:
        hy = hy.with_columns(pl.lit(1.0).alias("test_n"))
    rates = ("test_call_rate", "test_review_rate")
    per_rel = hy.group_by("tag.backbone", "tag.relation", "param.seed").agg(
        *[pl.col(c).mean() for c in rates], pl.col("test_n").first())
    per_rel = per_rel.with_columns((pl.col("test_n") if how == "micro" else pl.lit(1.0)).alias("w"))
    per_seed = per_rel.group_by("tag.backbone", "param.seed").agg(
        *[((pl.col(c) * pl.col("w")).sum() / pl.col("w").sum()).alias(c) for c in rates], pl.len().alias("relations"))
    df = _over_seeds(per_seed, ["tag.backbone"], rates).select(
        pl.col("tag.backbone").alias("backbone"), "test_call_rate", (1 - pl.col("test_call_rate")).alias("reduction"),
        "test_review_rate", "relations")
    budget = bool(df.height) and bool((df["test_review_rate"] < df["test_call_rate"]).any())
    head = "| GNN backbone | LLM call rate | Reduction |" + (" LLM-reviewed (budget) |" if budget else "")
    lines = [head, "|---" * (4 if budget else 3) + "|"]

    def line(name: str, call: float, red: float, rev: float) -> str:
        return f"| {name} | {call:.2%} | {red:.2%} |" + (f" {rev:.2%} |" if budget else "")

    lines += [line(r["backbone"], r["test_call_rate"], r["reduction"], r["test_review_rate"]) for r in df.iter_rows(named=True)]
    if df.height:
        lines.append(line("mean", df["test_call_rate"].mean(), df["reduction"].mean(), df["test_review_rate"].mean()))
    return "\n".join(lines), df


RANKED = ("structural", "tsh", "gbdt", "kge", "gnn_only")  # methods that score every pair (test_auc, test_ap), in row order


def ranking_table(runs: pl.DataFrame) -> tuple[str, pl.DataFrame]:
    """Threshold-free ranking quality on test: ROC-AUC and average precision of each method that
    scores every pair (the structural baselines, TSH, GNN-only per backbone), macro over relations
    per seed, then mean ± std over seeds; where PA ran, the lift over it, paired (each run minus
    the PA run of its relation and seed, then pooled alike). HyGRAIL rows have none of their own:
    outside the band their decisions are their GNN's, whose AUC is the GNN row's (logged on the
    HyGRAIL run as gnn_test_auc). AUC and AP do not depend on the decision threshold, so "GNN" and
    "GNN (half_max_f1)" show the same figures. Runs logged before AUC existed are left out."""
    if "test_auc" not in runs.columns:
        return "", pl.DataFrame()
    scored = runs.filter(pl.col("tag.method").is_in(RANKED) & pl.col("test_auc").is_not_null()).with_columns(
        pl.when(pl.col("tag.method") == "gnn_only").then(pl.col("tag.backbone")).otherwise(pl.lit("–")).alias("block"))
    if scored.height == 0:
        return "", pl.DataFrame()
    metrics = ["test_auc", "test_ap"]
    if "param.method.heuristic" in scored.columns and (pa := scored.filter(pl.col("param.method.heuristic") == "pa")).height:
        pa = pa.unique(["tag.relation", "param.seed"], keep="first").select(
            "tag.relation", "param.seed", pl.col("test_auc").alias("pa_auc"), pl.col("test_ap").alias("pa_ap"))
        scored = scored.join(pa, on=["tag.relation", "param.seed"], how="left").with_columns(
            (pl.col("test_auc") - pl.col("pa_auc")).alias("lift_auc"), (pl.col("test_ap") - pl.col("pa_ap")).alias("lift_ap"))
        metrics += ["lift_auc", "lift_ap"]
    keys = ["tag.method", "tag.method_label", "block"]
    per_seed = scored.group_by(keys + ["param.seed"]).agg(*[pl.col(c).mean() for c in metrics],
                                                          pl.col("tag.relation").n_unique().alias("relations"))
    df = _over_seeds(per_seed, keys, tuple(metrics))
    n_rel = runs["tag.relation"].n_unique()
    heads = ["Method", "GNN backbone", "AUC", "AP"] + (["ΔAUC vs PA", "ΔAP vs PA"] if "lift_auc" in metrics else [])
    lines = ["| " + " | ".join(heads) + " |", "|---" * len(heads) + "|"]
    for method, paper in zip(RANKED, (STRUCTURAL_ROWS, ("TSH",), (GBDT_LABEL,), (KGE_LABEL,), ("GNN",))):
        part = df.filter(pl.col("tag.method") == method)
        for label in labels_of(runs, method, paper):
            for r in part.filter(pl.col("tag.method_label") == label).iter_rows(named=True):
                cells = [_cell(r, m, n_rel) if r[m] is not None else "–" for m in metrics]
                if r["tag.method_label"] == "PA":
                    cells[2:] = ["–"] * len(cells[2:])  # the reference itself
                lines.append(f"| {label} | {r['block']} | " + " | ".join(cells) + " |")
    flat = df.rename({"tag.method": "method_name", "tag.method_label": "method", "block": "backbone"})
    return "\n".join(lines), flat


def strategies_table(runs: pl.DataFrame) -> tuple[str, pl.DataFrame]:
    """The evidence-strategies comparison (``experiment=evidence_strategies``): one row per evidence
    mode (its ``label``), after a GNN-only row from the same cells. Quality: test precision, recall
    and F1, macro over relations (and seeds) like Table 2; cost: the LLM call rate (the routed share,
    paper meaning), then per hypothesis the reviewing stage handled (val + test, ``*_reviewed``):
    LLM requests (cached or not), tokens of the mode's pre-stages and of the reviews, LLM server
    seconds, and the seconds the mode's retrieval took outside the LLM (``evidence_seconds``)."""
    hy = runs.filter(pl.col("tag.method") == "hygrail")
    if hy.height == 0:
        return "", pl.DataFrame()

    def col(df: pl.DataFrame, name: str) -> pl.Series:
        return df[name].fill_null(0.0) if name in df.columns else pl.Series(name, [None] * df.height, dtype=pl.Float64)

    rows = []
    cells = hy.unique(["tag.relation", "param.seed"], keep="first")
    if "gnn_test_f1" in cells.columns:
        rows.append({"method": "GNN", "relations": cells["tag.relation"].n_unique(),
                     **{m: cells[f"gnn_test_{m}"].mean() for m in ("precision", "recall", "f1")}, "call_rate": 0.0})
    for label in hygrail_labels(runs):
        part = hy.filter(pl.col("tag.method_label") == label)
        handled = float((col(part, "val_reviewed") + col(part, "test_reviewed")).sum())

        def per_hyp(*names: str) -> float | None:
            if any(n not in part.columns for n in names) or not handled:
                return None
            return float(sum(col(part, n).sum() for n in names)) / handled

        rows.append({
            "method": label, "relations": part["tag.relation"].n_unique(),
            **{m: part[f"test_{m}"].mean() for m in ("precision", "recall", "f1")},
            "call_rate": part["test_call_rate"].mean(), "handled": handled,
            "budget": bool("test_routed_unreviewed" in part.columns and (col(part, "test_routed_unreviewed") > 0).any()),
            "llm_requests_per_hyp": per_hyp("llm_requests"),
            "prestage_tokens_per_hyp": per_hyp("llm_prestage_prompt_tokens", "llm_prestage_completion_tokens"),
            "review_tokens_per_hyp": per_hyp("llm_review_prompt_tokens", "llm_review_completion_tokens"),
            "llm_seconds_per_hyp": per_hyp("llm_seconds"),
            "evidence_seconds_per_hyp": per_hyp("evidence_seconds"),
        })
    df = pl.DataFrame(rows, infer_schema_length=None)
    heads = ["Method", "relations", "P", "R", "F1", "LLM call rate (routed)", "hypotheses reviewed (val+test)",
             "LLM requests / hyp", "pre-stage tokens / hyp", "review tokens / hyp", "LLM s / hyp", "evidence s / hyp"]
    lines = ["| " + " | ".join(heads) + " |", "|---" * len(heads) + "|"]

    def fmt(v, spec: str) -> str:
        return "–" if v is None else format(v, spec)

    for r in df.iter_rows(named=True):
        name = f"{r['method']}‡" if r.get("budget") else r["method"]
        lines.append(" | ".join([
            f"| {name}", str(r["relations"]), fmt(r["precision"], ".3f"), fmt(r["recall"], ".3f"), fmt(r["f1"], ".3f"),
            fmt(r["call_rate"], ".1%"), fmt(r.get("handled"), ".0f"), fmt(r.get("llm_requests_per_hyp"), ".2f"),
            fmt(r.get("prestage_tokens_per_hyp"), ".0f"), fmt(r.get("review_tokens_per_hyp"), ".0f"),
            fmt(r.get("llm_seconds_per_hyp"), ".2f"), fmt(r.get("evidence_seconds_per_hyp"), ".3f")]) + " |")
    if any(r.get("budget") for r in rows):
        lines.append("\n‡ review budget: the LLM reviewed only part of the routed band; the rest kept the GNN-only "
                     "decision (LLM call rate is still the routed share).")
    return "\n".join(lines), df


def tiers_table(runs: pl.DataFrame) -> str:
    """Test precision/recall/F1 of the reviewed hypotheses per evidence tier (an evidence mode's
    ``breakdown``, e.g. ARIA's), for each label that logged one: hypotheses summed over cells,
    metrics macro over the cells where the tier occurred."""
    lines = []
    for label in sorted(set(runs["tag.method_label"].drop_nulls())):
        part = runs.filter(pl.col("tag.method_label") == label)
        found = sorted({c.split("_")[3] for c in part.columns
                        if c.startswith("test_by_tier_") and c.endswith("_n") and part[c].drop_nulls().len()})
        if not found:
            continue
        total = sum(float(part[f"test_by_tier_{t}_n"].fill_null(0).sum()) for t in found)
        lines += [f"**{label}**", "", "| tier | test hypotheses reviewed | share | P | R | F1 |", "|---" * 6 + "|"]
        for t in found:
            cells = part.filter(pl.col(f"test_by_tier_{t}_n").fill_null(0) > 0)
            n = float(cells[f"test_by_tier_{t}_n"].sum()) if cells.height else 0.0
            m = {k: cells[f"test_by_tier_{t}_{k}"].mean() if cells.height else None for k in ("precision", "recall", "f1")}
            lines.append(f"| {t} | {n:.0f} | {n / total if total else 0:.1%} | "
                         + " | ".join("–" if v is None else f"{v:.3f}" for v in m.values()) + " |")
        lines.append("")
    return "\n".join(lines)


def ablation_figure(runs: pl.DataFrame, param: str, xlabel: str, title: str, kind: str = "line"):
    """Figs. 3/4: test F1 against an evidence knob, one series per LLM (HGT in the paper)."""
    df = runs.filter(pl.col("tag.method") == "hygrail").group_by("tag.llm", f"param.{param}").agg(pl.col("test_f1").mean())
    fig, ax = plt.subplots(figsize=(5, 3.5))
    groups = sorted(df[f"param.{param}"].unique().to_list())  # one x axis for every series
    width = 0.8 / max(1, df["tag.llm"].n_unique())
    for i, (llm,) in enumerate(sorted(df.select("tag.llm").unique().iter_rows())):
        part = df.filter(pl.col("tag.llm") == llm).sort(f"param.{param}")
        xs, ys = part[f"param.{param}"].to_list(), part["test_f1"].to_list()
        if kind == "line":
            ax.plot([float(x) for x in xs], ys, marker="o", label=llm)
        else:
            ax.bar([groups.index(x) + i * width for x in xs], ys, width=width, label=llm)
    if kind != "line":
        ax.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, groups)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test F1")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def purity_figure(runs: pl.DataFrame):
    """F1 against LLM call rate across routing purities (m, n): one series per LLM (seeds averaged)."""
    df = runs.filter(pl.col("tag.method") == "hygrail").group_by("tag.llm", "param.routing.m", "param.routing.n").agg(
        pl.col("test_f1").mean(), pl.col("test_call_rate").mean()
    )
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for (llm,) in sorted(df.select("tag.llm").unique().iter_rows()):
        part = df.filter(pl.col("tag.llm") == llm)
        ax.scatter(part["test_call_rate"].to_numpy(), part["test_f1"].to_numpy(), label=llm)
        for r in part.iter_rows(named=True):
            ax.annotate(f"m={r['param.routing.m']}, n={r['param.routing.n']}", (r["test_call_rate"], r["test_f1"]), fontsize=6)
    ax.set_xlabel("test LLM call rate")
    ax.set_ylabel("test F1")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def tables(runs: pl.DataFrame, args) -> None:
    runs = one_run_per_cell(runs, args.latest)
    md2, t2 = table2(runs, args.pool)
    md3, t3 = table3(runs, args.pool)
    per_rel = [f"## {rel}\n\n{table2(runs.filter(pl.col('tag.relation') == rel), args.pool)[0]}"
               for rel in sorted(runs["tag.relation"].unique())]
    (args.out / "table2.md").write_text(f"# Table 2 ({args.pool} over relations)\n\n{md2}\n\n# Per relation\n\n" + "\n".join(per_rel))
    t2.write_csv(args.out / "table2.csv")
    (args.out / "table3.md").write_text(f"# Table 3 ({args.pool} over relations)\n\n{md3}\n")
    t3.write_csv(args.out / "table3.csv")
    md_rank, t_rank = ranking_table(runs)
    per_rel_rank = [f"## {rel}\n\n{ranking_table(runs.filter(pl.col('tag.relation') == rel))[0]}"
                    for rel in sorted(runs["tag.relation"].unique())]
    (args.out / "ranking.md").write_text(f"# Ranking quality (test; macro over relations)\n\n{md_rank}\n\n# Per relation\n\n"
                                         + "\n\n".join(per_rel_rank) + "\n")
    t_rank.write_csv(args.out / "ranking.csv")
    (args.out / "runs.md").write_text(runs_table(runs) + "\n")
    attr = attribution_table(runs)
    (args.out / "attribution.md").write_text(f"# Decision attribution (test)\n\n{attr}\n")
    print("Runs (test split)\n", runs_table(runs), "\nTable 2\n", md2, "\nTable 3\n", md3, sep="\n")
    if md_rank:
        print("\nRanking quality (test AUC, AP)\n", md_rank, sep="\n")
    if attr and runs.filter(pl.col("tag.method") == "hygrail").height <= 8:  # a sweep's worth goes to the file only
        print("\nDecision attribution (test): which region changed which decisions against GNN-only\n")
        print(attr)


def strategies(runs: pl.DataFrame, args) -> None:
    runs = one_run_per_cell(runs, args.latest)
    md, df = strategies_table(runs)
    tiers = tiers_table(runs)
    text = f"# Evidence strategies (test; macro over relations)\n\n{md}\n" + (f"\n# Per evidence tier\n\n{tiers}" if tiers else "")
    (args.out / "strategies.md").write_text(text)
    df.write_csv(args.out / "strategies.csv")
    print(text)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m hygrail.report", description=__doc__.splitlines()[0])
    outputs = Path(os.environ.get("HYGRAIL_OUTPUTS", "outputs"))  # where the sweep writes (conf/config.yaml)
    ap.add_argument("--uri", default=f"sqlite:///{(outputs / 'mlflow.db').resolve()}")
    ap.add_argument("--experiment", action="append",
                    help="MLflow experiment(s) for Tables 2-3 (default main_table; none with --figures alone)")
    ap.add_argument("--pool", default="macro", choices=["macro", "micro"])
    ap.add_argument("--latest", action="store_true", help="several runs of one cell: keep the newest (default: stop)")
    ap.add_argument("--out", type=Path, default=outputs / "report")
    ap.add_argument("--figures", action="store_true", help="write the ablation figures from their experiments")
    ap.add_argument("--strategies", action="store_true",
                    help="write the evidence-strategies table instead of Tables 2-3 (default experiment evidence_strategies)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.strategies:
        strategies(load_runs(args.uri, args.experiment or ["evidence_strategies"]), args)
    elif args.experiment or not args.figures:
        tables(load_runs(args.uri, args.experiment or ["main_table"]), args)
    if args.figures:
        for exp, param, xlabel, fname, kind in (
            ("ablation_budget", "evidence.budget", "evidence budget (x default)", "fig3_budget.png", "line"),
            ("ablation_sides", "evidence.sides", "endpoint evidence", "fig4_sides.png", "bar"),
        ):
            try:
                ablation_figure(load_runs(args.uri, [exp]), param, xlabel, exp, kind).savefig(args.out / fname, dpi=130)
            except SystemExit as e:
                print(f"skipped {fname}: {e}")
        try:
            purity_figure(load_runs(args.uri, ["ablation_purity"])).savefig(args.out / "f1_vs_call_rate.png", dpi=130)
        except SystemExit as e:
            print(f"skipped f1_vs_call_rate.png: {e}")
    print(f"\nwrote {args.out}/")


if __name__ == "__main__":
    main()
