"""New compositions (hygrail/discovery/compositions.py): formulas parse or fail naming the token, a
new target gets composition edges only and a row of the candidate space, the most similar known
targets and their recorded precursors by hand, the GNN scores the new node over the graph with it
(its name embedded by the same encoder), a discovery run writes its section and every named target's
recorded precursors (with discover.entities_only too, identically), and with a cutoff a target
first made after it is ranked on its own node with its later answers marked."""

import json

import numpy as np
import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from conftest import CONF, named_kg
from hygrail import names as name_cache
from hygrail.data.split import temporal_split
from hygrail.discovery import compositions, entities
from hygrail.discovery.scoring import GNNBlocks
from hygrail.discovery.space import CandidateSpace, ranking
from hygrail.kg import DataError, Relation, Schema
from hygrail.triage import train
from hygrail.triage.routing import Band

RECIPES = Schema(("Target", "Precursor", "Element"), {"syn_tgt_pre": Relation("syn_tgt_pre", "Target", "Precursor")})
OPTIONS = {"compositions": {"of": "Target", "via": "Element", "similar_k": 3}, "entity_k": 20}
ELEMENTS = {"LiFeTiO4": "Li Fe Ti O", "Li1-xFexTiO2": "Li Fe Ti O", "Li4Ti5O12": "Li Ti O", "Li2FeSiO4": "Li Fe Si O",
            "BaTiO3": "Ba Ti O", "Li2CO3": "Li C O", "Fe2O3": "Fe O", "TiO2": "Ti O", "FeC2O4": "Fe C O",
            "SiO2": "Si O", "LiOH": "Li O H", "BaCO3": "Ba C O"}
TARGETS = ("LiFeTiO4", "Li1-xFexTiO2", "Li4Ti5O12", "Li2FeSiO4", "BaTiO3")
USED = [("LiFeTiO4", "TiO2", 5), ("LiFeTiO4", "Li2CO3", 3), ("LiFeTiO4", "Fe2O3", 1), ("Li1-xFexTiO2", "LiOH", 1),
        ("Li1-xFexTiO2", "Fe2O3", 1), ("Li1-xFexTiO2", "TiO2", 1), ("Li4Ti5O12", "Li2CO3", 1), ("Li4Ti5O12", "TiO2", 1),
        ("Li2FeSiO4", "Li2CO3", 1), ("Li2FeSiO4", "FeC2O4", 1), ("Li2FeSiO4", "SiO2", 1), ("BaTiO3", "BaCO3", 1),
        ("BaTiO3", "TiO2", 1)]


def recipes_kg():
    symbols = sorted({x for v in ELEMENTS.values() for x in v.split()})
    nodes = [(m, "Target" if m in TARGETS else "Precursor") for m in ELEMENTS] + [(x, "Element") for x in symbols]
    return named_kg(RECIPES, nodes, [(m, x, 1) for m, v in ELEMENTS.items() for x in v.split()] + USED)


def test_formulas_parse_or_name_the_offending_token():
    assert dict(compositions.parse("Li2FeTiO4").amounts) == {"Li": 2, "Fe": 1, "Ti": 1, "O": 4}
    assert dict(compositions.parse("Ca3(PO4)2").amounts) == {"Ca": 3, "P": 2, "O": 8}
    assert dict(compositions.parse(" LiNi0.5Mn1.5O4 ").amounts) == {"Li": 1, "Ni": 0.5, "Mn": 1.5, "O": 4}
    assert compositions.parse("Li2FeTiO4").elements == ("Fe", "Li", "O", "Ti")
    for text, why in [("Li2FeTiXx4", "'Xx' (character 8) is not a chemical element"),
                      ("Bariumtitanate", "'riumtitanate' (character 3) is no element symbol, amount or bracket"),
                      ("Ba1-xSrxTiO3", "'-' (character 4) is no element symbol, amount or bracket"),
                      ("Ca3(PO4", "a bracket is never closed"), ("2Li", "'2' (character 1) is an amount of nothing")]:
        with pytest.raises(ValueError) as e:
            compositions.parse(text)
        assert str(e.value) == why


