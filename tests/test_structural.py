"""Structural baselines (hygrail/baselines/structural.py): hand-computed PA, CN, AA, 3-paths and L3
on a hand-built KG, the 3-path count against a dense A Aᵀ A, the monotone map to probabilities and
the degree prior fit on validation; test/val AUC and AP from a real Hydra multirun in a SQLite
MLflow store, and the report's ranking table from it; the cell's val_ap over a training curve."""

import math
import subprocess
import sys

import mlflow
import numpy as np
import polars as pl
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import average_precision_score, roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from conftest import ROOT, named_kg
from hygrail.baselines import structural
from hygrail.baselines.structural import (adamic_adar, common_neighbours, degree_features, paths3,
                                          preferential_attachment, structural_scores)
from hygrail.descriptors import descriptors
from hygrail.data.split import Split
from hygrail.kg import DataError, Relation, Schema
from hygrail.thresholds import max_f1
from test_tsh import _planted_split

XY = Relation("xy", "X", "Y")
SCHEMA = Schema(("X", "Y", "Z"), {"xy": XY})
# Relation X-Y: u0-y0, u1-y0, u1-y1, u2-y1, u2-y2, u3-y0, u3-y1; other edges through z0, z1.
NODES = [("u0", "X"), ("u1", "X"), ("u2", "X"), ("u3", "X"), ("y0", "Y"), ("y1", "Y"), ("y2", "Y"), ("z0", "Z"), ("z1", "Z")]
U0, U1, U2, U3, Y0, Y1, Y2, Z0, Z1 = range(9)
EDGES = [("u0", "y0", 1), ("u1", "y0", 1), ("u1", "y1", 1), ("u2", "y1", 1), ("u2", "y2", 1), ("u3", "y0", 1),
         ("u3", "y1", 1), ("u0", "z0", 1), ("y1", "z0", 1), ("z0", "z1", 1), ("u0", "z1", 1), ("y2", "z1", 1), ("y1", "z1", 1)]
# degrees, all edges: u0 3, u1 2, u2 2, u3 2, y0 3, y1 5, y2 2, z0 3, z1 4; in the relation: u0 1, u1-u3 2, y0 3, y1 3, y2 1
SRC, DST = np.array([U0, U0, U1, U2]), np.array([Y1, Y2, Y2, Y0])


@pytest.fixture
def kg():
    return named_kg(SCHEMA, NODES, EDGES)


def test_heuristics_match_hand_computed_values(kg):
    assert preferential_attachment(kg, SRC, DST).tolist() == [3 * 5, 3 * 2, 2 * 2, 2 * 3]
    # N(u0) = {y0, z0, z1}, N(y1) = {u1, u2, u3, z0, z1}: z0 (degree 3) and z1 (degree 4) in common
    assert common_neighbours(kg, SRC, DST).tolist() == [2, 1, 0, 0]
    np.testing.assert_allclose(adamic_adar(kg, SRC, DST), [1 / math.log(3) + 1 / math.log(4), 1 / math.log(4), 0, 0])
    # u0-y0-u1-y1 and u0-y0-u3-y1; none from u0 to y2; u1-y1-u2-y2; u2-y1-u1-y0 and u2-y1-u3-y0
    assert paths3(kg, XY, SRC, DST).tolist() == [2, 0, 1, 2]
    # L3: each path over sqrt(relation degrees of its inner nodes): y0 3 and u1, u3 2; y1 3 and u2 2
    np.testing.assert_allclose(paths3(kg, XY, SRC, DST, normalise=True), [2 / math.sqrt(6), 0, 1 / math.sqrt(6), 2 / math.sqrt(6)])
    assert degree_features(kg, XY, SRC, DST).tolist() == [[1, 3, 3, 5], [1, 1, 3, 2], [2, 1, 2, 2], [2, 3, 2, 3]]
    # cn, aa and pa are TSH's descriptors of those names
    d = descriptors(kg, SRC, DST)
    for name, f in (("common_neighbours", common_neighbours), ("adamic_adar", adamic_adar),
                    ("preferential_attachment", preferential_attachment)):
        np.testing.assert_allclose(f(kg, SRC, DST), d[name].to_numpy())


