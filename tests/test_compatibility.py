"""The compatibility descriptor (hygrail/descriptors.py): its values on a hand-built recipes KG, the
block form equal to the pair form, its one-line errors, TSH and the plus head reading it as named
options, and nothing changed while it is off (TSH's scores and the triage cache keys as before)."""

import sys
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from hygrail import descriptors as desc
from hygrail.data.subgraph import induced_subgraph
from hygrail.kg import KG, DataError, Relation, Schema

sys.path.insert(0, str(Path(__file__).parent))
from conftest import CONF, named_kg  # noqa: E402

RECIPES = {"via": "Element", "ignore": ["O", "C", "H", "N"]}


@pytest.fixture(scope="module")
def recipes() -> KG:
    """A target BaTiO3 {Ba, Ti, O} and precursors BaCO3 {Ba, C, O}, TiO2 {Ti, O}, SrCO3 {Sr, C, O},
    SrTiO3 {Sr, Ti, O} and NH4NO3 {N, H, O} (no element outside the ignored ones); BaCO3 is a known
    precursor of the target (a Target-Precursor edge, which is not an element)."""
    schema = Schema(("Target", "Precursor", "Element"), {"syn_tgt_pre": Relation("syn_tgt_pre", "Target", "Precursor")})
    elements = ["Ba", "Ti", "Sr", "O", "C", "H", "N"]
    materials = {"BaTiO3": ("Target", ["Ba", "Ti", "O"]), "BaCO3": ("Precursor", ["Ba", "C", "O"]),
                 "TiO2": ("Precursor", ["Ti", "O"]), "SrCO3": ("Precursor", ["Sr", "C", "O"]),
                 "SrTiO3": ("Precursor", ["Sr", "Ti", "O"]), "NH4NO3": ("Precursor", ["N", "H", "O"])}
    nodes = [(m, t) for m, (t, _) in materials.items()] + [(e, "Element") for e in elements]
    edges = [(m, e, 1) for m, (_, els) in materials.items() for e in els] + [("BaTiO3", "BaCO3", 2)]
    return named_kg(schema, nodes, edges)


def ids(kg: KG, *names: str) -> np.ndarray:
    return np.array([kg.names.index(n) for n in names])


PRECURSORS = ("BaCO3", "TiO2", "SrCO3", "SrTiO3", "NH4NO3")


def test_values_on_a_hand_built_recipes_kg(recipes):
    """N(v) less O, C, H, N: BaCO3 {Ba} and TiO2 {Ti} lie in the target's {Ba, Ti}; SrCO3 {Sr} does not;
    SrTiO3 {Sr, Ti} half; NH4NO3 {} is compatible with every target (share 1 by definition)."""
    src, dst = ids(recipes, *["BaTiO3"] * 5), ids(recipes, *PRECURSORS)
    got = desc.compatibility(recipes, src, dst, RECIPES)
    assert got.columns == list(desc.COMPATIBILITY)
    assert got["compatible_share"].to_list() == [1.0, 1.0, 0.0, 0.5, 1.0]
    assert got["compatible_all"].to_list() == [1.0, 1.0, 0.0, 0.0, 1.0]
    # nothing ignored: O is in every set, C not in the target's, so BaCO3 {Ba, C, O} has 2 of 3
    plain = desc.compatibility(recipes, src, dst, {"via": "Element"})
    assert plain["compatible_share"].to_list() == pytest.approx([2 / 3, 1.0, 1 / 3, 2 / 3, 1 / 3])
    assert plain["compatible_all"].to_list() == [0.0, 1.0, 0.0, 0.0, 0.0]
    # the direction matters: the target's {Ba, Ti} in BaCO3's {Ba}: half
    back = desc.compatibility(recipes, ids(recipes, "BaCO3"), ids(recipes, "BaTiO3"), RECIPES)
    assert back.row(0) == (0.5, 0.0)


def test_block_form_equals_the_pair_form_and_descriptors_carry_it(recipes):
    src, dst = ids(recipes, "BaTiO3", "SrTiO3", "TiO2"), ids(recipes, *PRECURSORS)
    block = desc.compatibility_block(recipes, src, dst, RECIPES)
    pairs = desc.compatibility(recipes, np.repeat(src, len(dst)), np.tile(dst, len(src)), RECIPES)
    assert block.equals(pairs)
    # TSH's descriptors: two more columns, kept as they are (no log1p), in both forms
    cfg = {"embedding": False, "compatible": RECIPES}
    feats = desc.block_features(recipes, src, dst, cfg)
    assert feats.columns[-2:] == list(desc.COMPATIBILITY) and desc.design(feats).shape[1] == desc.design_width(cfg)
    np.testing.assert_array_equal(desc.design(feats)[:, -2:], pairs.to_numpy())
    np.testing.assert_array_equal(desc.design(feats), desc.design(desc.pair_features(
        recipes, np.repeat(src, len(dst)), np.tile(dst, len(src)), cfg)))
    off = desc.pair_features(recipes, src, src, {"embedding": False})
    assert not set(desc.COMPATIBILITY) & set(off.columns) and desc.design_width({"embedding": False}) == off.width


