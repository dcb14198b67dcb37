"""Evaluation integrity: what a negative, a candidate and an answer may be (issue: leaks and unequal
comparisons). Each test fails on the code before the fix it names."""

import dataclasses

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp

from hygrail.data.split import known_nodes, temporal_split
from hygrail.data.subgraph import sample_subgraph
from hygrail.discovery.retro import future_edges
from hygrail.discovery.space import CandidateSpace
from hygrail.kg import KG, NO_YEAR, Relation

from conftest import CONF


def _kg(schema, n_chm=60, n_apl=40, n_edges=90, isolated=10, seed=0, undated=0):
    """CHM-APL edges among the first n_chm/n_apl nodes, plus ``isolated`` CHM and APL nodes with
    no edge at all (entities unknown to any method)."""
    rng = np.random.default_rng(seed)
    names = ([f"C{i}" for i in range(n_chm + isolated)] + [f"A{i}" for i in range(n_apl + isolated)])
    types = ["CHM"] * (n_chm + isolated) + ["APL"] * (n_apl + isolated)
    pairs = {(i, n_chm + isolated + i % n_apl) for i in range(n_chm)}  # every non-isolated node has an edge
    while len(pairs) < n_edges:
        pairs.add((int(rng.integers(n_chm)), n_chm + isolated + int(rng.integers(n_apl))))
    u, v = map(np.array, zip(*sorted(pairs)))
    years = rng.integers(2000, 2024, n_edges)
    years[rng.choice(n_edges, undated, replace=False)] = NO_YEAR
    edges = pl.DataFrame({"u": u, "v": v, "type": ["CHM-APL"] * n_edges, "count": rng.integers(1, 9, n_edges),
                          "year": years})
    return KG(schema, pl.DataFrame({"name": names, "type": types}), edges)


def test_negatives_come_only_from_nodes_the_candidate_space_holds(matkg_schema):
    """Item 1: an entity with no edge (unknown at a cutoff, or not drawn into a subgraph) is never
    an end of a sampled negative, in any split; before, 10 of 70 CHM and 10 of 50 APL nodes could be."""
    kg = _kg(matkg_schema)
    rel = matkg_schema.relation("chm_apl")
    isolated = np.flatnonzero(kg.degree == 0)
    assert len(isolated) == 20
    split = temporal_split(kg, rel, neg_ratio=20, seed=3)
    neg = split.pairs.filter(pl.col("label") == 0)
    assert neg.height == 20 * 90
    assert not np.isin(neg["src"].to_numpy(), isolated).any()
    assert not np.isin(neg["dst"].to_numpy(), isolated).any()
    space = CandidateSpace(kg, rel)
    has_edge = kg.degree > 0
    assert space.src.tolist() == [n for n in kg.nodes_of_type("CHM") if has_edge[n]]
    assert space.dst.tolist() == [n for n in kg.nodes_of_type("APL") if has_edge[n]]
    assert space.contains(neg["src"].to_numpy(), neg["dst"].to_numpy()).all()


def test_a_cutoff_graph_draws_negatives_among_entities_known_by_then(matkg_schema):
    kg = _kg(matkg_schema, isolated=0)
    known = kg.until(2010)
    split = temporal_split(known, matkg_schema.relation("chm_apl"), neg_ratio=5, seed=0)
    neg = split.pairs.filter(pl.col("label") == 0)
    assert (known.degree[neg["src"].to_numpy()] > 0).all() and (known.degree[neg["dst"].to_numpy()] > 0).all()
    assert (kg.until(2010).degree == 0).sum() > 0  # the cut really leaves entities unknown