def test_three_paths_equal_a_at_a_computed_densely(monkeypatch):
    rng = np.random.default_rng(3)
    nodes = [(f"x{i}", "X") for i in range(12)] + [(f"y{i}", "Y") for i in range(9)] + [(f"z{i}", "Z") for i in range(4)]
    pairs = [(f"x{i}", f"y{j}") for i in range(12) for j in range(9) if rng.random() < 0.3]
    other = [(f"x{i}", f"z{j}") for i in range(12) for j in range(4) if rng.random() < 0.3]  # ignored by paths3
    kg = named_kg(SCHEMA, nodes, [(a, b, 1) for a, b in pairs + other])
    a = np.zeros((12, 9))
    for x, y in pairs:
        a[int(x[1:]), int(y[1:])] = 1
    src, dst = np.repeat(np.arange(12), 9), np.tile(np.arange(9), 12) + 12
    monkeypatch.setattr(structural, "CHUNK", 7)  # several chunks, one of them partial
    np.testing.assert_array_equal(paths3(kg, XY, src, dst), (a @ a.T @ a).ravel())
    w_x, w_y = (np.divide(1, np.sqrt(d), out=np.zeros_like(d), where=d > 0) for d in (a.sum(1), a.sum(0)))
    l3 = a @ np.diag(w_y) @ a.T @ np.diag(w_x) @ a
    np.testing.assert_allclose(paths3(kg, XY, src, dst, normalise=True), l3.ravel())


def test_probabilities_keep_the_heuristics_ranking_and_come_from_validation():
    split = _planted_split()
    test = split.part("test")
    y_test = test["label"].to_numpy()
    raw = common_neighbours(split.train_graph, test["src"].to_numpy(), test["dst"].to_numpy())
    res = structural_scores(split, {"heuristic": "cn"})
    assert ((res.test >= 0) & (res.test <= 1)).all() and res.weights["slope"] > 0
    assert roc_auc_score(y_test, res.test) == roc_auc_score(y_test, raw) > 0.7  # a monotone map: the same ranking
    assert average_precision_score(y_test, res.test) == average_precision_score(y_test, raw)
    half = structural_scores(split, {"heuristic": "cn"}, "half_max_f1")  # needs probabilities: it has them
    assert half.threshold == max_f1(half.val, split.part("val")["label"].to_numpy())[0] / 2

    # Validation labels flipped: common neighbours now rank validation positives lower. The map may
    # not turn the ranking round: every pair gets about the validation positive share, and the test
    # ranking is still the heuristic's.
    flipped = split.pairs.with_columns(
        pl.when(pl.col("split") == "val").then(1 - pl.col("label")).otherwise(pl.col("label")).alias("label"))
    anti = structural_scores(Split(split.relation, flipped, split.train_graph), {"heuristic": "cn"})
    share = 1 - split.part("val")["label"].mean()
    assert anti.weights["slope"] == structural.SLOPE_FLOOR
    assert np.abs(np.concatenate([anti.val, anti.test]) - share).max() < 1e-3
    assert roc_auc_score(y_test, anti.test) == roc_auc_score(y_test, raw)


def test_degree_prior_is_a_logistic_regression_on_log_degrees_fit_on_validation():
    split = _planted_split()
    val, test = split.part("val"), split.part("test")
    g, rel = split.train_graph, split.train_graph.relation_edges(split.relation)
    rel_deg = np.bincount(np.concatenate([rel["src"].to_numpy(), rel["dst"].to_numpy()]), minlength=g.num_nodes)

    def x(part):
        s, d = part["src"].to_numpy(), part["dst"].to_numpy()
        return np.log1p(np.column_stack([rel_deg[s], rel_deg[d], g.degree[s], g.degree[d]]))

    ref = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=5000)).fit(x(val), val["label"].to_numpy())
    res = structural_scores(split, {"heuristic": "degree"})
    np.testing.assert_allclose(res.test, ref.predict_proba(x(test))[:, 1])
    assert list(res.weights) == [*structural.DEGREE_FEATURES, "intercept"]


def test_bad_options_and_one_class_validation_are_one_line_errors():
    split = _planted_split()
    with pytest.raises(DataError, match=r"method.heuristic='katz': expected one of degree, pa, cn, aa, paths3"):
        structural_scores(split, {"heuristic": "katz"})
    no_pos = split.pairs.with_columns(
        pl.when(pl.col("split") == "val").then(0).otherwise(pl.col("label")).cast(pl.Int8).alias("label"))
    with pytest.raises(DataError, match="validation positives"):
        structural_scores(Split(split.relation, no_pos, split.train_graph), {"heuristic": "pa"})


def test_thresholded_score_models_log_auc_and_ap_under_their_names():
    from hygrail.pipeline import _method_metrics
    from hygrail.stages import thresholded

    split = _planted_split()
    rng = np.random.default_rng(0)
    y_val, y_test = split.part("val")["label"].to_numpy(), split.part("test")["label"].to_numpy()
    s_val, s_test = rng.random(len(y_val)) * 0.5 + 0.5 * y_val, rng.random(len(y_test))
    metrics, _ = thresholded(split.train_graph, split, s_val, s_test, 0.5, "gnn_")
    assert metrics["gnn_test_auc"] == roc_auc_score(y_test, s_test) and metrics["gnn_val_ap"] == average_precision_score(y_val, s_val)
    own = _method_metrics(metrics, "gnn_")
    assert (own["test_auc"], own["test_ap"], own["val_auc"]) == (
        metrics["gnn_test_auc"], metrics["gnn_test_ap"], metrics["gnn_val_auc"]) and own["val_auc"] > 0.9