@pytest.mark.parametrize("compatible, message", [
    ({"via": "Elements", "ignore": ["O"]},
     r"^method.compatible.via='Elements': no such node type; expected one of Target, Precursor, Element$"),
    ({"via": "Element", "ignore": ["O", "Oxygen"]}, r"^method.compatible.ignore: 'Oxygen' is no Element node; expected names of Element nodes, e\.g\. Ba, C, H, N, O, Sr, Ti$"),
    ({"via": "Element", "ignore": ["BaCO3", False]}, r"^method.compatible.ignore: 'BaCO3', False are no Element node;"),
    ("Element", r"^method.compatible='Element'; expected \{via: <node type>, ignore: \[<names of that type>\]\}$"),
])
def test_one_line_errors(recipes, compatible, message):
    src, dst = ids(recipes, "BaTiO3"), ids(recipes, "TiO2")
    with pytest.raises(DataError, match=message) as err:
        desc.pair_features(recipes, src, dst, {"embedding": False, "compatible": compatible})
    assert "\n" not in str(err.value)


def test_a_name_the_sample_dropped_is_not_a_typo(recipes):
    """A subgraph sample holds few elements (12 of the recipes' 3,000-node sample): an ignored name the
    sample lacks is checked against the graph it was drawn from, and has nothing to ignore."""
    keep = np.sort(ids(recipes, "BaTiO3", "BaCO3", "SrTiO3", "Ba", "Ti", "Sr", "C"))  # no O, H, N
    sample = induced_subgraph(recipes, keep)
    train = sample.until(2000)  # a derived graph keeps the source too
    assert train.source_nodes is not None and recipes.source_nodes is None
    got = desc.compatibility(train, ids(train, "BaTiO3", "BaTiO3"), ids(train, "BaCO3", "SrTiO3"), RECIPES)
    assert got["compatible_share"].to_list() == [1.0, 0.5]
    with pytest.raises(DataError, match="'Oxygen' is no Element node"):
        desc.compatibility(train, ids(train, "BaTiO3"), ids(train, "BaCO3"), RECIPES | {"ignore": ["Oxygen"]})


# -- off by default: today's TSH scores and triage cache keys ---------------------------------------
def test_tsh_is_unchanged_while_off_and_reads_the_columns_when_on():
    """The figures of the planted split of tests/test_tsh.py, measured before the option existed."""
    from test_tsh import TOPO, _planted_split

    from hygrail.baselines.tsh import tsh_scores

    split = _planted_split()
    res = tsh_scores(split, TOPO)
    np.testing.assert_allclose(res.val[:4], [0.5342054322019771, 0.5031188257207092, 0.30917232096942415,
                                             0.42419494447738054], rtol=1e-9)
    np.testing.assert_allclose(res.test[:4], [0.44282118394936404, 0.41559365076436444, 0.5973454406123665,
                                              0.6312833584566383], rtol=1e-9)
    assert res.val.sum() == pytest.approx(22.887923942940816, rel=1e-9)
    assert res.test.sum() == pytest.approx(60.26159874146697, rel=1e-9)
    assert res.threshold == pytest.approx(0.20597120700901458, rel=1e-9)
    assert not set(desc.COMPATIBILITY) & set(res.weights)
    on = tsh_scores(split, TOPO | {"compatible": {"via": "C"}})  # the planted graph's third type
    assert set(desc.COMPATIBILITY) <= set(on.weights) and not np.allclose(on.test, res.test)


# conf/backbone/<name>.yaml on tests/test_triage.py's planted split, seed 42: the keys before the option existed
KEYS = {
    "heteroconv": "fab10e553c5f14a0577b61c1884cb70d846e03c5580aa64cff3610e19cfb065f",
    "hgt": "3680286a6add395e7e3567491edfb8d8d934f08effb3903efad894e9313401c9",
    "rgcn": "abe59c85ac6b8411739688776da7398625fe17fd77687a43104168a50b3e7ca6",
    "heteroconv_plus": "19aac2f41ebc8bb9e28bcbfa5dc342bd9d06279f503ed0e6d8cc01aee02b4ab3",
    "hgt_plus": "7ac01c7daa6bd55a2b24b0afb1e694540cb81d7d0262709828051e31083cc7a9",
    "rgcn_plus": "e9a27a31f2d743d3230ff21c4088c525b036a21eb122b7dc69e31ee3dca28a13",
}


