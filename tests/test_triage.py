"""GNN triage (paper §4 "GNN backbones", App. B.1, and the *_plus options): graph inputs, link
features by hand, every backbone on a planted graph, the plus option against a shuffled-label
control, leak-free folds, determinism, the paper configs, and the score cache (hit trains nothing,
changed hyperparameter misses, crash mid-write leaves nothing)."""

import math

import lightning as L
import numpy as np
import polars as pl
import pytest
import torch
from sklearn.metrics import average_precision_score, roc_auc_score

from hygrail.data.split import Split, temporal_split
from hygrail.kg import KG, Relation, Schema
from hygrail.triage import train
from hygrail.triage.backbones import HGTNet
from hygrail.triage.features import (
    drop_target_edges,
    edge_weights,
    hetero_graph,
    link_feature_names,
    link_features,
    node_statistics,
    pair_features,
    target_edge_positions,
)
from hygrail.thresholds import max_f1
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


def test_a_graph_lacking_an_edge_type_keeps_the_models_relations_in_place(tiny_kg):
    """A model passing messages over an earlier graph (the per-entity ranker's window) that lacks one of its
    training graph's edge types: the type is kept, empty, so R-GCN's relation numbers and HeteroConv's keys hold."""
    ab = np.flatnonzero(tiny_kg.edges["type"].to_numpy() == "A-B")
    earlier = tiny_kg.without_edges(ab)
    assert "A-B" not in earlier.edge_types
    full, kept = hetero_graph(tiny_kg), hetero_graph(earlier, edge_types=tiny_kg.edge_types)
    assert kept.edge_types == full.edge_types  # same relations, same order
    assert kept["A", "A-B", "B"].edge_index.shape == (2, 0) and kept["B", "rev_A-B", "A"].edge_index.shape == (2, 0)
    assert kept["A", "A-C", "C"].edge_index.tolist() == full["A", "A-C", "C"].edge_index.tolist()
    assert hetero_graph(earlier).edge_types != full.edge_types  # what the model would have been handed before


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


def test_link_features_hand_computed(tiny_kg):
    # (a1, b1): no common neighbour; a 3-walk a1-c0-b0-... none reaches b1 (b1-c0 is an edge):
    # a1 - c0 - b1 is a 2-path (common neighbour c0), 3-walks a1-c0-a0-? no (a0-b1 is no edge).
    f = link_features(tiny_kg, np.array([1, 0]), np.array([3, 3]))
    names = link_feature_names(tiny_kg)
    got = [dict(zip(names, row)) for row in f]
    # a1 = {c0}, b1 = {c0}: one common neighbour, c0 (type C, degree 4)
    assert got[0]["common_neighbours"] == pytest.approx(LOG2)
    assert got[0]["common_via_C"] == pytest.approx(LOG2) and got[0]["common_via_A"] == 0
    assert got[0]["adamic_adar"] == pytest.approx(1 / math.log(4))
    assert got[0]["resource_allocation"] == pytest.approx(1 / 4)
    assert got[0]["jaccard"] == pytest.approx(1.0)
    # log(1+c(a1,c0)) * log(1+c(c0,b1)) = log 8 * log 6
    assert got[0]["weighted_two_hop"] == pytest.approx(math.log1p(math.log(8) * math.log(6)))
    # 3-walks a1 -> c0 -> {a0, b0, b1, a1} -> b1: via a0 no (a0-b1 no edge), via b0 no, so 0
    assert got[0]["paths_3"] == 0
    # a0 = {b0, c0, c1}, b1 = {c0}: common c0; 3-walks a0 - x - y - b1 with y = c0: x in N(a0) & N(c0) = {b0}
    assert got[1]["common_neighbours"] == pytest.approx(LOG2)
    assert got[1]["paths_3"] == pytest.approx(LOG2)
    assert got[1]["log_deg_src"] == pytest.approx(math.log(4)) and got[1]["log_deg_dst"] == pytest.approx(LOG2)
    # batching by source gives the same numbers
    np.testing.assert_allclose(link_features(tiny_kg, np.array([1, 0]), np.array([3, 3]), batch_size=1), f)


