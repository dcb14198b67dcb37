"""The Science4Cast-style trees (hygrail/baselines/transitions.py): the features' values on a
hand-built graph (3-paths, growth, ontology neighbourhood, compatibility), the block and pair forms
agreeing, the coded predictor equal to sklearn's own scores, the fit reading nothing after its
cutoff, and a triage ``method=gbdt`` cell through a real Hydra run logging AUC and AP."""

import math
from types import SimpleNamespace

import mlflow
import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp
from sklearn.metrics import average_precision_score, roc_auc_score

from hygrail.baselines import transitions as tr
from hygrail.baselines.transitions import PairFeatures, TransitionsGBDT, gbdt, pair_features, transitions
from hygrail.kg import KG, DataError, Relation, Schema

XY = Relation("xy", "X", "Y")
SCHEMA = Schema(("X", "Y", "E"), {"xy": XY}, static=("Y-Y", "X-E", "Y-E"))
X0, X1, X2, X3, Y0, Y1, Y2, Y3, Y4, Y5, LI, FE, O, CO = range(14)
NAMES = ["x0", "x1", "x2", "x3", "y0", "y1", "y2", "y3", "y4", "y5", "Li", "Fe", "O", "Co"]
TYPES = ["X"] * 4 + ["Y"] * 6 + ["E"] * 4
# is_a: y1, y2 under y0; y3, y4 under y1; y5 under y3
IS_A = [(Y1, Y0), (Y2, Y0), (Y3, Y1), (Y4, Y1), (Y5, Y3)]
# the relation, with years: x0 {y2, y3}, x1 {y2, y4}, x2 {y4}, x3 {y2, y4}
REL = [(X0, Y2, 2000), (X0, Y3, 2001), (X1, Y2, 2000), (X1, Y4, 2001), (X2, Y4, 1999), (X3, Y2, 1998), (X3, Y4, 1998)]
# elements (static): x0 {Li, Fe, O}, y4 {Li, O}, y5 {Li, Co}
ELEMENTS = [(X0, LI), (X0, FE), (X0, O), (Y4, LI), (Y4, O), (Y5, LI), (Y5, CO)]
COMPATIBLE = {"compatible": {"via": "E", "ignore": ["O"]}}


def hand_kg() -> KG:
    rows = [(a, b, "X-Y", y) for a, b, y in REL] + [(a, b, "Y-Y", -1) for a, b in IS_A] + \
           [(a, b, SCHEMA.edge_type(TYPES[a], TYPES[b]), -1) for a, b in ELEMENTS]
    edges = pl.DataFrame({"u": [r[0] for r in rows], "v": [r[1] for r in rows], "type": [r[2] for r in rows],
                          "count": [1] * len(rows), "year": [r[3] for r in rows]})
    closure = {Y1: [Y0], Y2: [Y0], Y3: [Y1, Y0], Y4: [Y1, Y0], Y5: [Y3, Y1, Y0]}
    i, j = zip(*[(a, b) for a, bs in closure.items() for b in bs])
    anc = sp.csr_matrix((np.ones(len(i), bool), (i, j)), shape=(14, 14))
    return KG(SCHEMA, pl.DataFrame({"name": NAMES, "type": TYPES}), edges, ancestors=anc)


