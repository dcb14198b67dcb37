"""GNN triage (paper §4 "GNN backbones", App. B.1): graph inputs, the three backbones on a planted
graph, determinism, and the score cache (hit trains nothing, changed hyperparameter misses,
crash mid-write leaves nothing)."""

import math

import lightning as L
import numpy as np
import polars as pl
import pytest
import torch
from sklearn.metrics import roc_auc_score

from hygrail.data.split import temporal_split
from hygrail.kg import KG, Relation, Schema
from hygrail.triage import train
from hygrail.triage.backbones import HGTNet
from hygrail.triage.features import (
    drop_target_edges,
    edge_weights,
    hetero_graph,
    pair_features,
    target_edge_positions,
)
from hygrail.triage.routing import max_f1
from hygrail.triage.train import load_scorer, triage_scores

LOG2 = math.log(2)


# -- a six-node KG whose features are computed by hand ---------------------------------------------
@pytest.fixture()
def tiny_kg():
    schema = Schema(("A", "B", "C"), {"ab": Relation("ab", "A", "B")})
    nodes = pl.DataFrame({"name": ["a0", "a1", "b0", "b1", "c0", "c1"], "type": ["A", "A", "B", "B", "C", "C"]})
    # log1p(count) of the A-C edges is log2 * (1, 2, 3): min-max weights 0, 0.5, 1.
    edges = pl.DataFrame(
        {
            "u": [0, 0, 0, 1, 2, 3],
            "v": [2, 4, 5, 4, 4, 4],
            "type": ["A-B", "A-C", "A-C", "A-C", "B-C", "B-C"],
            "count": [2, 1, 3, 7, 5, 5],
            "year": [2000] * 6,
        }
    )
    return KG(schema, nodes, edges)


def test_edge_weights_minmax_per_type(tiny_kg):
    # A-B has one edge and B-C one distinct count: no spread, weight 1.
    np.testing.assert_allclose(edge_weights(tiny_kg), [1, 0, 0.5, 1, 1, 1])


def test_hetero_graph_has_both_directions(tiny_kg):
    g = hetero_graph(tiny_kg)
    assert set(g.edge_types) == {
        ("A", "A-B", "B"), ("B", "rev_A-B", "A"), ("A", "A-C", "C"),
        ("C", "rev_A-C", "A"), ("B", "B-C", "C"), ("C", "rev_B-C", "B"),
    }
    assert g.local_index.tolist() == [0, 1, 0, 1, 0, 1]
    fwd = g["A", "A-C", "C"]
    triples = {(s, d, w) for s, d, w in zip(*fwd.edge_index.tolist(), fwd.edge_weight.tolist())}
    assert triples == {(0, 0, 0.0), (0, 1, 0.5), (1, 0, 1.0)}  # (a0,c0), (a0,c1), (a1,c0)
    assert g["C", "rev_A-C", "A"].edge_index.tolist() == fwd.edge_index.flip(0).tolist()


def test_same_type_edges_are_one_relation_with_both_directions():
    schema = Schema(("A",), {})
    kg = KG(schema, pl.DataFrame({"name": ["x", "y"], "type": ["A", "A"]}),
            pl.DataFrame({"u": [0], "v": [1], "type": ["A-A"], "count": [3], "year": [2000]}))
    g = hetero_graph(kg)
    assert g.edge_types == [("A", "A-A", "A")]
    assert g["A", "A-A", "A"].edge_index.tolist() == [[0, 1], [1, 0]]


def test_pair_features_hand_computed(tiny_kg):
    # (a0,b0) is an edge: it is left out of the degrees and the Jaccard union.
    f = pair_features(tiny_kg, np.array([0, 1, 1]), np.array([2, 3, 2]))
    aa = 1 / math.log(4)  # the common neighbour c0 has degree 4
    expected = [
        [math.log1p(0.5), LOG2, 0.0, LOG2, 1 / 2, aa],  # w(a0,c0) = 0 kills the two-hop signal
        [LOG2, LOG2, 1.0, LOG2, 1.0, aa],
        [LOG2, math.log1p(2.0), 1.0, LOG2, 1 / 2, aa],
    ]
    np.testing.assert_allclose(f, expected, rtol=1e-6)


