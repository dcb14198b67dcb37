"""Split invariants (paper §4, App. A.2): ratios, 1:20, disjointness, temporal order, no leakage."""

import numpy as np
import polars as pl
import pytest

from hygrail.data.split import split_sizes, temporal_split
from hygrail.kg import KG, DataError


def _kg(schema, n_chm=80, n_apl=60, n_edges=100, seed=0):
    rng = np.random.default_rng(seed)
    names = [f"C{i}" for i in range(n_chm)] + [f"A{i}" for i in range(n_apl)] + ["P0", "P1"]
    types = ["CHM"] * n_chm + ["APL"] * n_apl + ["PRO", "PRO"]
    nodes = pl.DataFrame({"name": names, "type": types})
    pairs = set()
    while len(pairs) < n_edges:
        pairs.add((int(rng.integers(n_chm)), n_chm + int(rng.integers(n_apl))))
    u, v = map(list, zip(*sorted(pairs)))
    # every CHM also links to a property, so the graph has a non-hypothesis edge type too
    u += list(range(n_chm))
    v += [n_chm + n_apl + (i % 2) for i in range(n_chm)]
    m = len(u)
    edges = pl.DataFrame(
        {
            "u": u,
            "v": v,
            "type": ["CHM-APL"] * n_edges + ["CHM-PRO"] * n_chm,
            "count": rng.integers(30, 500, m),
            "year": rng.integers(1995, 2024, m),
        }
    )
    return KG(schema, nodes, edges)


@pytest.fixture()
def kg(matkg_schema):
    return _kg(matkg_schema)


def test_split_sizes_follow_7_1_2():
    assert split_sizes(194, (7, 1, 2)) == (136, 19, 39)
    assert split_sizes(100, (7, 1, 2)) == (70, 10, 20)
    assert split_sizes(621, (7, 1, 2)) == (435, 62, 124)  # CHM-PRO: rounding decides val/test


def test_ratios_negatives_and_temporal_order(kg, matkg_schema):
    rel = matkg_schema.relation("chm_apl")
    split = temporal_split(kg, rel, seed=3)
    counts = split.counts()
    assert [counts[s]["pos"] for s in ("train", "val", "test")] == [70, 10, 20]
    for s in ("train", "val", "test"):
        assert counts[s]["neg"] == 20 * counts[s]["pos"]
    years = {s: split.part(s).filter(pl.col("label") == 1)["year"] for s in ("train", "val", "test")}
    assert years["train"].max() <= years["val"].min()
    assert years["val"].max() <= years["test"].min()


def test_negatives_are_unlinked_typed_and_disjoint(kg, matkg_schema):
    rel = matkg_schema.relation("chm_apl")
    split = temporal_split(kg, rel, seed=3)
    neg = split.pairs.filter(pl.col("label") == 0)
    assert not kg.has_edges(neg["src"].to_numpy(), neg["dst"].to_numpy()).any()
    assert set(kg.node_types[neg["src"].to_numpy()]) == {matkg_schema.node_types.index("CHM")}
    assert set(kg.node_types[neg["dst"].to_numpy()]) == {matkg_schema.node_types.index("APL")}
    keys = list(zip(split.pairs["src"].to_list(), split.pairs["dst"].to_list()))
    assert len(keys) == len(set(keys)), "a pair appears twice (within or across splits)"


def test_no_leakage_into_training_graph(kg, matkg_schema):
    rel = matkg_schema.relation("chm_apl")
    split = temporal_split(kg, rel, seed=3)
    held = split.pairs.filter((pl.col("label") == 1) & (pl.col("split") != "train"))
    g = split.train_graph
    src, dst = held["src"].to_numpy(), held["dst"].to_numpy()
    assert not g.has_edges(src, dst).any() and not g.has_edges(dst, src).any()
    train = split.part("train").filter(pl.col("label") == 1)
    assert g.has_edges(train["src"].to_numpy(), train["dst"].to_numpy()).all()
    assert g.num_edges == kg.num_edges - held.height
    assert g.num_nodes == kg.num_nodes  # same node ids


def test_deterministic_by_seed(kg, matkg_schema):
    rel = matkg_schema.relation("chm_apl")
    a, b, c = (temporal_split(kg, rel, seed=s) for s in (5, 5, 6))
    assert a.pairs.equals(b.pairs)
    assert not a.pairs.equals(c.pairs)


def test_too_few_unlinked_pairs_is_a_clear_error(matkg_schema):
    small = _kg(matkg_schema, n_chm=5, n_apl=4, n_edges=12)
    with pytest.raises(DataError, match="unlinked CHM-APL pairs exist; lower neg_ratio"):
        temporal_split(small, matkg_schema.relation("chm_apl"))


def test_a_relation_too_small_for_every_part_is_a_clear_error(matkg_schema):
    tiny = _kg(matkg_schema, n_edges=4)  # 7:1:2 of 4 positives: val gets 0
    with pytest.raises(DataError, match=r"has 4 edges: a 7:1:2 split gives train/val/test 3/0/1 positives"):
        temporal_split(tiny, matkg_schema.relation("chm_apl"))
    assert temporal_split(_kg(matkg_schema, n_edges=5), matkg_schema.relation("chm_apl")).part("val").height > 0