def test_features_have_the_hand_computed_values():
    kg = hand_kg()
    space = SimpleNamespace(relation=XY, dst=np.array([Y0, Y1, Y2, Y3, Y4, Y5]))
    x = pair_features(kg, space, np.array([X0, X2]), date=2001, options=COMPATIBLE, growth_years=1)
    feats = PairFeatures(kg, XY, 2001, COMPATIBLE, growth_years=1)
    assert x.shape == (2, 6, feats.width) and x.dtype == np.float32
    col = {n: i for i, n in enumerate(feats.names)}
    f = lambda u, v, name: float(x[[X0, X2].index(u), [Y0, Y1, Y2, Y3, Y4, Y5].index(v), col[name]])
    # degrees: x0 2 in the relation, 5 over all edges (2 + three elements); y4 3 and 6 (3 + is_a + 2 elements)
    assert f(X0, Y4, "rel_deg_src") == pytest.approx(math.log1p(2)) and f(X0, Y4, "deg_src") == pytest.approx(math.log1p(5))
    assert f(X0, Y4, "rel_deg_dst") == pytest.approx(math.log1p(3)) and f(X0, Y4, "deg_dst") == pytest.approx(math.log1p(6))
    # growth in (2000, 2001]: x0-y3 and x1-y4
    assert f(X0, Y4, "growth_src") == pytest.approx(math.log1p(1)) and f(X2, Y4, "growth_src") == 0
    assert f(X0, Y4, "growth_dst") == pytest.approx(math.log1p(1)) and f(X0, Y2, "growth_dst") == 0
    assert f(X0, Y4, "pa") == pytest.approx(math.log1p(6))
    # 3-paths x0-y2-x1-y4 and x0-y2-x3-y4; x2-y4-x1-y2 and x2-y4-x3-y2; none into y5 (no partners)
    assert f(X0, Y4, "paths3") == pytest.approx(math.log1p(2)) and f(X0, Y4, "paths3_norm") == pytest.approx(2 / math.sqrt(6))
    assert f(X2, Y2, "paths3") == pytest.approx(math.log1p(2)) and f(X2, Y2, "paths3_norm") == pytest.approx(2 / math.sqrt(3))
    assert f(X0, Y5, "paths3") == 0 and f(X0, Y5, "paths3_norm") == 0
    # x0's partners {y2, y3} around y4: sibling y3 (both under y1); around y5: parent y3, 2-hop ancestors y3 (y1 not a partner)
    onto = lambda u, v: [f(u, v, n) for n in tr.ONTOLOGY]  # parents, children, siblings, ancestors2, descendants2
    assert onto(X0, Y4) == [0, 0, 1, 0, 0]
    assert onto(X0, Y5) == [1, 0, 0, 1, 0]
    assert onto(X0, Y1) == [0, 1, 1, 0, 1]  # child y3, sibling y2 (y1 is no candidate: implied by y3)
    assert onto(X0, Y0) == [0, 1, 0, 0, 2]  # child y2; within 2 hops down: y2 and y3
    assert onto(X2, Y3) == [0, 0, 1, 0, 0]  # x2's y4 is y3's sibling
    # compatibility (via E, O ignored): y4 needs {Li} (x0 has it), y5 {Li, Co} (x0 lacks Co), y0 nothing
    assert (f(X0, Y4, "compatible_share"), f(X0, Y4, "compatible_all")) == (1, 1)
    assert (f(X0, Y5, "compatible_share"), f(X0, Y5, "compatible_all")) == (0.5, 0)
    assert (f(X0, Y0, "compatible_share"), f(X0, Y0, "compatible_all")) == (1, 1)
    assert (f(X2, Y4, "compatible_share"), f(X2, Y4, "compatible_all")) == (0, 0)
    # the pair form gives the block's numbers
    src, dst = np.repeat([X0, X2], 6), np.tile([Y0, Y1, Y2, Y3, Y4, Y5], 2)
    np.testing.assert_array_equal(feats.pairs(src, dst), x.reshape(-1, feats.width))


def test_without_a_hierarchy_or_options_the_domain_columns_are_absent_and_errors_name_the_option():
    kg = hand_kg()
    plain = Schema(("X", "Y", "E"), {"xy": XY})  # no static is_a: no ontology columns
    bare = KG(plain, kg.nodes.select("name", "type"), kg.edges)
    assert PairFeatures(bare, XY, 2001).names == tr.BASE
    assert PairFeatures(kg, XY, 2001).names == tr.BASE + tr.ONTOLOGY
    with pytest.raises(DataError, match=r"method.compatible.via='Q': no such node type"):
        PairFeatures(kg, XY, 2001, {"compatible": {"via": "Q"}}, option="method.compatible")
    with pytest.raises(DataError, match=r"gbdt: options\['cutoff'\]=None; expected the retrospective cutoff year"):
        gbdt(kg, SimpleNamespace(relation=XY, dst=np.array([Y0])), {})
    with pytest.raises(DataError, match=r"horizon=0: expected a positive integer"):
        TransitionsGBDT().fit(kg, XY, 2001, 0)
    with pytest.raises(DataError, match=r"horizon=1: 0 X-Y edges are first dated in \(2005, 2006\]"):
        TransitionsGBDT().fit(kg, XY, 2006, 1)