def test_node_statistics_are_standardised_graph_facts(tiny_kg):
    x = node_statistics(tiny_kg)
    assert x.shape == (6, 5 + 3)
    np.testing.assert_allclose(x.mean(0), 0, atol=1e-6)
    # column 0 is log(1+degree): c0 has the highest degree (4), a1/b1 the lowest (1)
    assert x[:, 0].argmax() == 4 and x[1, 0] == x[3, 0] == x[:, 0].min()


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


# App. B.1 architectures; a larger step (lr 1e-2) so that 40 full-batch epochs suffice here. The plus
# options as configured, without names (no sentence encoder in the fast suite), smaller.
PLUS = {"hidden": 32, "mlp_hidden": [32, 16], "folds": 4, "select_on": "ap", "lr": 1e-2, "names": None}
FAST = {
    "heteroconv": {"name": "heteroconv", "hidden": 64, "lr": 1e-2},
    "hgt": {"name": "hgt", "hidden": 64, "heads": 4, "lr": 1e-2},
    "rgcn": {"name": "rgcn", "hidden": 96, "bases": 8, "lr": 1e-2, "weight_decay": 1e-5},
    "heteroconv_plus": {"name": "heteroconv_plus"} | PLUS,
    "hgt_plus": {"name": "hgt_plus", "heads": 2} | PLUS,
    "rgcn_plus": {"name": "rgcn_plus", "bases": 4} | PLUS,
}
EPOCHS = {"heteroconv": 40, "hgt": 40, "rgcn": 40, "heteroconv_plus": 6, "hgt_plus": 6, "rgcn_plus": 6}


@pytest.mark.parametrize("name", FAST)
def test_backbone_learns_planted_signal(planted_split, name):
    every = EPOCHS[name] // (4 if EPOCHS[name] >= 20 else 3)
    run = train.fit(planted_split, FAST[name] | {"epochs": EPOCHS[name], "val_every": every}, seed=42)
    val, test = planted_split.part("val"), planted_split.part("test")
    assert run.scores["val"].shape == (val.height,) and run.scores["test"].shape == (test.height,)
    assert ((run.scores["val"] >= 0) & (run.scores["val"] <= 1)).all()
    assert roc_auc_score(val["label"], run.scores["val"]) > 0.75
    assert roc_auc_score(test["label"], run.scores["test"]) > 0.75
    # the kept weights are those of the best validated epoch
    best = max_f1(run.scores["val"], val["label"].to_numpy())[0]
    if run.module.select_on == "ap":
        best = average_precision_score(val["label"], run.scores["val"])
    assert best == pytest.approx(run.module.best_score)
    assert run.best_epoch in range(every, EPOCHS[name] + 1, every)


def test_plus_beats_a_shuffled_label_control(planted_split):
    """The same option trained with its training labels detached from the pairs (each training
    positive's destination shuffled among the positives, so the "positives" are random pairs with
    the same endpoint degrees; validation untouched) must not find the planted signal: what hgt_plus
    learns comes from the labels, not from its inputs alone."""
    cfg = FAST["hgt_plus"] | {"epochs": 6, "val_every": 1}
    real = train.fit(planted_split, cfg, seed=42)
    pairs = planted_split.pairs
    pos = ((pairs["split"] == "train") & (pairs["label"] == 1)).to_numpy()
    dst = pairs["dst"].to_numpy().copy()
    dst[pos] = np.random.default_rng(0).permutation(dst[pos])
    shuffled = Split(planted_split.relation, pairs.with_columns(pl.Series("dst", dst)), planted_split.train_graph)
    control = train.fit(shuffled, cfg, seed=42)
    y = planted_split.part("test")["label"].to_numpy()
    auc_real, auc_control = roc_auc_score(y, real.scores["test"]), roc_auc_score(y, control.scores["test"])
    assert auc_real > 0.85 and auc_real - auc_control > 0.2, (auc_real, auc_control)