def test_undated_edges_are_neither_candidates_nor_misses(matkg_schema):
    """Item 3: an observed link without a date is masked by the cutoff: not a candidate, not a
    negative, not a future answer, and counted. Before, it was a candidate labelled non-future."""
    kg = _kg(matkg_schema, n_edges=400, isolated=0, undated=12)
    rel = matkg_schema.relation("chm_apl")
    cut = 2015
    known = kg.until(cut)
    undated = kg.relation_edges(rel).filter(pl.col("year") == NO_YEAR)
    s, d = undated["src"].to_numpy(), undated["dst"].to_numpy()
    reachable = (known.degree[s] > 0) & (known.degree[d] > 0)
    assert reachable.sum() >= 3  # the case that used to leak: both ends known at the cutoff
    space = CandidateSpace(known, rel)
    assert not space.contains(s, d).any()
    src, dst = space.pairs()
    assert not np.isin(src * kg.num_nodes + dst, s * kg.num_nodes + d).any()
    n_known = len(known_nodes(known, "CHM")) * len(known_nodes(known, "APL"))
    assert space.size == len(src) == n_known - known.relation_edges(rel).height - int(reachable.sum())
    future = future_edges(kg, known, rel, cut)
    assert future.undated == int(reachable.sum())
    assert not np.isin(future.src * kg.num_nodes + future.dst, s * kg.num_nodes + d).any()
    split = temporal_split(known, rel, neg_ratio=3, seed=1)
    neg = split.pairs.filter(pl.col("label") == 0)
    assert not known.excluded(neg["src"].to_numpy(), neg["dst"].to_numpy()).any()
    assert not np.isin(neg["src"].to_numpy() * kg.num_nodes + neg["dst"].to_numpy(), s * kg.num_nodes + d).any()


def test_a_subgraph_for_a_cutoff_is_drawn_by_what_was_known_then(matkg_schema):
    """Item 8: with a cutoff the sampler draws its nodes by the cutoff graph (degrees, density, mix),
    not by degrees that include later edges; the subgraph still holds the later edges among them
    (the answers). Before, the cutoff was applied after a draw by full-graph degrees."""
    kg = _kg(matkg_schema, n_chm=300, n_apl=200, n_edges=2500, isolated=0)
    then = sample_subgraph(kg, 150, seed=1, cutoff=2012)
    by_then = set(sample_subgraph(kg.until(2012), 150, seed=1).names)
    assert set(then.names) == by_then
    assert set(sample_subgraph(kg, 150, seed=1).names) != by_then  # full-graph degrees draw other nodes
    assert then.edges.filter(pl.col("year") > 2012).height > 0


def _hierarchy_kg(schema):
    """One disease-like CHM node d linked to the specific term t3; terms t0 > t1 > t3 and t0 > t2
    (t0 the root) as APL nodes, with the is_a closure as ``ancestors``."""
    names = ["d", "e", "t0", "t1", "t2", "t3"]
    types = ["CHM", "CHM", "APL", "APL", "APL", "APL"]
    edges = pl.DataFrame({"u": [0, 1, 3, 4, 5], "v": [5, 4, 2, 2, 3], "type": ["CHM-APL"] * 2 + ["APL-APL"] * 3,
                          "count": 1, "year": [2001, 2002, NO_YEAR, NO_YEAR, NO_YEAR]})  # is_a edges: undated
    # [i, j]: j is a proper ancestor of i
    anc = sp.csr_matrix((np.ones(4), ([3, 4, 5, 5], [2, 2, 3, 2])), shape=(6, 6))
    return KG(schema, pl.DataFrame({"name": names, "type": types}), edges, ancestors=anc)


def test_ontology_ancestors_of_a_true_annotation_are_excluded_descendants_are_not(matkg_schema):
    kg = _hierarchy_kg(dataclasses.replace(matkg_schema, static=("APL-APL",)))
    # d - t3 implies d - t1 and d - t0; e - t2 implies e - t0; descendants (e - nothing below t2) stay
    assert kg.excluded(np.array([0, 0, 1, 0, 1]), np.array([3, 2, 2, 4, 3])).tolist() == [True, True, True, False, False]
    # t1 has is_a edges only (static): no term is known through them alone, so t1 is no candidate ...
    space = CandidateSpace(kg, matkg_schema.relation("chm_apl"))
    src, dst = space.pairs()
    assert sorted(zip(src.tolist(), dst.tolist())) == [(0, 4), (1, 5)]
    assert space.size == 2
    # ... unless the ontology says it was created (hp.obo's creation_date), by the graph's date
    created = KG(kg.schema, kg.nodes.with_columns(created=pl.Series([None, None, None, 2000, None, None], dtype=pl.Int32)),
                 kg.edges, ancestors=kg.ancestors)
    space = CandidateSpace(created, matkg_schema.relation("chm_apl"))
    assert sorted(zip(*(x.tolist() for x in space.pairs()))) == [(0, 4), (1, 3), (1, 5)]
    assert created.until(2000).known[3] and not created.until(1999).known[3]
    # the closure survives a cutoff: only what is annotated by then implies anything, and the
    # undated is_a edges of a static edge type stay in the graph among the terms of unknown creation date
    # (hp.obo's terms older than its creation_date tag: made at every date)
    old = KG(kg.schema, kg.nodes.with_columns(created=pl.Series([None] * 6, dtype=pl.Int32)), kg.edges,
             ancestors=kg.ancestors)
    then = old.until(2001)
    assert then.excluded(np.array([0, 1]), np.array([2, 2])).tolist() == [True, False]
    assert then.edges.filter(pl.col("type") == "APL-APL").height == 3 and then.masked.height == 0