# -- a dated synthetic graph -------------------------------------------------------------------------
N_X, N_Y, N_Z = 150, 100, 20
AB = Relation("ab", "A", "B")
DATED = Schema(("A", "B", "Z"), {"ab": AB})


def dated_kg(last: int = 2012, seed: int = 0) -> KG:
    """Relation A-B grown year by year 2000..last with preferential attachment on both sides (so
    the degrees and 3-paths carry signal), plus A-Z and B-Z context edges."""
    rng = np.random.default_rng(seed)
    a, b = np.arange(N_X), N_X + np.arange(N_Y)
    z = N_X + N_Y + np.arange(N_Z)
    deg_a, deg_b = np.ones(N_X), np.ones(N_Y)
    seen, rows = set(), []
    for year in range(2000, last + 1):
        for _ in range(20):
            u = rng.choice(N_X, p=deg_a / deg_a.sum())
            v = rng.choice(N_Y, p=deg_b / deg_b.sum())
            if (u, v) not in seen:
                seen.add((u, v))
                rows.append((a[u], b[v], "A-B", year))
                deg_a[u] += 1
                deg_b[v] += 1
    ctx = {(int(rng.choice(np.r_[a, b])), int(rng.choice(z))) for _ in range(300)}
    rows += [(u, w, "A-Z" if u < N_X else "B-Z", int(rng.integers(2000, last + 1))) for u, w in sorted(ctx)]
    edges = pl.DataFrame({"u": [r[0] for r in rows], "v": [r[1] for r in rows], "type": [r[2] for r in rows],
                          "count": [1] * len(rows), "year": [r[3] for r in rows]})
    nodes = pl.DataFrame({"name": [f"n{i}" for i in range(N_X + N_Y + N_Z)],
                          "type": ["A"] * N_X + ["B"] * N_Y + ["Z"] * N_Z})
    return KG(DATED, nodes, edges)


def _space(kg: KG):
    from hygrail.discovery.space import CandidateSpace

    return CandidateSpace(kg, AB)


def test_labels_come_from_the_window_and_nothing_after_the_cutoff_is_read():
    full = dated_kg(2012)
    cut = full.until(2009)
    t = transitions(cut, AB, 2006, 2009, "until", seed=0)
    e = full.relation_edges(AB)
    window = e.filter((pl.col("year") > 2006) & (pl.col("year") <= 2009))
    pos = set(zip(t.src[t.label == 1].tolist(), t.dst[t.label == 1].tolist()))
    early = full.until(2006)
    known = set(np.flatnonzero(early.degree > 0).tolist())
    expected = {(s, d) for s, d in zip(window["src"].to_list(), window["dst"].to_list()) if s in known and d in known}
    assert pos == expected and len(pos) > 20
    neg_s, neg_d = t.src[t.label == 0], t.dst[t.label == 0]
    assert len(neg_s) == 50 * len(pos) and not early.has_edges(neg_s, neg_d).any()
    assert not pos & set(zip(neg_s.tolist(), neg_d.tolist()))  # a sampled candidate that became an edge is a positive
    assert len(set(zip(neg_s.tolist(), neg_d.tolist()))) == len(neg_s)

    # The model fit on the full graph (edges up to 2012) at cutoff 2009 is the one fit on the graph
    # cut at 2009: same scores on every block. Fit at 2012, the later edges change it.
    space = _space(cut)
    blocks = list(space.blocks(17))
    runs = [TransitionsGBDT(seed=3).fit(g, AB, c, 3) for g, c in ((cut, 2009), (full, 2009), (full, 2012))]
    scores = [np.concatenate([m.scorer(cut, space)(b) for b in blocks]) for m in runs]
    np.testing.assert_array_equal(scores[0], scores[1])
    assert not np.array_equal(scores[0], scores[2])
    info = runs[0].info
    assert (info.fit_start, info.positives, info.negatives) == (2006, len(pos), 50 * len(pos))
    assert info.window_val_positives > 0 and 0.5 < info.window_val_auc <= 1 and 1 <= info.trees <= tr.PARAMS["max_iter"]