def test_target_edges_found_and_hidden_in_both_directions(tiny_kg):
    g = hetero_graph(tiny_kg)
    pos = target_edge_positions(g, "A", "B", np.array([0, 1]), np.array([2, 3]))
    assert pos.tolist() == [0, -1]
    # a relation written against the canonical order finds the same edge
    assert target_edge_positions(g, "B", "A", np.array([2]), np.array([0])).tolist() == [0]
    h = drop_target_edges(g, "A", "B", pos[pos >= 0])
    assert h["A", "A-B", "B"].edge_index.shape == (2, 0) and h["B", "rev_A-B", "A"].edge_index.shape == (2, 0)
    assert g["A", "A-B", "B"].edge_index.shape == (2, 1)  # the original is untouched
    assert h["A", "A-C", "C"].edge_index is g["A", "A-C", "C"].edge_index


# -- planted graph: communities decide the hypothesis links ----------------------------------------
def planted_kg(seed=0, sizes=(240, 160, 160), k=8, q=0.25, p=0.3, noise=0.005) -> KG:
    """CHM, APL, PRO nodes in k communities; CHM-PRO and APL-PRO edges mostly inside a community
    reveal it, and CHM-APL pairs (the hypotheses) are linked with probability q inside it."""
    rng = np.random.default_rng(seed)
    schema = Schema(("CHM", "APL", "PRO"), {"chm_apl": Relation("chm_apl", "CHM", "APL")})
    types = np.repeat(schema.node_types, sizes)
    ids = {t: np.flatnonzero(types == t) for t in schema.node_types}
    community = rng.integers(0, k, len(types))
    us, vs, ets = [], [], []
    for a, b, prob in (("CHM", "APL", q), ("CHM", "PRO", p), ("APL", "PRO", p)):
        same = community[ids[a]][:, None] == community[ids[b]][None, :]
        i, j = np.nonzero(rng.random(same.shape) < np.where(same, prob, noise))
        us.append(ids[a][i])
        vs.append(ids[b][j])
        ets.append([f"{a}-{b}"] * len(i))
    u = np.concatenate(us)
    edges = pl.DataFrame(
        {"u": u, "v": np.concatenate(vs), "type": np.concatenate(ets),
         "count": rng.integers(1, 100, len(u)), "year": rng.integers(2000, 2020, len(u))}
    )
    nodes = pl.DataFrame({"name": [f"{t}{i}" for i, t in enumerate(types)], "type": types})
    return KG(schema, nodes, edges)


@pytest.fixture(scope="module")
def planted_split():
    kg = planted_kg()
    return temporal_split(kg, kg.schema.relations["chm_apl"], neg_ratio=5)


# App. B.1 architectures; a larger step (lr 1e-2) so that 40 full-batch epochs suffice here.
FAST = {
    "heteroconv": {"name": "heteroconv", "hidden": 64, "lr": 1e-2},
    "hgt": {"name": "hgt", "hidden": 64, "heads": 4, "lr": 1e-2},
    "rgcn": {"name": "rgcn", "hidden": 96, "bases": 8, "lr": 1e-2, "weight_decay": 1e-5},
}


@pytest.mark.parametrize("name", FAST)
def test_backbone_learns_planted_signal(planted_split, name):
    run = train.fit(planted_split, FAST[name] | {"epochs": 40, "val_every": 10}, seed=42)
    val, test = planted_split.part("val"), planted_split.part("test")
    assert run.scores["val"].shape == (val.height,) and run.scores["test"].shape == (test.height,)
    assert ((run.scores["val"] >= 0) & (run.scores["val"] <= 1)).all()
    assert roc_auc_score(val["label"], run.scores["val"]) > 0.75
    assert roc_auc_score(test["label"], run.scores["test"]) > 0.75
    # the kept weights are those of the best validated epoch
    assert max_f1(run.scores["val"], val["label"].to_numpy())[0] == pytest.approx(run.module.best_f1)
    assert run.best_epoch in (10, 20, 30, 40)


@pytest.mark.parametrize("name", FAST)
def test_fit_is_deterministic(planted_split, name):
    cfg = FAST[name] | {"epochs": 4, "val_every": 2, "disjoint_train_ratio": 0.5}  # dropout and masks draw randomness
    a, b = train.fit(planted_split, cfg, seed=7), train.fit(planted_split, cfg, seed=7)
    np.testing.assert_array_equal(a.scores["val"], b.scores["val"])
    np.testing.assert_array_equal(a.scores["test"], b.scores["test"])
    c = train.fit(planted_split, cfg, seed=8)
    assert not np.array_equal(a.scores["val"], c.scores["val"])
    assert not torch.are_deterministic_algorithms_enabled()  # fit leaves the process as it found it