def test_fold_pairs_are_leak_free(planted_split):
    """A supervised positive is never an edge of the graph it is scored on, and fresh negatives are
    never an edge nor any split's hypothesis; they differ from draw to draw."""
    torch.manual_seed(0)
    data = train.FoldPairs(planted_split, folds=3)
    hypotheses = set(zip(planted_split.pairs["src"].to_list(), planted_split.pairs["dst"].to_list()))
    first = data[0]
    for k in range(len(data)):
        b = data[k]
        pos, neg = b["label"] == 1, b["label"] == 0
        gk = data.kgs[k]
        assert not gk.has_edges(b["src"][pos].numpy(), b["dst"][pos].numpy()).any()
        assert planted_split.train_graph.has_edges(b["src"][pos].numpy(), b["dst"][pos].numpy()).all()
        assert not planted_split.train_graph.has_edges(b["src"][neg].numpy(), b["dst"][neg].numpy()).any()
        assert not hypotheses & set(zip(b["src"][neg].tolist(), b["dst"][neg].tolist()))
        assert int(neg.sum()) == data.ratio * int(pos.sum())
        # fold graph k lacks exactly fold k's positives
        assert gk.num_edges == planted_split.train_graph.num_edges - int(pos.sum())
    again = data[0]
    assert torch.equal(again["src"][again["label"] == 1], first["src"][first["label"] == 1])
    assert not torch.equal(again["dst"][again["label"] == 0], first["dst"][first["label"] == 0])


def test_paper_backbone_configs_are_appendix_b1():
    """conf/backbone/{heteroconv,hgt,rgcn}.yaml hold App. B.1's settings and nothing of the plus recipe."""
    from omegaconf import OmegaConf

    from conftest import CONF

    def load(name):
        return OmegaConf.to_container(OmegaConf.load(CONF / f"backbone/{name}.yaml"))

    common = {"lr": 1e-3, "disjoint_train_ratio": 0.0}
    assert load("heteroconv") == {"name": "heteroconv", "hidden": 64, "epochs": 100, "val_every": 10,
                                  "weight_decay": 0.0} | common  # fmt: skip
    assert load("hgt") == {"name": "hgt", "hidden": 64, "heads": 4, "epochs": 100, "val_every": 10,
                           "weight_decay": 0.0} | common  # fmt: skip
    rgcn = load("rgcn")
    assert {k: rgcn[k] for k in ("hidden", "bases", "dropout", "epochs", "val_every", "weight_decay")} == {
        "hidden": 96, "bases": 8, "dropout": [0.15, 0.10], "epochs": 120, "val_every": 20, "weight_decay": 1e-5}
    assert rgcn["lr"] == 1e-3 and rgcn["disjoint_train_ratio"] == 0.0 and len(rgcn["mlp_hidden"]) == 2
    for cfg in (load("heteroconv"), load("hgt"), rgcn):  # selected by val max-F1, fixed training pairs
        assert cfg.get("select_on", "f1") == "f1" and not cfg.get("folds") and not cfg.get("patience")


@pytest.mark.parametrize("name", ["heteroconv", "hgt", "rgcn", "hgt_plus"])
def test_fit_is_deterministic(planted_split, name):
    epochs = 2 if name.endswith("_plus") else 4
    cfg = FAST[name] | {"epochs": epochs, "val_every": 2, "disjoint_train_ratio": 0.5}  # dropout and masks draw randomness
    a, b = train.fit(planted_split, cfg, seed=7), train.fit(planted_split, cfg, seed=7)
    np.testing.assert_array_equal(a.scores["val"], b.scores["val"])
    np.testing.assert_array_equal(a.scores["test"], b.scores["test"])
    c = train.fit(planted_split, cfg, seed=8)
    assert not np.array_equal(a.scores["val"], c.scores["val"])
    assert not torch.are_deterministic_algorithms_enabled()  # fit leaves the process as it found it


