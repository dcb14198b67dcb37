"""KG-embedding baseline (hygrail/baselines/kge.py): on a hand-built KG of four groups (every X of a
group linked to every Y of it, one link per group held out), the trained model ranks the held-out
links above every cross-group pair; the block scorer discovery reads equals the pairwise scores
(both orientations of a relation); a ``method=kge`` triage cell runs from a Hydra-composed config;
without PyKEEN each entry point is a one-line DataError naming the extra."""

import sys

import numpy as np
import pytest

from conftest import CONF, named_kg
from hygrail.kg import DataError, Relation, Schema

XY, YX = Relation("xy", "X", "Y"), Relation("yx", "Y", "X")
SCHEMA = Schema(("X", "Y", "Z"), {"xy": XY})
GROUPS, SIZE = 4, 5
# Small and short: 136 edges, 5 batches an epoch; RotatE (the default) reaches AUC 1.0 by 20 epochs,
# ComplEx needs 40 (measured).
TINY = {"embedding_dim": 16, "epochs": 20, "batch_size": 64, "lr": 0.05, "num_negs_per_pos": 4, "seed": 0}
# PyKEEN's own: its sLCWA dataset passes a deprecated shuffle flag
pytestmark = pytest.mark.filterwarnings("ignore:Training instances are always shuffled:DeprecationWarning")


@pytest.fixture
def pykeen():
    return pytest.importorskip("pykeen", reason="PyKEEN is the optional extra kge: pip install -e '.[kge]'")


def _groups():
    """X/Y nodes in GROUPS groups, all X-Y links inside a group but the held-out (x_g0, y_g0), and
    each node linked to its group's Z hub (a second edge type)."""
    nodes = [(f"{t}{g}_{i}", t.upper()) for g in range(GROUPS) for t in "xy" for i in range(SIZE)]
    nodes += [(f"z{g}", "Z") for g in range(GROUPS)]
    held = [(f"x{g}_0", f"y{g}_0") for g in range(GROUPS)]
    edges = [(f"x{g}_{i}", f"y{g}_{j}", 1) for g in range(GROUPS) for i in range(SIZE) for j in range(SIZE)
             if (f"x{g}_{i}", f"y{g}_{j}") not in held]
    edges += [(f"{t}{g}_{i}", f"z{g}", 1) for g in range(GROUPS) for t in "xy" for i in range(SIZE)]
    kg = named_kg(SCHEMA, nodes, edges)
    ids = {n: i for i, (n, _) in enumerate(nodes)}
    return kg, np.array([[ids[a], ids[b]] for a, b in held])


def test_trained_model_ranks_held_out_links_above_cross_group_pairs(pykeen):
    from hygrail.baselines.kge import fit_kge

    kg, held = _groups()
    model = fit_kge(kg, TINY)
    assert len(model.losses) == TINY["epochs"] and model.losses[-1] < model.losses[0]
    x, y = kg.nodes_of_type("X"), kg.nodes_of_type("Y")
    group = lambda n: int(kg.label(n)[1])  # noqa: E731  (names are x<g>_<i>, y<g>_<i>)
    cross = np.array([(a, b) for a in x for b in y if group(a) != group(b)])
    pos = model.pairs(held[:, 0], held[:, 1], XY)
    neg = model.pairs(cross[:, 0], cross[:, 1], XY)
    auc = (pos[:, None] > neg[None, :]).mean()
    assert auc >= 0.95, auc
    # fixed seed: a second fit scores alike
    np.testing.assert_array_equal(fit_kge(kg, TINY).pairs(held[:, 0], held[:, 1], XY), pos)


def test_block_scorer_equals_pairwise_scores_in_both_orientations(pykeen):
    from hygrail.baselines.kge import fit_kge, kge
    from hygrail.discovery.space import CandidateSpace

    kg, _ = _groups()
    options = TINY | {"epochs": 3}
    for inverse in (True, False):
        model = fit_kge(kg, options | {"inverse_triples": inverse})
        for rel in (XY, YX):  # YX: the relation's source is the tail of its triples
            space = CandidateSpace(kg, rel)
            block = space.block(space.src[:7])
            scores = model.scorer(space)(block)
            assert scores.shape == block.valid.shape and scores.dtype == np.float32
            src, dst = np.repeat(block.src, len(space.dst)), np.tile(space.dst, len(block.src))
            np.testing.assert_allclose(scores.ravel(), model.pairs(src, dst, rel), rtol=1e-5, atol=1e-6)
        # the two orientations score the same undirected pair (without inverse triples: the same triple)
        if not inverse:
            np.testing.assert_array_equal(model.pairs(src, dst, YX), model.pairs(dst, src, XY))
    # discovery's factory: (graph, space, options) -> Scorer, its hyperparameters under options["kge"]
    space = CandidateSpace(kg, XY)
    block = space.block(space.src[:2])
    np.testing.assert_array_equal(kge(kg, space, {"via": "Z", "kge": options})(block), fit_kge(kg, options).scorer(space)(block))


def test_a_kge_triage_cell_runs_from_hydra(pykeen, tmp_path):
    from hydra import compose, initialize_config_dir

    from hygrail.pipeline import run_cell

    overrides = ["method=kge", "method.epochs=2", "method.embedding_dim=8", "data.scale=0.3", "relation=chm_apl",
                 f"paths.outputs={tmp_path}"]
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    result = run_cell(cfg)
    m = result.metrics
    assert m["test_auc"] == m["kge_test_auc"] and 0 <= m["val_ap"] <= 1 and m["test_call_rate"] == 0
    assert m["kge_weight_slope"] > 0 and m["kge_fit_seconds"] > 0
    p = result.predictions
    assert set(p["split"].unique()) == {"val", "test"} and p["score"].is_between(0, 1).all()
    assert ((p["score"] >= result.gnn_threshold).cast(int) == p["pred"]).all()


def test_missing_extra_and_bad_options_are_one_line_errors(monkeypatch):
    from hygrail.baselines.kge import fit_kge, options_of

    kg, _ = _groups()
    with pytest.raises(DataError, match="model='transe'"):
        options_of({"model": "transe"})
    with pytest.raises(DataError, match="kge option 'dim'"):
        options_of({"dim": 3})
    monkeypatch.setitem(sys.modules, "pykeen", None)  # as if the extra were not installed
    with pytest.raises(DataError, match=r"pip install -e '\.\[kge\]'") as err:
        fit_kge(kg, TINY)
    assert "\n" not in str(err.value)