def test_new_compositions_are_told_apart_from_names_and_bad_ones_fail_in_one_line():
    kg = recipes_kg()
    space = CandidateSpace(kg, RECIPES.relations["syn_tgt_pre"])
    named, new = compositions.options(OPTIONS | {"entities": ["lifetio4", 3, "Li2FeTiO4", "Li2FeTiO4"]}, space)
    assert named == ["lifetio4", 3] and [f.text for f in new] == ["Li2FeTiO4"]  # once, however often named
    with pytest.raises(DataError) as bad:  # neither a name (closest names, quoting) nor a formula (its token)
        compositions.options(OPTIONS | {"entities": ["Li2FeTiXx4"]}, space)
    assert str(bad.value).startswith("discover.entities: no Target or Precursor is named 'Li2FeTiXx4'; closest: ")
    assert str(bad.value).endswith("; nor is it a new composition: 'Xx' (character 8) is not a chemical element")
    with pytest.raises(DataError) as absent:
        compositions.options(OPTIONS | {"entities": ["UO2"]}, space)
    assert str(absent.value).endswith("nor is it a new composition: 'U' is no Element of the graph (no material of "
                                      "it is recorded)")
    assert all("\n" not in str(e.value) for e in (bad, absent))
    # without compositions in the schema (HPO, MatKG) every value is a name, as before
    assert compositions.options({"entities": ["Li2FeTiO4"]}, space) == (["Li2FeTiO4"], [])
    with pytest.raises(DataError, match=r"^discover.compositions.of='Precursor': a new composition is a source"):
        compositions.options(OPTIONS | {"compositions": {"of": "Precursor", "via": "Element", "similar_k": 3}}, space)
    with pytest.raises(DataError, match=r"^discover.entities: 'Li2FeTiO4' is a new composition; backbone=rgcn learns"):
        compositions.check_backbone({"name": "rgcn"}, new)
    compositions.check_backbone({"name": "rgcn_plus"}, new)


def test_a_new_target_gets_composition_edges_only_and_a_row_of_the_space():
    kg = recipes_kg().until(2005)
    graph, ids = compositions.with_targets(kg, [compositions.parse("Li2FeTiO4")], "Target", "Element")
    (node,) = ids
    assert node == kg.num_nodes and graph.num_nodes == kg.num_nodes + 1
    assert (graph.label(node), graph.type_of(node)) == ("Li2FeTiO4", "Target")
    assert graph.names[:kg.num_nodes] == kg.names  # every other node keeps its id
    partners, edges = graph.neighbors(node)
    assert sorted(graph.label(p) for p in partners) == ["Fe", "Li", "O", "Ti"]
    assert set(graph.edges[edges.tolist()]["type"]) == {"Target-Element"}
    assert graph.edges[edges.tolist()]["year"].to_list() == [2005] * 4  # dated at the graph's date (the cutoff)
    assert graph.edges[edges.tolist()]["count"].to_list() == [1] * 4
    before, after = CandidateSpace(kg, RECIPES.relations["syn_tgt_pre"]), CandidateSpace(graph, RECIPES.relations["syn_tgt_pre"])
    assert after.src.tolist() == before.src.tolist() + [node] and after.size == before.size + len(before.dst)
    assert graph.known[:kg.num_nodes].tolist() == kg.known.tolist()