@pytest.mark.parametrize("name", ["rgcn", "rgcn_plus"])
def test_a_killed_training_goes_on_to_the_same_model(planted_split, name, tmp_path):
    """Issue #36: training is resumable. Stopped after 2 of 6 epochs and run again with the same
    resume folder, it ends with the uninterrupted run's scores and best epoch (the RNG, the best
    weights so far and early stopping come back with the epoch's state)."""
    cfg = FAST[name] | {"epochs": 6, "val_every": 1, "patience": 3, "disjoint_train_ratio": 0.5}
    whole = train.fit(planted_split, cfg, seed=7)
    part = train.fit(planted_split, cfg, seed=7, resume=tmp_path, stop_after=2, save_every_s=0)
    assert (tmp_path / "last.ckpt").exists() and part.trainer.current_epoch == 2
    rest = train.fit(planted_split, cfg, seed=7, resume=tmp_path, save_every_s=0)
    # rgcn peaks at epoch 1 and stops early at 4 (patience 3 counted across the break); rgcn_plus runs all 6
    assert (whole.best_epoch, whole.trainer.current_epoch) == {"rgcn": (1, 4), "rgcn_plus": (6, 6)}[name]
    assert (rest.best_epoch, rest.trainer.current_epoch) == (whole.best_epoch, whole.trainer.current_epoch)
    np.testing.assert_array_equal(rest.scores["val"], whole.scores["val"])
    np.testing.assert_array_equal(rest.scores["test"], whole.scores["test"])
    if whole.best_epoch > 2:  # two epochs alone are another model
        assert not np.array_equal(part.scores["test"], whole.scores["test"])


def test_a_truncated_training_state_is_set_aside_and_training_starts_over(planted_split, tmp_path, caplog):
    """A resume state that does not load (read with ``torch.load(weights_only=True)`` first): one
    warning line names it, it is set aside, and the training runs from its first epoch to the
    uninterrupted run's scores, instead of failing on every later run."""
    cfg = FAST["rgcn"] | {"epochs": 4, "val_every": 1, "disjoint_train_ratio": 0.5}
    whole = train.fit(planted_split, cfg, seed=7)
    train.fit(planted_split, cfg, seed=7, resume=tmp_path, stop_after=2, save_every_s=0)
    state = tmp_path / "last.ckpt"
    state.write_bytes(state.read_bytes()[:1000])
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        again = train.fit(planted_split, cfg, seed=7, resume=tmp_path, save_every_s=0)
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(state) in line and "moved aside" in line and len(list(tmp_path.glob("last.ckpt.damaged-*"))) == 1
    np.testing.assert_array_equal(again.scores["test"], whole.scores["test"])


@pytest.mark.parametrize("name", ["heteroconv", "hgt", "rgcn", "hgt_plus", "hgt_plus_head"])
def test_scorer_equals_the_trained_models_scores(planted_split, name):
    """Encode once + decode in chunks (what discovery runs over a candidate space) gives the scores
    of the full forward pass, for every backbone (pair features are computed per chunk), and with
    a fitted validation head (whose own validation scores are out-of-fold, so test pairs here)."""
    cfg = FAST["hgt_plus"] | {"head_folds": 3} if name == "hgt_plus_head" else FAST[name]
    run = train.fit(planted_split, cfg | {"epochs": 2, "val_every": 1}, seed=3)
    scorer = train.Scorer(run.module, planted_split.train_graph)
    test = planted_split.part("test")
    got = scorer(test["src"].to_numpy(), test["dst"].to_numpy(), chunk=50)
    np.testing.assert_allclose(got, run.scores["test"], rtol=1e-5, atol=1e-6)
    if name == "hgt_plus_head":  # else this case would silently repeat hgt_plus
        assert bool(run.module.backbone.head.fitted)