@pytest.mark.parametrize("name", FAST)
def test_scorer_equals_the_trained_models_scores(planted_split, name):
    """Encode once + decode in chunks (what discovery runs over a candidate space) gives the scores
    of the full forward pass, for every backbone (R-GCN's pair features are computed per chunk)."""
    run = train.fit(planted_split, FAST[name] | {"epochs": 2, "val_every": 1}, seed=3)
    scorer = train.Scorer(run.module, planted_split.train_graph)
    test = planted_split.part("test")
    got = scorer(test["src"].to_numpy(), test["dst"].to_numpy(), chunk=50)
    np.testing.assert_allclose(got, run.scores["test"], rtol=1e-5, atol=1e-6)


def test_fast_hetero_linear_matches_pyg(planted_split):
    torch.manual_seed(0)
    g = hetero_graph(planted_split.train_graph)
    net = HGTNet(g, ("CHM", "APL"))
    x = {t: torch.randn(g[t].num_nodes, 64) for t in g.node_types}
    fast = net.convs[0](x, g.edge_index_dict)
    for lin in (net.convs[0].k_rel, net.convs[0].v_rel):
        lin.__class__ = lin.__class__.__mro__[1]  # back to PyG's HeteroLinear
    slow = net.convs[0](x, g.edge_index_dict)
    for t in fast:
        torch.testing.assert_close(fast[t], slow[t])


# -- cache -------------------------------------------------------------------------------------------
TINY = {"name": "heteroconv", "hidden": 16, "epochs": 3, "val_every": 1}


def test_scores_are_cached(planted_split, tmp_path, monkeypatch):
    first = triage_scores(planted_split, TINY, 42, tmp_path)
    assert not first.cache_hit and first.fit_seconds > 0 and first.checkpoint.is_file()
    assert len(first.val) == planted_split.part("val").height

    def no_training(*args, **kwargs):
        raise AssertionError("a cache hit must not train")

    monkeypatch.setattr(train, "fit", no_training)
    second = triage_scores(planted_split, dict(reversed(TINY.items())), 42, tmp_path)
    assert second.cache_hit and second.fit_seconds == 0.0 and second.key == first.key
    assert second.best_epoch == first.best_epoch and second.checkpoint == first.checkpoint
    np.testing.assert_array_equal(second.val, first.val)
    np.testing.assert_array_equal(second.test, first.test)

    # the stored checkpoint scores new pairs: re-scoring the val pairs gives the val scores,
    # whatever the chunk size (encode once, decode per chunk)
    val = planted_split.part("val")
    scorer = load_scorer(planted_split, TINY, 42, tmp_path)
    for chunk in (7, 1 << 16):
        again = scorer(val["src"].to_numpy(), val["dst"].to_numpy(), chunk=chunk)
        np.testing.assert_allclose(again, first.val, rtol=1e-6, atol=1e-7)

    monkeypatch.undo()
    for changed in (TINY | {"hidden": 32}, TINY | {"lr": 2e-3}):
        other = triage_scores(planted_split, changed, 42, tmp_path)
        assert not other.cache_hit and other.key != first.key
    assert not triage_scores(planted_split, TINY, 43, tmp_path).cache_hit  # the seed is part of the key


def test_crash_while_writing_leaves_no_entry(planted_split, tmp_path, monkeypatch):
    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # stands in for a kill after the scores file was written

    monkeypatch.setattr(L.Trainer, "save_checkpoint", killed)
    with pytest.raises(KeyboardInterrupt):
        triage_scores(planted_split, TINY, 42, tmp_path)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []
    monkeypatch.undo()
    again = triage_scores(planted_split, TINY, 42, tmp_path)
    assert not again.cache_hit and again.checkpoint.is_file()


def test_unknown_backbone_is_a_one_line_data_error(planted_split):
    from hygrail.kg import DataError

    with pytest.raises(DataError, match="backbone.name='gat'"):
        triage_scores(planted_split, {"name": "gat", "epochs": 1, "val_every": 1}, 42, None)
    with pytest.raises(DataError, match="bad model option"):
        triage_scores(planted_split, TINY | {"heads": 4}, 42, None)
