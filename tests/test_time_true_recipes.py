"""A recipes graph as of its cutoff (issue #54 item 2): a material and its composition enter the cut graph in
the material's first recorded year; a material asked about or scored after the cutoff gets its composition at
scoring time only, one way (``KG.describe``): it reads the graph, the graph does not see it."""

import numpy as np
import polars as pl
import torch

from hygrail.data.split import held_out_rows, temporal_split
from hygrail.kg import Schema
from hygrail.triage import features, train
from test_compositions import RECIPES, planted_recipes

STATIC = Schema(RECIPES.node_types, RECIPES.relations, static=("Target-Element", "Precursor-Element"))


def _recipes():
    kg = planted_recipes(n_targets=48, seed=3)
    return type(kg)(STATIC, kg.nodes, kg.edges)


def _elements(kg, node):
    partners = kg.neighbors(node)[0]
    return partners[kg.node_types[partners] == kg.schema.node_types.index("Element")]


def test_the_cut_graph_holds_only_the_compositions_of_materials_made_by_then():
    kg = _recipes()
    cut = kg.until(2008)
    rel = kg.relation_edges(RECIPES.relations["syn_tgt_pre"])
    first = rel.group_by("src").agg(pl.col("year").min())
    made = set(first.filter(pl.col("year") <= 2008)["src"].to_list())
    later = set(first.filter(pl.col("year") > 2008)["src"].to_list())
    assert made and later
    te = cut.edges.filter(pl.col("type") == "Target-Element")
    holders = set(np.where(np.isin(te["u"].to_numpy(), kg.nodes_of_type("Target")), te["u"], te["v"]).tolist())
    assert holders == made  # every made target keeps its composition, no later one has any
    assert all(cut.degree[t] == 0 for t in later)
    # what was left out is kept aside, with its original count and year, for describe
    w = cut.withheld.filter(pl.col("type") == "Target-Element")
    assert set(np.where(np.isin(w["u"].to_numpy(), kg.nodes_of_type("Target")), w["u"], w["v"]).tolist()) == later
    # elements (only static edges) are timeless; a precursor first used later has no composition either
    assert cut.made_by(2008)[kg.nodes_of_type("Element")].all()


def test_a_described_material_reads_the_graph_and_the_graph_does_not_see_it():
    kg = _recipes()
    cut = kg.until(2008)
    later = [int(t) for t in kg.nodes_of_type("Target") if cut.degree[t] == 0 and not cut.known[t]]
    described = cut.describe(later)
    assert described.supplied.tolist() == sorted(later)
    for t in later:  # its own row holds its composition, dated at the cut graph's date, count 1
        assert set(described.neighbors(t)[0].tolist()) == set(_elements(kg, t).tolist())
    new = described.edges.filter(pl.col("u").is_in(later) | pl.col("v").is_in(later))
    assert (new["year"] == 2008).all() and (new["count"] == 1).all()
    others = np.setdiff1d(np.arange(kg.num_nodes), later)
    np.testing.assert_array_equal(described.degree[others], cut.degree[others])
    assert not described.known[later].any()  # a description does not make a node known: no candidate row
    np.testing.assert_array_equal(described.adjacency[others][:, others].toarray(), cut.adjacency[others][:, others].toarray())
    # the GNN's inputs and states of every other node are the cut graph's; the described ones get states
    x_cut, x_desc = features.node_statistics(cut), features.node_statistics(described)
    np.testing.assert_allclose(x_desc[others], x_cut[others], rtol=0, atol=0)
    cfg = {"name": "rgcn_plus", "bases": 4, "hidden": 16, "mlp_hidden": [16, 8], "folds": 2, "epochs": 1}
    states = []
    for g in (cut, described):
        torch.manual_seed(0)
        backbone, hetero = train.build_backbone(g, RECIPES.relations["syn_tgt_pre"], cfg)
        with torch.no_grad():
            z = backbone.encode(hetero)
        local = hetero.local_index
        states.append(lambda nodes, z=z, local=local, g=g: torch.stack(
            [(z[g.type_of(i)] if isinstance(z, dict) else z)[local[i] if isinstance(z, dict) else i] for i in nodes]))
    z_cut, z_desc = states
    torch.testing.assert_close(z_desc(others), z_cut(others), rtol=0, atol=0)
    assert not torch.allclose(z_desc(later), z_cut(later))
    # cutting the described graph cuts it without the descriptions
    assert described.until(2005).edges.equals(cut.until(2005).edges)


def test_a_cold_row_of_the_stack_reads_its_sources_composition_at_its_date():
    kg = _recipes().until(2019)
    split = temporal_split(kg, RECIPES.relations["syn_tgt_pre"], neg_ratio=1, seed=0)
    rows, graphs = held_out_rows(split)
    cold = rows.filter(pl.col("population") == "cold")
    assert cold.height
    g = graphs["val"]
    for src in np.unique(cold["src"].to_numpy()):
        assert not g.known[src] and set(g.neighbors(src)[0].tolist()) == set(_elements(kg, src).tolist())
    assert set(g.supplied.tolist()) == set(np.unique(cold["src"].to_numpy()).tolist())