def test_a_target_known_only_by_its_composition_is_ranked_on_its_own_node():
    """With a cutoff, a target first made after it is not in the cut graph, nor its composition (issue
    #54): named, it is a new composition on its own node, its composition supplied then, made known in
    the ranking's graph only."""
    schema = Schema(RECIPES.node_types, RECIPES.relations, static=("Target-Element", "Precursor-Element"))
    kg = recipes_kg()
    late = kg.edges["u"].is_in([kg.node_id("Target", "Li2FeSiO4")]) & (kg.edges["type"] == "Target-Precursor")
    kg = type(kg)(schema, kg.nodes, kg.edges.with_columns(pl.when(late).then(2010).otherwise(pl.col("year")).alias("year")))
    cut = kg.until(2005)
    space = CandidateSpace(cut, RECIPES.relations["syn_tgt_pre"])
    node = cut.node_id("Target", "Li2FeSiO4")
    withheld = cut.withheld.filter((pl.col("u") == node) | (pl.col("v") == node))
    assert node not in space.src and cut.degree[node] == 0 and withheld.height == 4
    named, (formula,) = compositions.options(OPTIONS | {"entities": ["Li2FeSiO4", "LiFeTiO4"]}, space)
    assert named == ["LiFeTiO4"] and (formula.node, formula.elements) == (node, ("Fe", "Li", "O", "Si"))
    assert dict(formula.amounts) == {"Li": 2, "Fe": 1, "Si": 1, "O": 4}
    graph, ids = compositions.with_targets(cut, [formula, compositions.parse("Li2FeTiO4")], "Target", "Element")
    assert ids == [node, cut.num_nodes] and graph.num_nodes == cut.num_nodes + 1
    assert graph.num_edges == cut.num_edges + 8  # the named one's composition, supplied now, and the added one's
    assert graph.known[node] and not cut.known[node]
    assert node in CandidateSpace(graph, RECIPES.relations["syn_tgt_pre"]).src


def test_most_similar_known_targets_and_what_they_record():
    kg = recipes_kg()
    rel = RECIPES.relations["syn_tgt_pre"]
    near = compositions.similar(kg, compositions.parse("Li2FeTiO4"), rel, "Element", 3)
    # Jaccard of element sets; of the two with all four elements the one whose name parses comes first, by
    # its atom fractions' L1 distance: |2/8 - 1/7| + 2 |1/8 - 1/7| + |4/8 - 4/7| = 3/14
    assert near["target"].to_list() == ["LiFeTiO4", "Li1-xFexTiO2", "Li4Ti5O12"]
    assert near["jaccard"].to_list() == pytest.approx([1.0, 1.0, 0.75])
    assert near["stoichiometry_l1"][0] == pytest.approx(3 / 14) and near["stoichiometry_l1"][1] is None
    rec = compositions.recorded(kg, kg.node_id("Target", "LiFeTiO4"), rel)
    assert rec["partner"].to_list() == ["TiO2", "Li2CO3", "Fe2O3"] and rec["references"].to_list() == [5, 3, 1]
    # a precursor's record: its targets, cut to k in the section with how many there are
    head, table = compositions.recorded_part(kg, entities.Entity(kg.node_id("Precursor", "TiO2"), "TiO2", "Precursor"),
                                             rel, "target material", 2)
    assert head == "Recorded in the graph (4; edges, so not ranked as candidates; the 2 most referenced shown)"
    assert table.columns == ["target material", "id", "mark", "references", "year"]
    assert table["target material"].to_list() == ["LiFeTiO4", "BaTiO3"] and set(table["mark"]) == {"recorded"}


@pytest.fixture
def stub_names(monkeypatch):
    """A sentence encoder that remembers what it was asked, with a fixed vector per name."""
    seen = []

    class Stub:
        def encode(self, names, **kwargs):
            seen.extend(names)
            vec = np.array([[len(n), sum(map(ord, n)) % 7 + 1, 1.0] for n in names], dtype=np.float32)
            return vec / np.linalg.norm(vec, axis=1, keepdims=True)

    monkeypatch.setattr(name_cache, "encoder", lambda model: Stub())
    monkeypatch.setattr(name_cache, "_EMBEDDINGS", {})
    return seen