def test_a_cutoff_keeps_only_the_ontology_of_its_date(matkg_schema):
    """Issue #45: at a cutoff, is_a edges and the implied-pair exclusions use only the terms created
    by then. t3 (child of t1) is created in 2003: cut at 2001, its is_a edge is gone and it is nobody's
    ancestor or descendant. Before, the 2025 release's hierarchy held at every date."""
    kg = _hierarchy_kg(dataclasses.replace(matkg_schema, static=("APL-APL",)))
    created = pl.Series([None, None, None, None, None, 2003], dtype=pl.Int32)  # t3 (node 5) created in 2003
    # d (0) is annotated to t3 only in 2004 here, so t3 is not made by 2001 through an edge either
    edges = kg.edges.with_columns(pl.when(pl.col("u") == 0).then(2004).otherwise(pl.col("year")).alias("year"))
    late = KG(kg.schema, kg.nodes.with_columns(created=created), edges, ancestors=kg.ancestors)
    then = late.until(2001)
    assert then.made_by(2001).tolist() == [True, True, True, True, True, False]
    isa = then.edges.filter(pl.col("type") == "APL-APL")
    assert sorted(zip(isa["u"].to_list(), isa["v"].to_list())) == [(2, 3), (2, 4)]  # t1-t0, t2-t0; not t3-t1
    assert then.ancestors[5].nnz == 0 and then.ancestors[:, 5].nnz == 0
    assert then.ancestors[3, 2] and then.ancestors[4, 2]  # the terms of 2001 keep their ancestry
    assert then.masked.height == 0  # a dropped is_a edge is no withheld link
    # by 2003 t3 exists: its is_a edge and ancestry are back
    now = late.until(2003)
    assert now.edges.filter(pl.col("type") == "APL-APL").height == 3 and now.ancestors[5, 3] and now.ancestors[5, 2]


def test_the_triage_cache_key_covers_the_years_and_names_a_backbone_reads(matkg_schema):
    """Item 4: the plus backbones read edge years (node inputs) and node names (name embeddings, the
    head's name similarity): changing either changes their key. The paper backbones read neither,
    so their key (and their cached scores) stay. Before, both kinds ignored years and names."""
    from omegaconf import OmegaConf

    from hygrail.triage.train import cache_key, plain_config

    kg = _kg(matkg_schema, isolated=0)
    rel = matkg_schema.relation("chm_apl")
    shifted = KG(kg.schema, kg.nodes, kg.edges.with_columns(pl.col("year") + 10))
    renamed = KG(kg.schema, kg.nodes.with_columns(pl.col("name").reverse()), kg.edges)
    splits = [temporal_split(g, rel, neg_ratio=2, seed=0) for g in (kg, shifted, renamed)]
    # the shifted years keep the order, so all three splits hold the same pairs (the key hashes no year of a pair)
    assert all(s.pairs.drop("year").equals(splits[0].pairs.drop("year")) for s in splits)
    for name, moves in (("rgcn_plus", True), ("heteroconv_plus", True), ("rgcn", False), ("hgt", False)):
        cfg = plain_config(OmegaConf.load(CONF / f"backbone/{name}.yaml"))
        keys = {cache_key(s, cfg, 42) for s in splits}
        assert len(keys) == (3 if moves else 1), name
    no_names = plain_config(OmegaConf.load(CONF / "backbone/rgcn_plus.yaml")) | {"names": None}
    assert cache_key(splits[0], no_names, 42) == cache_key(splits[2], no_names, 42) != cache_key(splits[1], no_names, 42)


