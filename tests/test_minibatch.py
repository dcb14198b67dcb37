"""Mini-batch training (issue #27, training memory at real size): it learns a planted relation, is
seeded, scores in chunks what the full forward scores, its lean R-GCN layers compute PyG's, a bad
option is one line, and ``auto`` keeps the paper's full batch (same scores, same cache key) at
paper size."""

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from sklearn.metrics import roc_auc_score

from conftest import CONF
from hygrail.data import data_config, load_kg
from hygrail.data.split import temporal_split
from hygrail.kg import DataError
from hygrail.triage import train
from hygrail.triage.features import pair_features
from test_triage import FAST, planted_kg

MINI = {"training": "minibatch", "batch_pairs": 512}


@pytest.fixture(scope="module")
def planted_split():
    kg = planted_kg()
    return temporal_split(kg, kg.schema.relations["chm_apl"], neg_ratio=5)


@pytest.mark.parametrize("name, epochs", [("rgcn", 8), ("rgcn_plus", 3)])
def test_minibatch_training_learns_the_planted_relation(planted_split, name, epochs):
    cfg = FAST[name] | MINI | {"epochs": epochs, "val_every": 1}
    module, _, steps = train.build_module(planted_split, cfg)
    n_train = planted_split.part("train").height
    assert isinstance(steps, train.PairSteps) and module.score_chunk == 512
    epoch = [steps[i] for i in range(len(steps))]  # in order, each once, as the loader reads them
    assert max(len(b["label"]) for b in epoch) == 512
    if name == "rgcn":  # one epoch covers every training pair once
        assert len(steps) == -(-n_train // 512)
        seen = np.concatenate([b["src"].numpy() * 10**6 + b["dst"].numpy() for b in epoch])
        train_pairs = planted_split.part("train")
        assert sorted(seen) == sorted(train_pairs["src"].to_numpy() * 10**6 + train_pairs["dst"].to_numpy())
    run = train.fit(planted_split, cfg, seed=42)
    for part in ("val", "test"):
        assert roc_auc_score(planted_split.part(part)["label"], run.scores[part]) > 0.75


def test_minibatch_training_is_seeded(planted_split):
    cfg = FAST["rgcn"] | MINI | {"epochs": 2, "val_every": 1}
    a, b, c = (train.fit(planted_split, cfg, seed=s) for s in (7, 7, 8))
    np.testing.assert_array_equal(a.scores["val"], b.scores["val"])
    np.testing.assert_array_equal(a.scores["test"], b.scores["test"])
    assert not np.array_equal(a.scores["val"], c.scores["val"])


def test_chunked_scores_equal_the_full_forward(planted_split):
    run = train.fit(planted_split, FAST["rgcn"] | {"training": "minibatch", "batch_pairs": 100, "epochs": 1,
                                                    "val_every": 1}, seed=3)  # fmt: skip
    _, batches, _ = train.build_module(planted_split, FAST["rgcn"] | {"epochs": 1, "val_every": 1})
    chunked = train.predict(run.module, batches["test"])
    run.module.score_chunk = None
    np.testing.assert_allclose(chunked, train.predict(run.module, batches["test"]), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(chunked, run.scores["test"], rtol=1e-6, atol=1e-7)


def test_pair_features_in_chunks_are_the_same_values(planted_split):
    pairs = planted_split.part("train")
    src, dst = pairs["src"].to_numpy(), pairs["dst"].to_numpy()
    whole = pair_features(planted_split.train_graph, src, dst, chunk=len(src))
    np.testing.assert_array_equal(pair_features(planted_split.train_graph, src, dst, chunk=97), whole)


def test_lean_rgcn_computes_what_pyg_computes(planted_split):
    torch.manual_seed(0)
    backbone, graph = train.build_backbone(planted_split.train_graph, planted_split.relation, FAST["rgcn"])
    weights = torch.randn(planted_split.train_graph.num_nodes, FAST["rgcn"]["hidden"])

    def encode(lean: bool):
        backbone.zero_grad()
        with train.lean_rgcn(backbone, lean):
            z = backbone.encode(graph)
        (z * weights).sum().backward()
        return z.detach(), {n: p.grad.clone() for n, p in backbone.named_parameters() if p.grad is not None}

    (z_pyg, g_pyg), (z_lean, g_lean) = encode(False), encode(True)
    torch.testing.assert_close(z_lean, z_pyg, rtol=0, atol=0)  # PyG's own forward: the same values
    assert g_lean.keys() == g_pyg.keys() and "encoder.convs.0.comp" in g_lean
    for name in g_pyg:  # gradients summed in another order
        torch.testing.assert_close(g_lean[name], g_pyg[name], rtol=1e-4, atol=1e-5, msg=name)
    assert "forward" not in vars(backbone.encoder.convs[0])  # the layers are PyG's again


@pytest.mark.parametrize("option, message", [
    ({"training": "mini"}, "backbone.training='mini'; expected one of auto, full, minibatch"),
    ({"batch_pairs": 0}, "backbone.batch_pairs=0; expected a whole number of pairs >= 1"),
    ({"batch_pairs": 1.5}, "backbone.batch_pairs=1.5; expected"),
])  # fmt: skip
def test_bad_option_is_a_one_line_data_error(planted_split, option, message):
    with pytest.raises(DataError, match=message.replace("(", r"\(")) as e:
        train.triage_scores(planted_split, FAST["rgcn"] | {"epochs": 1, "val_every": 1} | option, 42, None)
    assert "\n" not in str(e.value)


def test_auto_keeps_the_full_batch_at_paper_size():
    """Every backbone config on every relation of the paper-size synthetic MatKG (3,000 nodes):
    auto plans the full batch, and its cache key is the one without the option."""
    kg = load_kg(data_config())
    for rel in kg.schema.relations.values():
        split = temporal_split(kg, rel)
        for path in sorted((CONF / "backbone").glob("*.yaml")):
            cfg = OmegaConf.to_container(OmegaConf.load(path))
            assert train.batch_plan(split, cfg) is None, (rel.name, path.stem, train.full_batch_gb(split, cfg))
        cfg = OmegaConf.to_container(OmegaConf.load(CONF / "backbone" / "rgcn.yaml"))
        key = train.cache_key(split, cfg, 42)
        assert train.cache_key(split, cfg | {"training": "auto"}, 42) == key
        assert train.cache_key(split, cfg | {"training": "full", "batch_pairs": 10}, 42) == key
        assert train.cache_key(split, cfg | MINI, 42) != key


def test_auto_scores_equal_the_full_batch_path(planted_split, monkeypatch):
    cfg = FAST["rgcn"] | {"epochs": 3, "val_every": 1}
    auto, full = train.fit(planted_split, cfg, seed=5), train.fit(planted_split, cfg | {"training": "full"}, seed=5)
    assert auto.module.score_chunk is None
    np.testing.assert_array_equal(auto.scores["val"], full.scores["val"])
    np.testing.assert_array_equal(auto.scores["test"], full.scores["test"])
    monkeypatch.setattr(train, "AUTO_LIMIT_GB", 0.0)  # above the limit auto trains in mini-batches
    assert train.batch_plan(planted_split, cfg) == train.BATCH_PAIRS