@pytest.fixture(scope="module")
def planted_split():
    from test_triage import planted_kg

    from hygrail.data.split import temporal_split

    kg = planted_kg()
    return temporal_split(kg, kg.schema.relations["chm_apl"], neg_ratio=5)


def test_cache_keys_are_unchanged_while_off_and_move_with_the_option(planted_split):
    from hygrail.triage.train import cache_key, plain_config

    for name, key in KEYS.items():
        cfg = plain_config(OmegaConf.load(CONF / f"backbone/{name}.yaml"))
        assert cache_key(planted_split, cfg, 42) == key, name
        assert cache_key(planted_split, cfg | {"head_compatible": None}, 42) == key, name
    cfg = plain_config(OmegaConf.load(CONF / "backbone/hgt_plus.yaml"))
    on = cache_key(planted_split, cfg | {"head_compatible": {"via": "PRO"}}, 42)
    other = cache_key(planted_split, cfg | {"head_compatible": {"via": "PRO", "ignore": ["PRO400"]}}, 42)
    same = cache_key(planted_split, cfg | {"head_compatible": {"ignore": ["PRO400"], "via": "PRO"}}, 42)
    assert len({KEYS["hgt_plus"], on, other}) == 3 and same == other


def test_plus_head_reads_the_compatibility_beside_its_inputs(planted_split):
    """head_compatible: the two columns join the head's inputs after the link (and TSH) parts, equal to
    the descriptor computed apart, and carry weight in whichever set the head keeps; the scores of the
    test pairs are the head's over those inputs."""
    import torch

    from test_triage import FAST

    from hygrail.triage import train
    from hygrail.triage.features import link_feature_names

    compatible = {"via": "PRO"}
    for inputs in ("link", "tsh"):
        cfg = FAST["hgt_plus"] | {"epochs": 2, "val_every": 1, "head_folds": 3, "head_inputs": inputs,
                                  "head_compatible": compatible}
        run = train.fit(planted_split, cfg, seed=3)
        bb, g = run.module.backbone, planted_split.train_graph
        test = planted_split.part("test")
        s, d = test["src"].to_numpy(), test["dst"].to_numpy()
        with torch.no_grad():
            z = bb.encode(run.module.graph)
            x = bb.head_inputs(run.module.graph, z, torch.from_numpy(s), torch.from_numpy(d),
                               torch.from_numpy(bb.pair_features(g, s, d))).numpy()  # fmt: skip
        n_link = len(link_feature_names(g))
        n_tsh = desc.design_width({"embedding": False}) if inputs == "tsh" else 0
        assert x.shape == (len(s), 1 + n_link + n_tsh + 2)
        want = desc.compatibility(g, s, d, compatible).to_numpy()
        np.testing.assert_allclose(x[:, -2:], want, rtol=1e-6)
        assert bb.head.chosen == inputs and (bb.head.coef.numpy()[:, -2:] != 0).all()
        np.testing.assert_allclose(torch.sigmoid(bb.head(torch.from_numpy(x))).double().numpy(), run.scores["test"],
                                   rtol=1e-5, atol=1e-6)
        blocks = bb.block_features(g, d[:7])(s[:3]).reshape(21, -1)  # discovery's form: the same columns
        np.testing.assert_allclose(blocks, bb.pair_features(g, np.repeat(s[:3], 7), np.tile(d[:7], 3)), rtol=1e-5, atol=1e-6)


def test_plus_head_option_errors(planted_split):
    from test_triage import FAST

    from hygrail.triage import train

    with pytest.raises(DataError, match=r"^backbone.head_compatible.via='Element': no such node type"):
        train.fit(planted_split, FAST["hgt_plus"] | {"epochs": 1, "val_every": 1, "head_folds": 3, "head_compatible": RECIPES}, seed=0)
    with pytest.raises(DataError, match=r"^backbone.head_compatible=.* is read by the validation head; this backbone has none"):
        train.fit(planted_split, FAST["hgt_plus"] | {"epochs": 1, "val_every": 1, "head_folds": 0, "head_compatible": {"via": "PRO"}}, seed=0)


def test_rows_are_named_when_on():
    from hydra import compose, initialize_config_dir

    from hygrail.tracking import method_label

    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        tsh = compose("config", overrides=["method=tsh"])
        tsh_on = compose("config", overrides=["method=tsh", "+method.compatible={via: Element, ignore: [O]}"])
        gnn_on = compose("config", overrides=["method=gnn_only", "backbone=hgt_plus",
                                              "+backbone.head_compatible={via: Element}"])
    assert (method_label(tsh), method_label(tsh_on), method_label(gnn_on)) == ("TSH", "TSH + compatibility",
                                                                               "GNN + compatibility")