@pytest.mark.parametrize("inputs", ["tsh", "link"])
def test_plus_head_reads_the_configured_inputs(planted_split, inputs):
    """head_inputs: tsh gives the head [decoder logit, TSH's classifier inputs of the pair] (checked
    against TSH's own design of the test pairs, computed apart); link gives it [decoder logit, the
    link features the MLP reads]; the other part's columns, if present, carry no weight."""
    from hygrail import descriptors

    cfg = FAST["hgt_plus"] | {"epochs": 2, "val_every": 1, "head_folds": 3, "head_inputs": inputs}
    run = train.fit(planted_split, cfg, seed=3)
    bb, g = run.module.backbone, planted_split.train_graph
    test = planted_split.part("test")
    s, d = test["src"].to_numpy(), test["dst"].to_numpy()
    with torch.no_grad():
        z = bb.encode(run.module.graph)
        x = bb.head_inputs(run.module.graph, z, torch.from_numpy(s), torch.from_numpy(d),
                           torch.from_numpy(bb.pair_features(g, s, d))).numpy()  # fmt: skip
    n_link = len(link_feature_names(g))
    unscaled = x[:, 1 : 1 + n_link] * bb.scale.std.numpy() + bb.scale.mean.numpy()
    np.testing.assert_allclose(unscaled, link_features(g, s, d), rtol=1e-4, atol=1e-4)
    coef = bb.head.coef.numpy()
    assert bb.head.chosen == inputs and (coef[:, 0] != 0).all()  # the logit is in both sets
    if inputs == "tsh":
        want = descriptors.design(descriptors.pair_features(g, s, d, {"embedding": False}))
        assert x.shape == (len(s), 1 + n_link + want.shape[1])
        np.testing.assert_allclose(x[:, 1 + n_link :], want, rtol=1e-4, atol=1e-4)
        assert (coef[:, 1 : 1 + n_link] == 0).all() and (coef[:, 1 + n_link :] != 0).any(0).sum() > want.shape[1] // 2
    else:
        assert x.shape == (len(s), 1 + n_link) and (coef[:, 1:] != 0).any(0).sum() > n_link // 2
    # the head's scores of the test pairs are what the trained model returned for them
    expect = torch.sigmoid(bb.head(torch.from_numpy(x))).double().numpy()
    np.testing.assert_allclose(expect, run.scores["test"], rtol=1e-5, atol=1e-6)


def test_validation_head_keeps_the_input_set_with_the_better_out_of_fold_ap():
    """head_inputs: auto's rule: whichever candidate column set carries the signal is kept, its
    out-of-fold scores are returned, and the other set's columns get no weight."""
    from hygrail.triage.backbones import ValidationHead

    rng = np.random.default_rng(0)
    y = (rng.random(600) < 0.1).astype(np.int64)
    signal, noise = y[:, None] * 1.5 + rng.normal(size=(600, 2)), rng.normal(size=(600, 2))
    for x, kept in ((np.c_[np.zeros(600), signal, noise], "a"), (np.c_[np.zeros(600), noise, signal], "b")):
        head = ValidationHead(5, folds=3, candidates={"a": [0, 1, 2], "b": [0, 3, 4]})
        oof = head.fit(x, y, seed=1)
        assert head.chosen == kept and average_precision_score(y, oof) > 0.6
        weighted = np.flatnonzero((head.coef.numpy() != 0).any(0)).tolist()
        assert weighted == ([1, 2] if kept == "a" else [3, 4])


def test_validation_head_compares_input_sets_without_the_shared_column():
    """compare_without: the column both sets share (the GNN's logit, optimistic on validation as its
    epoch was picked on validation AP) is left out of the comparison, then the kept set is fitted
    with it. Here set a's columns only cancel the shared column's noise (a wins with it, carries no
    signal of its own); set b carries a signal of its own and is kept."""
    from hygrail.triage.backbones import ValidationHead

    rng = np.random.default_rng(0)
    y = (rng.random(600) < 0.1).astype(np.int64)
    noise = rng.normal(size=600)
    x = np.c_[y + noise, noise + 0.1 * rng.normal(size=600), rng.normal(size=600),
              y[:, None] * 1.2 + rng.normal(size=(600, 2))]  # fmt: skip
    kept = {}
    for without in ((), (0,)):
        head = ValidationHead(5, folds=3, candidates={"a": [0, 1, 2], "b": [0, 3, 4]}, compare_without=without)
        oof = head.fit(x, y, seed=1)
        kept[without] = head.chosen, average_precision_score(y, oof)
        assert (head.coef.numpy()[:, 0] != 0).all()  # fitted with the shared column
    assert kept[()][0] == "a" and kept[(0,)][0] == "b" and kept[(0,)][1] > 0.6