def test_reviews_that_fell_back_are_named_beside_the_method(tmp_path):
    """Item 5: a cell whose reviews partly gave no usable verdict (decided by the GNN fallback) says
    so in its metrics, its MLflow tag, its result line and its Table 2 row; the default limit
    (0.05) stops a cell with more. Before, up to half could fail under the plain HyGRAIL label."""
    from hydra import compose, initialize_config_dir

    from hygrail import tracking
    from hygrail.pipeline import run_cell
    from hygrail.report import load_runs, table2
    from hygrail.review.contract import LLMCallError
    from hygrail.sweep import result_line
    from scripted_server import Reply, ScriptedServer, ok_review

    def cfg(out, url):
        with initialize_config_dir(str(CONF), version_base="1.3"):
            return compose("config", overrides=[
                "data.scale=0.5", "backbone=rgcn", "backbone.epochs=4", "backbone.val_every=2", "relation=chm_apl",
                "routing.m=0.995", "routing.n=0.9", "method=hygrail", "evidence=none", "method.review_budget.val=10",
                "method.review_budget.test=10", "llm=scripted", f"llm.base_url={url}", f"paths.outputs={out}"])

    with ScriptedServer(default=Reply(ok_review("no", 0.1))) as server:
        run_cell(cfg(tmp_path / "a", server.base_url))
        prompts = [r["messages"][-1]["content"] for r in server.requests]
    assert len(prompts) == 20
    with ScriptedServer(default=Reply(ok_review("no", 0.1))) as server:
        server.script(prompts[0], Reply("not json"))
        c = cfg(tmp_path / "b", server.base_url)
        res = run_cell(c)
        server.script(prompts[1], Reply("not json"))
        with pytest.raises(LLMCallError, match=r"2 of 20 reviews .* over method.max_review_failure_rate=0.05"):
            run_cell(cfg(tmp_path / "c", server.base_url))
    assert res.metrics["review_fallback_share"] == pytest.approx(0.05)
    assert res.tags["review_fallback"] == "5% of reviews fell back"
    assert result_line("chm_apl rgcn HyGRAIL-NE", res.metrics, "r1").startswith(
        "chm_apl rgcn HyGRAIL-NE (5% of reviews fell back): ")
    tracking.log_cell(c, res, None)
    text, _ = table2(load_runs(c.tracking.uri, [c.tracking.experiment]))
    assert "| HyGRAIL-NE‡ (5% of reviews fell back) |" in text


def test_discovery_sets_gamma_on_validation_hypotheses_where_the_reviewed_candidates_lie():
    """Item 7: discovery reviews the best-scored band candidates (near b*), so gamma is chosen on the
    routed validation hypotheses nearest their score range, not on those nearest the GNN threshold."""
    from hygrail.discovery.reviewing import like_reviewed

    scores = np.array([0.05, 0.31, 0.35, 0.52, 0.58, 0.61, 0.64, 0.66, 0.69, 0.72, 0.95])
    routed = (scores > 0.2) & (scores < 0.9)  # the band: indices 1..9
    reviewed = np.array([0.60, 0.65, 0.70])  # candidates' GNN probabilities, top of the band
    assert like_reviewed(scores, routed, reviewed, 4, seed=0).tolist() == [5, 6, 7, 8]  # inside [0.60, 0.70]
    assert like_reviewed(scores, routed, reviewed, 6, seed=0).tolist() == [4, 5, 6, 7, 8, 9]  # then 0.58 and 0.72
    picks = {tuple(like_reviewed(scores, routed, reviewed, 2, seed=s)) for s in range(20)}
    assert len(picks) > 1 and all(set(p) <= {5, 6, 7, 8} for p in picks)  # ties inside: a seeded sample
    assert like_reviewed(scores, routed, reviewed, None, seed=0).tolist() == list(range(1, 10))