def planted_recipes(n_targets: int = 48, seed: int = 0):
    """A recipes-like KG big enough to train on: each target made from the precursors of its metals
    (plus a carbonate-free oxide), dated 2000-2019, with its composition."""
    rng = np.random.default_rng(seed)
    metals = ["Li", "Fe", "Ti", "Ba", "Sr", "Co", "Mn", "Ni"]
    precursor = {"Li": "Li2CO3", "Fe": "Fe2O3", "Ti": "TiO2", "Ba": "BaCO3", "Sr": "SrCO3", "Co": "Co3O4",
                 "Mn": "MnO2", "Ni": "NiO"}
    targets = {}
    while len(targets) < n_targets:
        ms = sorted(rng.choice(metals, size=rng.integers(2, 4), replace=False).tolist())
        name = "".join(f"{m}{rng.integers(1, 4)}" for m in ms) + f"O{rng.integers(2, 9)}"
        targets.setdefault(name, ms)
    nodes = [(t, "Target") for t in targets] + [(p, "Precursor") for p in precursor.values()] + \
            [(e, "Element") for e in metals + ["C", "O"]]
    edges = [(t, m, 1) for t, ms in targets.items() for m in ms + ["O"]]
    edges += [(p, e, 1) for m, p in precursor.items() for e in {m, "O"} | ({"C"} if "CO3" in p else set())]
    edges += [(t, precursor[m], int(rng.integers(1, 4))) for t, ms in targets.items() for m in ms]
    kg = named_kg(RECIPES, nodes, edges)
    years = rng.integers(2000, 2020, kg.num_edges)
    kg.edges = kg.edges.with_columns(pl.Series("year", years, dtype=pl.Int32))
    return kg


def test_the_gnn_scores_the_new_node_over_the_graph_with_it(stub_names, tmp_path):
    kg = planted_recipes()
    split = temporal_split(kg, RECIPES.relations["syn_tgt_pre"], neg_ratio=1)
    cfg = {"name": "rgcn_plus", "bases": 4, "hidden": 16, "mlp_hidden": [16, 8], "folds": 2, "epochs": 2,
           "val_every": 1, "select_on": "ap", "lr": 1e-2, "names": "stub", "head_folds": 0}
    trained = train.triage_scores(split, cfg, 1, tmp_path)
    graph, (node,) = compositions.with_targets(kg, [compositions.parse("Li2FeTiO4")], "Target", "Element")
    scorer = train.load_scorer(split, cfg, 1, tmp_path, graph=graph)  # the cached model, over the graph with the node
    assert train.triage_scores(split, cfg, 1, tmp_path).key == trained.key  # the split never saw it: same model
    assert "Li2FeTiO4" in stub_names  # the new name went through the same encoder
    hetero = scorer.module.graph
    assert hetero["Target"].num_nodes == len(kg.nodes_of_type("Target")) + 1
    x = hetero["Target"].x[hetero.local_index[node]].numpy()
    np.testing.assert_allclose(x[-3:], name_cache.embed_names(["Li2FeTiO4"], "stub")[0], rtol=1e-6)
    # its state comes from its composition edges: without them (the node alone) it differs
    alone, _ = compositions.with_targets(kg, [compositions.parse("Li2FeTiO4")], "Target", "Element")
    alone.edges = alone.edges.filter((pl.col("u") != node) & (pl.col("v") != node))
    alone = type(alone)(alone.schema, alone.nodes, alone.edges)
    z_alone = train.load_scorer(split, cfg, 1, tmp_path, graph=alone).z["Target"][hetero.local_index[node]]
    assert not np.allclose(scorer.z["Target"][hetero.local_index[node]].numpy(), z_alone.numpy())
    # its candidates are every precursor; the section's list is the brute-force ranking of their logits
    space = CandidateSpace(graph, split.relation)
    e = entities.Entity(node, "Li2FeTiO4", "Target")
    got = entities.rank_entity(space, GNNBlocks(scorer, space), Band(0.2, 0.6, True, True), e, 5, seed=1)
    dst = space.dst
    logits = scorer.logits(np.full(len(dst), node), dst)
    assert got.candidates == len(dst) == 8
    assert got.table["id"].to_list() == dst[ranking(logits, np.full(len(dst), node), dst, 1)[:5]].tolist()


