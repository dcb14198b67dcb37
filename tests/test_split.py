"""Split invariants (paper §4, App. A.2): ratios, 1:20, disjointness, temporal order, no leakage."""

import numpy as np
import polars as pl
import pytest

from hygrail.data.split import split_from_config, split_sizes, temporal_split, year_cuts
from hygrail.kg import KG, DataError, Relation


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


# -- years: what kind of split a relation really gets (issue #14, item 5) ---------------------------
def _with_years(kg, years):
    """``kg`` with the CHM-APL edges' years replaced by ``years`` (in edge order)."""
    is_rel = (kg.edges["type"] == "CHM-APL").to_numpy()
    y = kg.edges["year"].to_numpy().copy()
    y[is_rel] = years
    return KG(kg.schema, kg.nodes, kg.edges.with_columns(pl.Series("year", y)))


def test_kind_and_warning_follow_the_years(kg, matkg_schema, caplog):
    rel = matkg_schema.relation("chm_apl")
    caplog.set_level("WARNING", logger="hygrail.data")
    split = temporal_split(kg, rel, seed=3)
    assert (split.kind, split.dated, split.ties) == ("temporal", 100, "shuffle") and not caplog.records

    undated = temporal_split(_with_years(kg, np.full(100, -1)), rel, seed=3)
    assert (undated.kind, undated.dated) == ("random", 0)
    [msg] = [r.getMessage() for r in caplog.records]
    assert msg.startswith("relation chm_apl (CHM-APL): none of its 100 edges has a year, so the 7:1:2 split is RANDOM")
    # same sizes, and the order is the seeded shuffle alone
    assert undated.counts() == split.counts()
    caplog.clear()

    # 10 undated of 100: they sort first, into train, so val/test are the 30 most recent dated edges
    years = np.arange(100) % 30 + 1990
    years[:10] = -1
    partial = temporal_split(_with_years(kg, years), rel, seed=3)
    assert (partial.kind, partial.dated) == ("partial", 90)
    [msg] = [r.getMessage() for r in caplog.records]
    assert "10 of its 100 edges have no year" in msg and "so 0 undated edge(s) are in val/test" in msg
    held = partial.pairs.filter((pl.col("label") == 1) & (pl.col("split") != "train"))
    assert (held["year"] >= 0).all()
    caplog.clear()
    years[:80] = -1  # more undated than train holds: 10 reach val
    assert temporal_split(_with_years(kg, years), rel, seed=3).kind == "partial"
    assert "so 10 undated edge(s) are in val/test" in caplog.records[0].getMessage()


def test_ties_year_moves_each_boundary_to_the_nearest_year_change(kg, matkg_schema):
    rel = matkg_schema.relation("chm_apl")
    # 100 positives, years 2000..2009 with 10 each: 7:1:2 cuts at 70 and 80 fall on year changes ...
    even = _with_years(kg, np.repeat(np.arange(2000, 2010), 10))
    assert temporal_split(even, rel, ties="year").counts() == temporal_split(even, rel).counts()
    # ... 2000..2004 with 20 each: the nominal cuts 70 and 80 sit inside 2003 (60..79): the first moves
    # to 60 (10 back, nearer than 80), the second to 80 (unmoved: a year change), so val is all 2003
    coarse = _with_years(kg, np.repeat(np.arange(2000, 2005), 20))
    split = temporal_split(coarse, rel, ties="year", seed=3)
    assert [split.counts()[s]["pos"] for s in ("train", "val", "test")] == [60, 20, 20]
    assert all(split.counts()[s]["neg"] == 20 * split.counts()[s]["pos"] for s in ("train", "val", "test"))
    pos = split.pairs.filter(pl.col("label") == 1)
    years = {s: set(pos.filter(pl.col("split") == s)["year"].to_list()) for s in ("train", "val", "test")}
    assert years == {"train": {2000, 2001, 2002}, "val": {2003}, "test": {2004}}
    # The paper's shuffle keeps 70/10/20 and lets 2003 straddle train/val.
    shuffled = temporal_split(coarse, rel, seed=3).pairs.filter(pl.col("label") == 1)
    assert 2003 in shuffled.filter(pl.col("split") == "train")["year"].to_list()
    assert 2003 in shuffled.filter(pl.col("split") == "val")["year"].to_list()


def test_year_cuts_prefer_the_earlier_change_on_a_tie_and_keep_every_part():
    rel = Relation("r", "CHM", "APL")
    years = np.repeat([1, 2, 3, 4], [3, 3, 2, 2])  # year changes before positions 3, 6 and 8
    assert year_cuts(years, (7, 1, 2), rel) == (6, 2, 2)  # 7 is 1 from both 6 and 8: the earlier
    assert year_cuts(years, (4, 3, 3), rel) == (3, 3, 4)  # 4 -> 3; 7 -> 6 (tie with 8)
    assert year_cuts(years, (2, 6, 2), rel) == (3, 5, 2)  # 2 -> 3; 8 stays
    with pytest.raises(DataError, match="between positions 9 and 9 of its 10 positives"):
        year_cuts(years, (8, 1, 1), rel)  # 8 stays, then test would need a change at 9


def test_ties_year_errors_name_the_relation(kg, matkg_schema):
    rel = matkg_schema.relation("chm_apl")
    with pytest.raises(DataError, match=r"chm_apl \(CHM-APL\): split.ties=year needs edge years and none of its 100"):
        temporal_split(_with_years(kg, np.full(100, -1)), rel, ties="year")
    with pytest.raises(DataError, match="split.ties=year needs a year change between positions"):
        temporal_split(_with_years(kg, np.repeat([2000, 2001], [95, 5])), rel, ties="year")
    with pytest.raises(DataError, match="split.ties='month'; expected one of shuffle, year"):
        temporal_split(kg, rel, ties="month")


def test_split_from_config_passes_every_option(kg, matkg_schema):
    rel = matkg_schema.relation("chm_apl")
    cfg = {"ratios": [7, 1, 2], "neg_ratio": 2, "seed": 3, "ties": "year"}
    a = split_from_config(kg, rel, cfg)
    b = temporal_split(kg, rel, (7, 1, 2), 2, 3, "year")
    assert a.pairs.equals(b.pairs) and a.ties == "year"
    assert split_from_config(kg, rel, {k: v for k, v in cfg.items() if k != "ties"}).ties == "shuffle"