def test_validation_head_compares_input_sets_over_repeated_partitions():
    """repeats: the sets are compared on their out-of-fold AP averaged over that many fold
    partitions (seeds seed..seed+repeats-1), recomputed here with sklearn; the head is then fitted
    on the first partition. Two sets of equal signal: one partition's verdict is a draw."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    from hygrail.triage.backbones import ValidationHead

    rng = np.random.default_rng(28)
    y = (rng.random(300) < 0.1).astype(np.int64)
    x = np.c_[rng.normal(size=300), y[:, None] * 0.7 + rng.normal(size=(300, 4))]
    xs = (x - x.mean(0)) / x.std(0)

    def oof_ap(cols, seed):
        oof = np.zeros(len(y))
        for fit_idx, held in StratifiedKFold(3, shuffle=True, random_state=seed).split(xs, y):
            oof[held] = LogisticRegression(C=0.1, max_iter=5000).fit(xs[fit_idx][:, cols], y[fit_idx]).decision_function(xs[held][:, cols])
        return average_precision_score(y, oof)

    chosen = {}
    for repeats in (1, 10):
        head = ValidationHead(5, folds=3, candidates={"a": [0, 1, 2], "b": [0, 3, 4]}, compare_without=(0,), repeats=repeats)
        oof = head.fit(x, y, seed=1)
        mean_ap = {k: np.mean([oof_ap(cols, 1 + r) for r in range(repeats)]) for k, cols in (("a", [1, 2]), ("b", [3, 4]))}
        chosen[repeats] = head.chosen
        assert head.chosen == max(mean_ap, key=mean_ap.get)
        assert average_precision_score(y, oof) == pytest.approx(oof_ap(head.candidates[head.chosen], 1), abs=1e-9)
    assert chosen == {1: "a", 10: "b"}


def test_fast_hetero_linear_matches_pyg(planted_split):
    torch.manual_seed(0)
    g = hetero_graph(planted_split.train_graph)
    net = HGTNet(g, ("CHM", "APL"))
    x = {t: torch.randn(g[t].num_nodes, 64) for t in g.node_types}
    conv = net.encoder.convs[0]
    fast = conv(x, g.edge_index_dict)
    for lin in (conv.k_rel, conv.v_rel):
        lin.__class__ = lin.__class__.__mro__[1]  # back to PyG's HeteroLinear
    slow = conv(x, g.edge_index_dict)
    for t in fast:
        torch.testing.assert_close(fast[t], slow[t])


# -- cache -------------------------------------------------------------------------------------------
TINY = {"name": "heteroconv", "hidden": 16, "epochs": 3, "val_every": 1}


def test_scores_are_cached(planted_split, tmp_path, monkeypatch):
    first = triage_scores(planted_split, TINY, 42, tmp_path)
    assert not first.cache_hit and first.fit_seconds > 0 and first.checkpoint.is_file()
    assert not list(tmp_path.glob(".resume-*"))  # each epoch's state was kept while training, dropped once done
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


def test_cached_plus_model_with_head_scores_like_its_run(planted_split, tmp_path):
    """What discovery does with a plus backbone: the checkpoint carries the fitted validation head
    (and no prior offset), so a loaded Scorer reproduces the cached test scores."""
    cfg = FAST["hgt_plus"] | {"epochs": 2, "val_every": 1, "head_folds": 3}
    first = triage_scores(planted_split, cfg, 42, tmp_path)
    test = planted_split.part("test")
    scorer = load_scorer(planted_split, cfg, 42, tmp_path)
    assert bool(scorer.backbone.head.fitted) and float(scorer.module.prior_logit) == 0.0
    np.testing.assert_allclose(scorer(test["src"].to_numpy(), test["dst"].to_numpy(), chunk=100), first.test,
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def test_crash_while_writing_leaves_no_entry(planted_split, tmp_path, monkeypatch):
    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # stands in for a kill after the scores file was written

    monkeypatch.setattr(L.Trainer, "save_checkpoint", killed)
    with pytest.raises((KeyboardInterrupt, SystemExit)):  # a save inside trainer.fit (a resumable epoch): Lightning exits(1)
        triage_scores(planted_split, TINY, 42, tmp_path)
    # no entry; only the folder a resumed training reads
    key = train.cache_key(planted_split, train.plain_config(TINY), 42)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == [f".resume-{key}"]
    monkeypatch.undo()
    again = triage_scores(planted_split, TINY, 42, tmp_path)
    assert not again.cache_hit and again.checkpoint.is_file() and not list(tmp_path.glob(".resume-*"))


def test_a_damaged_entry_is_named_moved_aside_and_trained_again(planted_split, tmp_path, caplog):
    """A truncated scores.npz or meta.json (``triage_scores``) or model.ckpt (``load_scorer``): one
    warning names the file, the entry is kept beside as ``<key>.damaged-*``, and the retrained entry
    gives the clean run's scores (training is deterministic)."""
    val = planted_split.part("val")
    clean = triage_scores(planted_split, TINY, 42, tmp_path)
    scored = load_scorer(planted_split, TINY, 42, tmp_path)(val["src"].to_numpy(), val["dst"].to_numpy())
    for name in ("scores.npz", "meta.json", "model.ckpt"):
        file = tmp_path / clean.key / name
        file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
        caplog.clear()
        with caplog.at_level("WARNING", logger="hygrail.cache"):
            if name == "model.ckpt":  # read by load_scorer only
                again = load_scorer(planted_split, TINY, 42, tmp_path)(val["src"].to_numpy(), val["dst"].to_numpy())
                np.testing.assert_array_equal(again, scored)
            else:
                again = triage_scores(planted_split, TINY, 42, tmp_path)
                assert not again.cache_hit
                np.testing.assert_array_equal(again.val, clean.val)
                np.testing.assert_array_equal(again.test, clean.test)
        (line,) = [r.getMessage() for r in caplog.records]
        assert str(file) in line and "moved aside" in line, line
    assert len(list(tmp_path.glob(f"{clean.key}.damaged-*"))) == 3
    assert triage_scores(planted_split, TINY, 42, tmp_path).cache_hit