def test_graph_cut_time_removes_every_dated_edge_from_the_validation_and_test_starts():
    """Item 6: ``split.graph_cut=time`` cuts every edge type at the validation start for training
    and at the test start for test scoring; ``relation`` (the paper's) keeps them."""
    from hygrail.data import data_config, load_kg

    kg = load_kg(data_config(scale=0.5))
    rel = kg.schema.relation("chm_dsc")
    paper = temporal_split(kg, rel, neg_ratio=5, seed=0)
    cut = temporal_split(kg, rel, neg_ratio=5, seed=0, graph_cut="time")
    assert cut.pairs.equals(paper.pairs) and paper.test_graph is None and paper.graph("test") is paper.train_graph
    pos = cut.pairs.filter(pl.col("label") == 1)
    val_start = pos.filter(pl.col("split") == "val")["year"].min()
    test_start = pos.filter(pl.col("split") == "test")["year"].min()
    target = kg.schema.edge_type(rel.src, rel.dst)

    def other(g):
        return g.edges.filter((pl.col("type") != target) & (pl.col("year") != NO_YEAR))

    assert other(paper.train_graph)["year"].max() >= test_start  # the paper's graph holds test-period edges
    assert other(cut.train_graph)["year"].max() < val_start
    assert other(cut.graph("test"))["year"].max() < test_start
    # everything older stays: the cuts remove exactly the late edges of other types
    assert other(cut.train_graph).height == other(paper.train_graph).filter(pl.col("year") < val_start).height
    assert other(cut.test_graph).height == other(kg).filter(pl.col("year") < test_start).height
    # the test graph knows the validation positives, never a test positive
    val_pos = pos.filter(pl.col("split") == "val")
    test_pos = pos.filter(pl.col("split") == "test")
    assert cut.test_graph.has_edges(val_pos["src"].to_numpy(), val_pos["dst"].to_numpy()).all()
    assert not cut.test_graph.has_edges(test_pos["src"].to_numpy(), test_pos["dst"].to_numpy()).any()
    assert not cut.train_graph.has_edges(val_pos["src"].to_numpy(), val_pos["dst"].to_numpy()).any()
    with pytest.raises(Exception, match="graph_cut='later'"):
        temporal_split(kg, rel, neg_ratio=5, seed=0, graph_cut="later")


def test_graph_cut_time_scores_test_on_the_test_graph_and_labels_its_rows(tmp_path):
    """A GNN and TSH under the time cut score test on ``Split.test_graph``, and the run's label and
    tags say which cut it used."""
    from hydra import compose, initialize_config_dir

    from hygrail import tracking
    from hygrail.baselines.tsh import fit_on_validation, score_pairs
    from hygrail.descriptors import pair_features
    from hygrail.pipeline import run_cell
    from hygrail.stages import build_split

    def cfg(*extra):
        with initialize_config_dir(str(CONF), version_base="1.3"):
            return compose("config", overrides=["data.scale=0.5", "relation=chm_dsc", "backbone=rgcn",
                                                "backbone.epochs=4", "backbone.val_every=2", "method=gnn_only",
                                                f"paths.outputs={tmp_path}", *extra])

    paper, timed = cfg(), cfg("split.graph_cut=time")
    assert tracking.method_label(paper) == "GNN" and tracking.method_label(timed) == "GNN (time cut)"
    a, b = run_cell(paper), run_cell(timed)
    assert b.tags["split_graph_cut"] == "time" and a.tags["split_graph_cut"] == "relation"
    assert a.metrics["gnn_test_f1"] != b.metrics["gnn_test_f1"]
    _, split = build_split(timed)
    from hygrail.triage.train import build_module, plain_config

    module, batches, _ = build_module(split, plain_config(timed.backbone))
    graph_edges = sum(module.test_graph[t].edge_index.shape[1] for t in module.test_graph.edge_types)
    assert graph_edges == 2 * split.test_graph.num_edges != sum(
        module.graph[t].edge_index.shape[1] for t in module.graph.edge_types)
    tsh_cfg = {"embedding": False, "max_hops": 3, "classifier": {"kind": "logistic"}}
    from hygrail.baselines.tsh import tsh_scores

    res = tsh_scores(split, tsh_cfg)
    model, _ = fit_on_validation(split, tsh_cfg)
    test = split.part("test")
    on_test_graph = score_pairs(model, pair_features(split.test_graph, test["src"].to_numpy(), test["dst"].to_numpy(), tsh_cfg))
    np.testing.assert_allclose(res.test, on_test_graph)
    assert not np.allclose(res.test, score_pairs(model, pair_features(split.train_graph, test["src"].to_numpy(),
                                                                      test["dst"].to_numpy(), tsh_cfg)))