def csv_overrides(kg, tmp_path) -> list[str]:
    """``kg`` as the CSV files of data=csv with the recipes' schema, and a small fast discovery config."""
    folder = tmp_path / "kg"
    folder.mkdir()
    kg.nodes.select(pl.col("id"), "name", "type").write_csv(folder / "nodes.csv")
    kg.edges.select(pl.col("u").alias("src"), pl.col("v").alias("dst"), "type", "count", "year").write_csv(
        folder / "edges.csv")
    return ["task=discover", "data=csv", f"data.path={folder}", "data/schema=synthesis_recipes",
            "relation=syn_tgt_pre", "backbone=rgcn_plus", "backbone.names=stub", "backbone.hidden=16",
            "backbone.mlp_hidden=[16,8]", "backbone.folds=2", "backbone.epochs=2", "backbone.head_folds=0",
            "split.neg_ratio=1", "discover.top_k=5", "discover.review_budget.val=0",
            "discover.review_budget.candidates=0", "discover.review_budget.test=0", "discover.tsh.embedding=false",
            "discover.entity_k=4", "discover.entity_cards=2", "discover.compositions.similar_k=2",
            "discover.entity_baselines=[relation_popularity,paths3]", f"paths.outputs={tmp_path}"]


def test_with_a_cutoff_a_target_made_after_it_is_ranked_with_its_answers(tmp_path, stub_names):
    kg = planted_recipes()
    cut = type(kg)(Schema(RECIPES.node_types, RECIPES.relations, static=("Target-Element", "Precursor-Element")),
                   kg.nodes, kg.edges).until(2004)
    late = next(int(i) for i in kg.nodes_of_type("Target") if not cut.known[i])  # made after 2004
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=csv_overrides(kg, tmp_path) + ["discover.cutoff=2004", "discover.ks=[5]",
                                                                           "discover.shortlist=null"])
    cfg.discover.entities = [kg.label(late)]
    from hygrail.discovery.run import discover

    (lst,) = discover(cfg).entities.lists
    assert lst.entity.node == late and lst.candidates == 8
    assert lst.parts[0][0].startswith(f"New composition: '{kg.label(late)}' is a Target of the graph known only by "
                                      f"its composition")
    rel = kg.relation_edges(RECIPES.relations["syn_tgt_pre"]).filter(pl.col("src") == late)
    answers = dict(zip(rel["dst"].to_list(), rel["year"].to_list()))  # all after the cutoff
    assert min(answers.values()) > 2004
    assert lst.table["future_year"].to_list() == [answers.get(p) for p in lst.table["id"].to_list()]
    assert lst.table["future_year"].is_not_null().any()  # its answers are marked where listed