def test_a_cells_val_ap_is_not_hidden_by_the_training_curve(tmp_path):
    """The triage training logs val_ap per epoch into the cell's run; MLflow shows a metric at its
    highest step, so the cell's own val_ap must be logged at or after the curve's last step."""
    from hydra import compose, initialize_config_dir

    from conftest import CONF
    from hygrail import tracking
    from hygrail.pipeline import CellResult

    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["method=pa", f"paths.outputs={tmp_path}", "tracking.experiment=curve"])
    predictions = pl.DataFrame({"split": ["val", "val"], "label": [0, 1], "score": [0.2, 0.8]})
    with tracking.cell_run(cfg, "t") as cell:
        with tracking.store(cfg.tracking) as ml:
            for step, ap in enumerate((0.1, 0.2, 0.3)):
                ml.log_metric("val_ap", ap, step=step)
        cell.log_result(CellResult({"val_ap": 0.9, "test_auc": 0.7}, predictions))
    mlflow.set_tracking_uri(cfg.tracking.uri)
    assert mlflow.get_run(cell.run_id).data.metrics == {"val_ap": 0.9, "test_auc": 0.7}


def test_structural_cells_log_auc_and_ap_through_a_real_sweep_and_reach_the_report(tmp_path):
    from hydra import compose, initialize_config_dir

    from conftest import CONF
    from hygrail.stages import build_split
    from hygrail.report import main as report_main

    overrides = ["data.scale=0.5", "relation=chm_apl", f"paths.outputs={tmp_path}", "tracking.experiment=structural_test"]
    cmd = [sys.executable, "-m", "hygrail.sweep", "-m", "method=pa,cn", *overrides]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "chm_apl PA: method P/R/F1" in proc.stdout and "chm_apl CN: method P/R/F1" in proc.stdout
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs([mlflow.get_experiment_by_name("structural_test").experiment_id], output_format="list")
    by_label = {r.data.tags["method_label"]: r for r in runs}
    assert set(by_label) == {"PA", "CN"} and {r.info.status for r in runs} == {"FINISHED"}
    for run in runs:
        m = run.data.metrics
        pred = pl.read_parquet(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="predictions.parquet"))
        for part in ("val", "test"):
            p = pred.filter(pl.col("split") == part)
            assert m[f"{part}_auc"] == pytest.approx(roc_auc_score(p["label"], p["score"]), abs=1e-12)
            assert m[f"{part}_ap"] == pytest.approx(average_precision_score(p["label"], p["score"]), abs=1e-12)
        assert m["test_auc"] == m["structural_test_auc"] and m["test_call_rate"] == 0
    # ... and they are the heuristics' own: the map to probabilities kept each ranking
    with initialize_config_dir(str(CONF), version_base="1.3"):
        _, split = build_split(compose("config", overrides=overrides))
    test = split.part("test")
    for label, f in (("PA", preferential_attachment), ("CN", common_neighbours)):
        raw = f(split.train_graph, test["src"].to_numpy(), test["dst"].to_numpy())
        assert by_label[label].data.metrics["test_auc"] == pytest.approx(roc_auc_score(test["label"], raw), abs=1e-12)
    pa, cn = by_label["PA"].data.metrics, by_label["CN"].data.metrics
    report_main(["--uri", f"sqlite:///{tmp_path}/mlflow.db", "--experiment", "structural_test", "--out", str(tmp_path / "report")])
    ranking = (tmp_path / "report" / "ranking.md").read_text()
    assert "| Method | GNN backbone | AUC | AP | ΔAUC vs PA | ΔAP vs PA |" in ranking
    assert f"| PA | – | {pa['test_auc']:.3f} | {pa['test_ap']:.3f} | – | – |" in ranking
    assert (f"| CN | – | {cn['test_auc']:.3f} | {cn['test_ap']:.3f} | {cn['test_auc'] - pa['test_auc']:.3f} | "
            f"{cn['test_ap'] - pa['test_ap']:.3f} |") in ranking
    table2 = (tmp_path / "report" / "table2.md").read_text()
    assert "**Structural baselines**" in table2
    assert f"| PA | {pa['test_recall']:.3f} | {pa['test_f1']:.3f} |" in table2