def test_the_first_answer_counts_a_damaged_model_as_not_cached(planted_split, tmp_path, caplog):
    """``discover.first_answer`` asks whether the GNN is cached before training it: a damaged entry
    is no model (set aside, one warning), so the first answer is written while the GNN trains again."""
    from hygrail.discovery.first_answer import model_cached

    clean = triage_scores(planted_split, TINY, 42, tmp_path)
    assert model_cached(planted_split, TINY, 42, tmp_path)
    file = tmp_path / clean.key / "model.ckpt"
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        assert not model_cached(planted_split, TINY, 42, tmp_path)
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(file) in line and "moved aside" in line


def test_unknown_backbone_is_a_one_line_data_error(planted_split):
    from hygrail.kg import DataError

    with pytest.raises(DataError, match="backbone.name='gat'"):
        triage_scores(planted_split, {"name": "gat", "epochs": 1, "val_every": 1}, 42, None)
    with pytest.raises(DataError, match="bad model option"):
        triage_scores(planted_split, TINY | {"heads": 4}, 42, None)
    with pytest.raises(DataError, match="backbone.head_inputs='tshh'; expected one of auto, tsh, link"):
        triage_scores(planted_split, FAST["hgt_plus"] | {"epochs": 1, "val_every": 1, "head_folds": 3,
                                                         "head_inputs": "tshh"}, 42, None)  # fmt: skip