def test_the_coded_predictor_returns_sklearns_scores(monkeypatch):
    cut = dated_kg(2012).until(2010)
    space = _space(cut)
    model = TransitionsGBDT(seed=1).fit(cut, AB, 2010, 2)
    feats = PairFeatures(cut, AB, 2010, {}, space.dst)
    score = model.scorer(cut, space)
    assert model.predictor.exact and len(model.predictor.keys) == 0
    for block in list(space.blocks(7)) * 2:  # the second pass reads every key back from the cache
        x = feats.block(block.src)
        np.testing.assert_array_equal(score(block), model.model.decision_function(x.reshape(-1, x.shape[-1])).reshape(x.shape[:2]))
    assert 0 < len(model.predictor.keys) < len(space.src) * len(space.dst)  # rows of equal codes scored once
    src, dst = space.pairs()
    np.testing.assert_array_equal(model.pair_scores(cut, src, dst, 2010),
                                  model.model.decision_function(feats.pairs(src, dst)))
    # the factory the per-entity evaluation lists: fit at options' cutoff and horizon, same scores
    monkeypatch.setattr(tr, "MAX_CACHE", 10)  # a full cache stops remembering, scores stay the same
    block = space.block(space.src[:9])
    np.testing.assert_array_equal(gbdt(cut, space, {"cutoff": 2010, "horizon": np.int64(2), "seed": 1})(block), score(block))


def test_the_factory_reads_compatibility_as_entities_passes_it():
    """``entities.baseline_options`` passes discover.compatible's keys at the top level."""
    kg = hand_kg()
    flat = {"via": "E", "ignore": ["O"], "cutoff": 2001, "horizon": 1}
    with pytest.raises(DataError, match=r"discover.compatible.via='Q': no such node type"):
        gbdt(kg, SimpleNamespace(relation=XY, dst=np.array([Y0])), flat | {"via": "Q"})
    # (2000, 2001] holds x0-y3 and x1-y4; y3 has only static edges by 2000, so it is not known then
    with pytest.raises(DataError, match=r"horizon=1: 1 X-Y edges are first dated in \(2000, 2001\] between nodes known"):
        gbdt(kg, SimpleNamespace(relation=XY, dst=np.array([Y0])), flat)


def test_a_gbdt_triage_cell_logs_auc_and_ap_through_hydra(tmp_path):
    """One ``method=gbdt`` cell composed by Hydra and run as ``python -m hygrail.sweep`` runs it
    (hygrail/sweep.py: its MLflow run around ``run_cell``), in this process to spare the imports."""
    from hydra import compose, initialize_config_dir

    from conftest import CONF
    from hygrail import tracking
    from hygrail.pipeline import run_cell

    overrides = ["method=gbdt", "data.scale=0.5", "relation=chm_pro", f"paths.outputs={tmp_path}",
                 "tracking.experiment=gbdt_test"]
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    with tracking.cell_run(cfg, str(tmp_path)) as cell:
        cell.log_result(run_cell(cfg))
    mlflow.set_tracking_uri(cfg.tracking.uri)
    runs = mlflow.search_runs([mlflow.get_experiment_by_name("gbdt_test").experiment_id], output_format="list")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED" and runs[0].data.tags["method"] == "gbdt"
    m = runs[0].data.metrics
    pred = pl.read_parquet(mlflow.artifacts.download_artifacts(run_id=runs[0].info.run_id, artifact_path="predictions.parquet"))
    for part in ("val", "test"):
        p = pred.filter(pl.col("split") == part)
        assert m[f"{part}_auc"] == pytest.approx(roc_auc_score(p["label"], p["score"]), abs=1e-12)
        assert m[f"{part}_ap"] == pytest.approx(average_precision_score(p["label"], p["score"]), abs=1e-12)
    assert (m["test_auc"], m["val_auc"]) == (m["gbdt_test_auc"], m["gbdt_val_auc"]) and m["test_call_rate"] == 0
    assert 0 <= m["gbdt_window_val_auc"] <= 1 and m["gbdt_window_val_positives"] > 0
    assert m["gbdt_positives"] > 0 and m["gbdt_negatives"] == 50 * m["gbdt_positives"] and m["gbdt_trees"] >= 1
    assert 0 <= m["gbdt_threshold"] <= 1