def test_a_discovery_run_writes_the_new_composition_and_what_is_recorded(tmp_path, stub_names):
    kg = planted_recipes()
    overrides = csv_overrides(kg, tmp_path)
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    known = kg.nodes_of_type("Target")[0]
    cfg.discover.entities = [kg.label(known), "Li2FeTiO4"]
    from hygrail.discovery.report import write_report
    from hygrail.discovery.run import discover

    result = discover(cfg)
    out = write_report(result)
    md = (out / "hypotheses.md").read_text()
    first, new = result.entities.lists
    # the known target: its recorded precursors, marked
    rec = compositions.recorded(result.graph, known, result.space.relation)
    (head, table), = first.parts
    assert table["precursor"].to_list() == rec["partner"].to_list() and set(table["mark"]) == {"recorded"}
    assert f"#### {head}" in md
    # the new one: a node after every other, ranked over every precursor, beside the similar targets' records
    assert new.entity.node == kg.num_nodes and new.candidates == 8 and new.table.height == 4
    assert new.parts[0][0].startswith("New composition: 'Li2FeTiO4' is no Target of the graph; it was added as one "
                                      f"(id {kg.num_nodes}) with composition edges to Fe, Li, O, Ti only")
    near = compositions.similar(kg, compositions.parse("Li2FeTiO4"), result.space.relation, "Element", 2)
    marks = {}
    for t in near["target"].to_list():
        for p in compositions.recorded(kg, kg.node_id("Target", t), result.space.relation)["partner"].to_list():
            marks.setdefault(p, []).append(t)
    baselines, similar = new.parts[1][1], new.parts[2][1]
    assert baselines.columns == ["rank", "Popularity (relation)"]  # 3-paths cannot rank a node without precursors
    assert dict(zip(similar["precursor"], similar["mark"])) == {p: "recorded for " + ", ".join(t) for p, t in marks.items()}
    assert new.table["recorded for"].to_list() == [
        "recorded for " + ", ".join(marks[p]) if p in marks else "" for p in new.table["partner"].to_list()]
    assert "### Target 'Li2FeTiO4' (id " in md and "New composition: 'Li2FeTiO4'" in md
    assert json.loads((out / "metrics.json").read_text())["discover_seconds_compositions"] > 0

    # discover.entities_only: the same sections from the cached model, without the walk over the whole space
    cfg.discover.entities_only = True
    only = discover(cfg)
    out_only = write_report(only)
    # beside the whole run's, one folder per question (issue #56), named by what was asked
    assert out_only.parent == out.parent and out_only.name.startswith(f"{kg.label(known)}+Li2FeTiO4-")
    for a, b in zip(result.entities.lists, only.entities.lists, strict=True):
        # the whole run adds each row's verdict (the band, the reviews); entities_only reviews nothing
        assert a.table.drop("verdict").equals(b.table) and [h for h, _ in a.parts] == [h for h, _ in b.parts]
        assert all(x.equals(y) for (_, x), (_, y) in zip(a.parts, b.parts) if x is not None)
    assert only.summary["lead"][0].startswith("Each list ranks the precursors not recorded for it (csv, whole graph) by GNN")
    m = json.loads((out_only / "metrics.json").read_text())
    assert m["discover_entities_only"] == 1.0 and m["gnn_cache_hit"] == 1.0 and "discover_seconds_score" not in m
    assert only.table.height == 0 and only.table.columns == result.table.columns
    md = (out_only / "hypotheses.md").read_text()
    assert md.startswith(f"# Precursors not yet recorded for {kg.label(known)}, Li2FeTiO4")
    assert "were not walked, so there is no global ranking, no count per region and no LLM review" in \
        md.split("<summary>Run details</summary>")[1]  # the run's details, last
    # the new composition's section holds its parts; the known target's recorded precursors are listed whole
    assert "## Li2FeTiO4\n" in md and "New composition: 'Li2FeTiO4' is no Target of the graph" in md
    assert f"Recorded for it: {rec.height} precursors" in md and "## Ranked hypotheses" not in md


@pytest.mark.parametrize("overrides, message", [
    (["discover.entities_only=true"], "discover.entities_only=true: expected some discover.entities to rank"),
    (["discover.entities_only=true", "discover.entities=[x]", "discover.cutoff=2015"],
     "discover.entities_only=true with discover.cutoff=2015: that needs the walk over the whole space"),
    (["discover.entities_only=true", "discover.entities=[x]", "discover.entity_lists=true"],
     "discover.entities_only=true with discover.entity_lists=true: that needs"),
    (["discover.entities_only=yes"], "discover.entities_only='yes': expected true or false"),
])
def test_entities_only_options_fail_in_one_line(overrides, message):
    from hygrail.discovery import options

    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["task=discover", *overrides])
    with pytest.raises(DataError) as e:
        options(cfg)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
