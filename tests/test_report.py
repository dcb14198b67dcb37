"""Tables 2-3 pooling (macro over relations, micro from confusion counts, mean ± std over seeds)
and the ablation figures, on hand-made run rows shaped like hygrail.report.load_runs output."""

import polars as pl
import pytest

from hygrail.report import ablation_figure, one_run_per_cell, pool, purity_figure, table2, table3


def _run(method, label, backbone, llm, relation, seed, f1, recall, call_rate, tp, fp, fn, **params):
    row = {
        "tag.method": method, "tag.method_label": label, "tag.backbone": backbone, "tag.llm": llm,
        "tag.relation": relation, "param.seed": str(seed), "test_f1": f1, "test_recall": recall,
        "test_call_rate": call_rate, "test_tp": tp, "test_fp": fp, "test_fn": fn,
    }
    return row | {f"param.{k}": v for k, v in params.items()}


RUNS = pl.DataFrame(
    [
        _run("hygrail", "HyGRAIL-Auto", "rgcn", "qwen3_4b", "chm_apl", 42, 0.5, 0.4, 0.5, 4, 2, 6),
        _run("hygrail", "HyGRAIL-Auto", "rgcn", "qwen3_4b", "chm_pro", 42, 0.3, 0.2, 0.3, 2, 8, 8),
        _run("hygrail", "HyGRAIL-Auto", "rgcn", "qwen3_4b", "chm_apl", 43, 0.7, 0.6, 0.5, 6, 2, 4),
        _run("hygrail", "HyGRAIL-Auto", "rgcn", "qwen3_4b", "chm_pro", 43, 0.5, 0.4, 0.3, 4, 4, 6),
        _run("gnn_only", "GNN", "rgcn", "embedded", "chm_apl", 42, 0.1, 0.9, 0.0, 9, 150, 1),
        _run("tsh", "TSH", "rgcn", "embedded", "chm_apl", 42, 0.2, 0.3, 0.0, 3, 17, 7),
    ]
)


def test_macro_pool_means_relations_then_seeds():
    out = pool(RUNS.filter(pl.col("tag.method") == "hygrail"), ["tag.backbone"], "macro").to_dicts()[0]
    # seed 42: (0.5 + 0.3) / 2 = 0.4; seed 43: (0.7 + 0.5) / 2 = 0.6 -> 0.5 ± std(0.4, 0.6)
    assert out["test_f1"] == pytest.approx(0.5)
    assert out["test_f1_std"] == pytest.approx(0.1414213, rel=1e-5)
    assert out["test_call_rate"] == pytest.approx(0.4)
    assert out["seeds"] == 2 and out["relations"] == 2