def test_static_edges_do_not_make_a_node_known_at_a_cutoff():
    """Issue #34 item 2: compositions (static edges) describe a target at any date, but a target first
    made after the cutoff must not be a candidate then: the recipes hold no composition that was never
    made, so "described only by static edges" alone ranked the 2014 answers at AUC 0.811."""
    from hygrail.discovery.retro import future_edges
    from hygrail.kg import Schema

    rel = Relation("tp", "T", "P")
    schema = Schema(("T", "P", "E"), {"tp": rel}, static=("T-E", "P-E"))
    nodes = pl.DataFrame({"name": ["T0", "T1", "P0", "P1", "Ba", "O"], "type": ["T", "T", "P", "P", "E", "E"]})
    edges = pl.DataFrame({"u": [0, 0, 1, 1, 1, 2, 3, 3], "v": [2, 4, 4, 5, 3, 4, 4, 5],
                          "type": ["T-P", "T-E", "T-E", "T-E", "T-P", "P-E", "P-E", "P-E"], "count": 1,
                          "year": [2008, NO_YEAR, NO_YEAR, NO_YEAR, 2012, NO_YEAR, NO_YEAR, 2009]})
    kg = KG(schema, nodes, edges)
    cut = kg.until(2010)
    assert cut.known.tolist() == [True, False, True, False, False, False]
    # issue #54: T1 (first made 2012) and P1 (first used 2012) are not in the cut graph, nor their compositions;
    # they are withheld, and a description supplies T1's one way, still not known (no candidate row)
    assert cut.degree[1] == 0 and cut.degree[3] == 0 and cut.withheld.height == 4
    described = cut.describe([1])
    assert described.degree[1] == 2 and not described.known[1] and described.degree[4] == cut.degree[4]
    space = CandidateSpace(cut, rel)
    assert space.src.tolist() == [0] and space.dst.tolist() == [2] and space.size == 0
    future = future_edges(kg, cut, rel, 2010)
    assert len(future.src) == 0 and future.unreachable == 1  # T1-P1: to a target made after the cutoff
    assert kg.until(2012).known[[1, 3]].tolist() == [True, True]


def test_entities_first_known_after_the_cutoff_are_the_cold_start_row(matkg_schema):
    """A source first known after the cutoff, to a known destination, is a new entity whether the cut
    graph describes it by a static edge (a target's composition) or by nothing but its name (a
    disease first annotated later); an edge to an unknown destination is unreachable."""
    schema = dataclasses.replace(matkg_schema, static=("CHM-PRO",))
    names = ["a", "b", "c", "p", "q", "r", "x"]
    types = ["CHM", "CHM", "CHM", "APL", "APL", "APL", "PRO"]
    edges = pl.DataFrame({"u": [0, 1, 0, 1, 2, 0, 0], "v": [3, 6, 4, 3, 3, 5, 6],
                          "type": ["CHM-APL", "CHM-PRO", "CHM-APL", "CHM-APL", "CHM-APL", "CHM-APL", "CHM-PRO"],
                          "count": 1, "year": [2000, NO_YEAR, 2003, 2004, 2005, 2006, NO_YEAR]})
    kg = KG(schema, pl.DataFrame({"name": names, "type": types}), edges)
    known = kg.until(2001)
    assert known.known[[0, 3]].all() and not known.known[[1, 2, 4, 5]].any()
    f = future_edges(kg, known, schema.relation("chm_apl"), 2001)
    assert f.src.tolist() == [] and f.unreachable == 4  # a-q, b-p, c-p, a-r: an end unknown at 2001
    # b (its static edge only) and c (nothing but its name) are new entities with the known p
    assert sorted(zip(f.new_src.tolist(), f.new_dst.tolist(), f.new_year.tolist())) == [(1, 3, 2004), (2, 3, 2005)]