def test_micro_pool_recomputes_from_counts():
    out = pool(RUNS.filter((pl.col("tag.method") == "hygrail") & (pl.col("param.seed") == "42")), ["tag.backbone"], "micro")
    row = out.to_dicts()[0]
    tp, fp, fn = 6, 10, 14
    assert row["test_recall"] == pytest.approx(tp / (tp + fn))
    assert row["test_f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn))


def test_tables_have_the_paper_rows():
    md, flat = table2(RUNS)
    assert "**GNN backbone: rgcn**" in md
    # GNN-only does not depend on the LLM column; it ran on 1 of the table's 2 relations: marked
    assert "| GNN | 0.900 (1/2) | 0.100 (1/2) |" in md
    assert "| HyGRAIL-Auto | 0.400 ± 0.141 | 0.500 ± 0.141 |" in md
    assert "| TSH | 0.300 (1/2) | 0.200 (1/2) |" in md
    assert "embedded" not in md  # GNN-only/TSH runs carry a default llm tag but used no LLM
    assert "‡" not in md  # no review budget in these runs
    assert set(flat["method"]) == {"GNN", "HyGRAIL-Auto", "TSH"}
    md3, t3 = table3(RUNS)
    assert t3.select("backbone", "test_call_rate", "reduction").to_dicts() == [
        {"backbone": "rgcn", "test_call_rate": pytest.approx(0.4), "reduction": pytest.approx(0.6)}]
    # no review budget: the reviewed share equals the call rate, so no extra column
    assert "| rgcn | 40.00% | 60.00% |" in md3 and "budget" not in md3


def test_table3_counts_each_relation_once_and_micro_weights_by_test_size():
    # Two LLM x evidence cells per (backbone, relation): routing is the GNN's, so it counts once.
    # test_call_rate is the routed share (the paper's); test_review_rate what a budget let the LLM see.
    rows = [_run("hygrail", label, "hgt", llm, rel, 42, 0.5, 0.5, rate, 1, 1, 1) | {"test_n": n, "test_review_rate": rev}
            for rel, rate, rev, n in (("chm_apl", 0.6, 0.1, 100.0), ("chm_pro", 0.2, 0.2, 300.0))
            for label, llm in (("HyGRAIL-NE", "a"), ("HyGRAIL-Auto", "b"))]
    rows.append(_run("hygrail", "HyGRAIL-LLM", "hgt", "c", "chm_apl", 42, 0.5, 0.5, 0.6, 1, 1, 1) | {"test_n": 100.0, "test_review_rate": 0.1})
    runs = pl.DataFrame(rows)
    md, t = table3(runs, "macro")
    macro = t.to_dicts()[0]
    assert (macro["test_call_rate"], macro["reduction"], macro["test_review_rate"]) == (
        pytest.approx(0.4), pytest.approx(0.6), pytest.approx(0.15))
    assert "| GNN backbone | LLM call rate | Reduction | LLM-reviewed (budget) |" in md
    assert "| hgt | 40.00% | 60.00% | 15.00% |" in md
    micro = table3(runs, "micro")[1].to_dicts()[0]
    assert micro["test_call_rate"] == pytest.approx((0.6 * 100 + 0.2 * 300) / 400)
    assert micro["test_review_rate"] == pytest.approx((0.1 * 100 + 0.2 * 300) / 400)


def test_budgeted_rows_say_how_much_of_the_band_the_llm_decided():
    hy = pl.col("tag.method") == "hygrail"
    runs = RUNS.with_columns(pl.when(hy).then(5.0).otherwise(0.0).alias("test_routed_unreviewed"),
                             pl.when(hy).then(15.0).otherwise(0.0).alias("test_reviewed"))
    md, _ = table2(runs)
    assert "| HyGRAIL-Auto‡ |" in md and "| GNN |" in md
    # 4 runs, each 15 reviewed of 20 routed
    assert "- HyGRAIL-Auto (rgcn): 60 of 80 routed test hypotheses (75.0% of the band)" in md


@pytest.mark.parametrize("methods", [m for k in range(1, 5) for m in __import__("itertools").combinations(
    ("gnn_only", "tsh", "kgfm", "hygrail"), k)])
def test_every_mix_of_methods_renders_well_formed_tables(methods):
    """A new KG's first sweep may hold GNN-only and TSH runs only, or any other mix."""
    kgfm = _run("kgfm", "KG-FM", "rgcn", "qwen3_4b", "chm_apl", 42, 0.2, 0.3, 1.0, 3, 17, 7)
    runs = pl.concat([RUNS, pl.DataFrame([kgfm])], how="diagonal").filter(pl.col("tag.method").is_in(methods))
    md, flat = table2(runs)
    blocks = [b for b in md.split("\n\n") if b.startswith("| Method")]
    assert blocks, md
    for block in blocks:
        rows = block.splitlines()
        assert rows[1] == "|---" * (rows[0].count("|") - 1) + "|"
        assert all(r.count("|") == rows[0].count("|") for r in rows), block
        assert "|  |" not in block and all(c.strip() for c in rows[0].split("|")[1:-1]), block
    if set(methods) <= {"gnn_only", "tsh"}:
        assert blocks[0].startswith("| Method | Rec. | F1 |")
    assert set(flat["method"]) == {{"gnn_only": "GNN", "tsh": "TSH", "kgfm": "KG-FM", "hygrail": "HyGRAIL-Auto"}[m] for m in methods}
    md3, _ = table3(runs)
    assert md3.startswith("| GNN backbone | LLM call rate | Reduction |")


def test_attribution_table_one_row_per_region():
    from hygrail.report import attribution_table

    attr = {f"test_attr_{r}_{k}": v for r, vals in (("auto_reject", (700, 3, -1, -2)), ("auto_accept", (20, 9, 1, 8)),
                                                     ("reviewed", (40, 0, 0, 0)), ("over_budget", (600, 0, 0, 0)))
            for k, v in zip(("n", "changed", "tp", "fp"), vals)}
    runs = pl.concat([RUNS, pl.DataFrame([RUNS.row(0, named=True) | attr])], how="diagonal").filter(
        pl.col("test_attr_reviewed_n").is_not_null())
    lines = attribution_table(runs).splitlines()
    assert len(lines) == 2 + 4
    assert "| chm_apl | rgcn | HyGRAIL-Auto | qwen3_4b | auto-accept (above b*) | 20 | 9 | +1 | +8 |" in lines
    assert "| chm_apl | rgcn | HyGRAIL-Auto | qwen3_4b | auto-reject (below a*) | 700 | 3 | -1 | -2 |" in lines
    assert attribution_table(RUNS) == ""  # runs from before attribution: nothing to show


def test_two_runs_of_one_cell_stop_the_report_naming_what_differs():
    base = _run("hygrail", "HyGRAIL-Auto", "rgcn", "qwen3_4b", "chm_apl", 42, 0.5, 0.4, 0.5, 4, 2, 6)
    runs = pl.DataFrame([
        base | {"run_id": "old", "start": 1, "param.data.name": "matkg_synthetic", "param.routing.m": "0.985"},
        base | {"run_id": "new", "start": 2, "param.data.name": "matkg", "param.routing.m": "0.985", "test_f1": 0.1},
        _run("gnn_only", "GNN", "rgcn", "qwen3_4b", "chm_apl", 42, 0.1, 0.9, 0.0, 9, 150, 1)
        | {"run_id": "g1", "start": 1, "param.data.name": "matkg_synthetic", "param.routing.m": "0.985"},
        _run("gnn_only", "GNN", "rgcn", "embedded", "chm_pro", 42, 0.1, 0.9, 0.0, 9, 150, 1)
        | {"run_id": "g2", "start": 1, "param.data.name": "matkg_synthetic", "param.routing.m": "0.985"},
    ])
    with pytest.raises(SystemExit, match=r"2 runs of HyGRAIL-Auto rgcn qwen3_4b chm_apl seed 42 differ in data.name \(runs "):
        one_run_per_cell(runs)
    kept = one_run_per_cell(runs, latest=True)
    assert kept.height == 3 and kept.filter(pl.col("tag.method") == "hygrail")["run_id"].to_list() == ["new"]
    # GNN-only runs under another llm tag are different relations here, not duplicates
    assert one_run_per_cell(runs.filter(pl.col("run_id") != "old")).height == 3


def test_ablation_figures_draw_one_series_per_llm():
    rows = [
        _run("hygrail", "HyGRAIL-Auto", "hgt", llm, "chm_apl", 42, f1, 0.5, 0.3, 1, 1, 1, **{"evidence.budget": b, "evidence.sides": s,
             "routing.m": "0.98", "routing.n": "0.5"})
        for llm in ("qwen3_4b", "qwen3_14b") for b, s, f1 in (("0.5", "left", 0.2), ("1", "both", 0.4), ("2", "right", 0.3))
    ]
    runs = pl.DataFrame(rows)
    fig = ablation_figure(runs, "evidence.budget", "budget", "Fig. 3")
    lines = fig.axes[0].get_lines()
    assert len(lines) == 2 and list(lines[0].get_xdata()) == [0.5, 1.0, 2.0] and list(lines[0].get_ydata()) == [0.2, 0.4, 0.3]
    assert len(ablation_figure(runs, "evidence.sides", "sides", "Fig. 4", kind="bar").axes[0].patches) == 6
    # one point per LLM and (m, n): the two LLMs are not averaged into one
    assert [len(c.get_offsets()) for c in purity_figure(runs).axes[0].collections] == [1, 1]


def test_bar_series_share_one_x_axis_and_kgfm_marks_only_sampled_columns():
    rows = [_run("hygrail", "HyGRAIL-Auto", "hgt", llm, "chm_apl", 42, f1, 0.5, 0.3, 1, 1, 1, **{"evidence.sides": side})
            for llm, side, f1 in (("a", "both", 0.4), ("a", "left", 0.2), ("b", "both", 0.5), ("b", "right", 0.3))]
    ax = ablation_figure(pl.DataFrame(rows), "evidence.sides", "sides", "Fig. 4", kind="bar").axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["both", "left", "right"]
    b_right = [p for p in ax.patches if p.get_height() == pytest.approx(0.3)][0]
    assert round(b_right.get_x() + b_right.get_width() / 2) == 2  # drawn at "right", not at b's 2nd slot

    kgfm = [_run("kgfm", "KG-FM", "rgcn", llm, "chm_apl", 42, 0.5, 0.4, 1.0, 4, 2, 6) | {"test_sampled": s}
            for llm, s in (("a", 1.0), ("b", 0.0))]
    md, flat = table2(pl.DataFrame(kgfm))
    assert "| KG-FM | 0.400† | 0.500† | 0.400 | 0.500 |" in md
    assert flat["sampled"].to_list() == [True, False]


def test_probability_rule_rows_are_labelled():
    from hygrail.report import runs_table

    prob = RUNS.with_columns(
        pl.when(pl.col("tag.method") == "hygrail").then(pl.lit("probability")).otherwise(pl.lit("paper"))
        .alias("param.llm.decision"))
    md, _ = table2(prob)
    assert "| HyGRAIL-Auto§ | 0.400 ± 0.141 | 0.500 ± 0.141 |" in md and "| GNN | " in md
    assert "§ decision rule: accept iff P(yes) >= γ" in md
    assert "§" not in table2(RUNS)[0]  # runs logged without the option used the paper's rule
    table = runs_table(prob).splitlines()
    assert table[0].startswith("| relation | backbone | method | LLM | decision |")
    rows = {line.split(" | ")[2]: line.split(" | ")[4] for line in table[2:]}
    assert rows == {"HyGRAIL-Auto": "probability", "GNN": "–", "TSH": "–"}
    assert {line.split(" | ")[4] for line in runs_table(RUNS).splitlines()[2:]} == {"paper", "–"}


def test_a_non_paper_threshold_rule_gets_rows_of_its_own():
    """routing.threshold=half_max_f1 runs are labelled "GNN (half_max_f1)", "TSH (half_max_f1)" (the
    run's method_label tag), so Table 2 shows them beside the paper's rows: a sweep over the rule
    is one report, not two runs of one cell that the report refuses."""
    from hydra import compose, initialize_config_dir

    from conftest import ROOT
    from hygrail.tracking import method_label

    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        labels = {(m, rule): method_label(compose("config", overrides=[f"method={m}", f"routing.threshold={rule}"]))
                  for m in ("gnn_only", "tsh", "kgfm") for rule in ("max_f1", "half_max_f1")}
        hygrail = method_label(compose("config", overrides=["method=hygrail", "evidence=none", "routing.threshold=half_max_f1"]))
    assert labels == {("gnn_only", "max_f1"): "GNN", ("gnn_only", "half_max_f1"): "GNN (half_max_f1)",
                      ("tsh", "max_f1"): "TSH", ("tsh", "half_max_f1"): "TSH (half_max_f1)",
                      ("kgfm", "max_f1"): "KG-FM", ("kgfm", "half_max_f1"): "KG-FM"}  # KG-FM has no threshold
    assert hygrail == "HyGRAIL-NE (half_max_f1)"  # its GNN decides outside the band and over a budget

    runs = pl.DataFrame([
        _run("gnn_only", "GNN (half_max_f1)", "rgcn", "embedded", "chm_apl", 42, 0.3, 0.5, 0.0, 5, 18, 5),
        _run("gnn_only", "GNN", "rgcn", "embedded", "chm_apl", 42, 0.1, 0.9, 0.0, 9, 150, 1),
        _run("tsh", "TSH", "rgcn", "embedded", "chm_apl", 42, 0.2, 0.3, 0.0, 3, 17, 7),
        _run("tsh", "TSH (half_max_f1)", "rgcn", "embedded", "chm_apl", 42, 0.4, 0.6, 0.0, 6, 11, 4),
    ])
    assert one_run_per_cell(runs).height == 4
    md, flat = table2(runs)
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| Method")]
    assert rows == ["| TSH | 0.300 | 0.200 |", "| TSH (half_max_f1) | 0.600 | 0.400 |",
                    "| GNN | 0.900 | 0.100 |", "| GNN (half_max_f1) | 0.500 | 0.300 |"]  # the paper's row first
    assert set(flat["method"]) == {"GNN", "GNN (half_max_f1)", "TSH", "TSH (half_max_f1)"}


def test_ranking_table_shows_auc_ap_and_the_paired_lift_over_pa():
    from hygrail.report import ranking_table

    def scored(method, label, relation, seed, auc, ap, heuristic=None):
        row = _run(method, label, "rgcn", "embedded", relation, seed, 0.2, 0.3, 0.0, 3, 17, 7) | {"test_auc": auc, "test_ap": ap}
        return row | ({"param.method.heuristic": heuristic} if heuristic else {})

    runs = pl.concat([RUNS.filter(pl.col("tag.method") == "hygrail"), pl.DataFrame([
        scored("structural", "PA", "chm_apl", 42, 0.6, 0.1, "pa"), scored("structural", "PA", "chm_apl", 43, 0.7, 0.2, "pa"),
        scored("structural", "CN", "chm_apl", 42, 0.8, 0.3, "cn"), scored("structural", "CN", "chm_apl", 43, 0.9, 0.5, "cn"),
        scored("gnn_only", "GNN", "chm_apl", 42, 0.75, 0.25), scored("gnn_only", "GNN", "chm_pro", 42, 0.65, 0.15),
    ])], how="diagonal")
    md, flat = ranking_table(one_run_per_cell(runs))
    rows = md.splitlines()
    assert rows[0] == "| Method | GNN backbone | AUC | AP | ΔAUC vs PA | ΔAP vs PA |"
    # mean ± std over two seeds, on 1 of the 2 relations; CN's lift is paired per relation and seed
    assert rows[2:] == ["| PA | – | 0.650 ± 0.071 (1/2) | 0.150 ± 0.071 (1/2) | – | – |",
                        "| CN | – | 0.850 ± 0.071 (1/2) | 0.400 ± 0.141 (1/2) | 0.200 ± 0.000 (1/2) | 0.250 ± 0.071 (1/2) |",
                        "| GNN | rgcn | 0.700 | 0.200 | 0.150 | 0.150 |"]  # macro over chm_apl, chm_pro; lift where PA ran
    assert set(flat["method"]) == {"PA", "CN", "GNN"}  # HyGRAIL has no score of its own
    md2, _ = table2(one_run_per_cell(runs))
    assert "**Structural baselines**" in md2 and "| CN | 0.300 ± 0.000 (1/2) | 0.200 ± 0.000 (1/2) |" in md2
    assert ranking_table(RUNS)[0] == ""  # runs from before AUC was logged
