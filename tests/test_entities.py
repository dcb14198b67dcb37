"""Per-entity discovery (hygrail/discovery/entities.py): an entity's top-k equals brute force over
its candidates, names resolve or fail in one line, element-compatible popularity picks the
documented precursors, hits@k / recall@k / all@k by hand, and a discovery run writes one section
per named entity and the per-entity retrospective metrics."""

import html
import json

import numpy as np
import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from conftest import CONF, named_kg
from hygrail.baselines import structural
from hygrail.data.split import temporal_split
from hygrail.discovery import entities, entity_page, entity_retro
from hygrail.discovery.cards import COLUMNS
from hygrail.discovery.report import write_report
from hygrail.discovery.run import discover
from hygrail.discovery.scoring import GNNBlocks
from hygrail.discovery.space import CandidateSpace, ranking
from hygrail.kg import KG, DataError, Relation, Schema
from hygrail.triage import train
from hygrail.triage.routing import Band
from test_triage import FAST, planted_kg


@pytest.fixture(scope="module")
def scored():
    kg = planted_kg(sizes=(40, 30, 30))
    split = temporal_split(kg, kg.schema.relations["chm_apl"], neg_ratio=3)
    run = train.fit(split, FAST["rgcn"] | {"epochs": 2, "val_every": 1}, seed=3)
    scorer = train.Scorer(run.module, split.train_graph)
    space = CandidateSpace(split.train_graph, split.relation)
    return scorer, space, GNNBlocks(scorer, space)


def test_entity_top_k_equals_brute_force(scored):
    scorer, space, gnn = scored
    g = space.kg
    every = [(s, d) for s in space.src for d in space.dst if not g.has_edges(np.array([s]), np.array([d]))[0]]
    src, dst = (np.array(x, dtype=np.int64) for x in zip(*every))
    for node in (space.src[3], space.dst[5]):  # a CHM (partners: APL) and an APL (partners: CHM)
        e = entities.Entity(int(node), g.label(node), g.type_of(node))
        mine = (src == node) | (dst == node)
        s, d = src[mine], dst[mine]
        logits = scorer.logits(s, d)
        order = ranking(logits, s, d, seed=1)[:7]
        got = entities.rank_entity(space, gnn, Band(0.2, 0.6, True, True), e, 7, seed=1)
        assert got.candidates == mine.sum() > 7
        assert got.table["id"].to_list() == np.where(s[order] == node, d[order], s[order]).tolist()
        np.testing.assert_allclose(got.table["score"], scorer.probability(logits[order]), rtol=1e-5)
    # the retrospective rows rank each source's candidates the same way
    chm = space.src[3]
    answers = space.dst[~g.has_edges(np.full(len(space.dst), chm), space.dst)][[0, 4]]
    row = (src == chm)
    positions = np.empty(row.sum(), dtype=np.int64)
    positions[ranking(scorer.logits(src[row], dst[row]), src[row], dst[row], seed=1)] = np.arange(row.sum())
    rank_of = dict(zip(dst[row].tolist(), positions.tolist()))
    found = entity_retro.found_at(space, {"gnn": gnn}, np.full(2, chm), answers, (1, 5, 10), 1, 50)
    assert found.n_answers.tolist() == [2]
    assert found.hits["gnn"][0].tolist() == [sum(rank_of[a] < k for a in answers.tolist()) for k in (1, 5, 10)]


def test_paths3_blocks_equal_the_structural_baseline(scored):
    _, space, _ = scored
    block = space.block(space.src[:6])
    got = entities.paths3(space.kg, space, {})(block)
    s, d = np.repeat(block.src, len(space.dst)), np.tile(space.dst, len(block.src))
    np.testing.assert_array_equal(got.ravel(), structural.paths3(space.kg, space.relation, s, d))


RECIPES = Schema(("Target", "Precursor", "Element"), {"syn_tgt_pre": Relation("syn_tgt_pre", "Target", "Precursor")})


def test_names_resolve_or_fail_in_one_line():
    nodes = pl.DataFrame({"name": ["BaTiO3", "SrTiO3", "BaTiO3", "TiO2", "Ti"],
                          "type": ["Target", "Target", "Precursor", "Precursor", "Element"]})
    edges = pl.DataFrame({"u": [0, 1, 2, 3, 0], "v": [4, 4, 4, 4, 3], "type": ["Target-Element"] * 2
                          + ["Precursor-Element"] * 2 + ["Target-Precursor"], "count": 1, "year": 2000})
    space = CandidateSpace(KG(RECIPES, nodes, edges), RECIPES.relations["syn_tgt_pre"])
    got = entities.resolve(space, ["srtio3", 3, "TiO2"])  # case-insensitive name, node id, exact name
    assert [(e.node, e.node_type) for e in got] == [(1, "Target"), (3, "Precursor"), (3, "Precursor")]
    # a name of a Target and a Precursor: the relation's source (which precursors for this target?), the
    # other named beside it; '<type>:<name>' asks for the other
    (target,) = entities.resolve(space, ["BaTiO3"])
    assert (target.node, target.node_type, target.also, target.also_type) == (0, "Target", (2,), "Precursor")
    table = pl.DataFrame({"rank": [1], "partner": ["TiO2"], "id": [3], "score": [0.5], "region": ["routed"],
                          "future_year": pl.Series([None], dtype=pl.Int32)})
    page = entity_page.markdown(entities.EntityReport([entities.EntityList(target, table, 1, 0.0)], {"Target": "Precursor"}))
    assert "'BaTiO3' also names Precursor id 2: write 'Precursor:BaTiO3' (or its id) for that one's list)" in page
    (precursor,) = entities.resolve(space, ["Precursor:batio3"])
    assert (precursor.node, precursor.node_type, precursor.also) == (2, "Precursor", ())
    with pytest.raises(DataError, match=r"^discover.entities: no Target or Precursor is named 'Element:Ti'; closest") \
            as ambiguous:
        entities.resolve(space, ["Element:Ti"])  # not a type of the relation: read as a name
    with pytest.raises(DataError) as unknown:
        entities.resolve(space, ["BaTiO4"])
    assert str(unknown.value) == ("discover.entities: no Target or Precursor is named 'BaTiO4'; closest: "
                                  "Target 'BaTiO3' (id 0), Precursor 'BaTiO3' (id 2), Precursor 'TiO2' (id 3) "
                                  "(on the command line quote names with accents, parentheses or commas: "
                                  "discover.entities='[\"BaTiO3\"]')")
    with pytest.raises(DataError, match=r"^discover.entities: id 4 is Element 'Ti'; expected a Target or Precursor$"):
        entities.resolve(space, [4])
    assert all("\n" not in str(e.value) for e in (ambiguous, unknown))



HPO_LIKE = Schema(("Disease", "Phenotype", "Gene"), {"dis_phe": Relation("dis_phe", "Disease", "Phenotype")})


def hpo_like_space() -> CandidateSpace:
    """Diseases named as the HPO loader names them: a name two source keys share carries its key
    (Marfan's OMIM and ORPHA twins; Usher's OMIM twin has no edges), others are plain, some twins
    differing in accents only (OMIM's 'Alstrom syndrome', ORPHA's 'Alström syndrome' in real HPO)
    and some names in case only (real HPO's 'MEND syndrome' and 'Mend syndrome')."""
    nodes = [("Marfan syndrome (OMIM:154700)", "Disease"), ("Marfan syndrome (ORPHA:558)", "Disease"),
             ("Malan syndrome", "Disease"), ("Alström syndrome", "Disease"), ("Usher syndrome (OMIM:276900)", "Disease"),
             ("Usher syndrome (ORPHA:886)", "Disease"), ("Tall stature", "Phenotype"), ("Ectopia lentis", "Phenotype"),
             ("Aortic dilatation", "Phenotype"), ("Obesity", "Phenotype"), ("Hearing loss", "Phenotype"), ("FBN1", "Gene"),
             ("Stuve-Wiedemann syndrome", "Disease"), ("Stüve-Wiedemann syndrome", "Disease"), ("MEND syndrome", "Disease"),
             ("Mend syndrome", "Disease")]
    edges = [("Marfan syndrome (OMIM:154700)", "Tall stature", 1), ("Marfan syndrome (OMIM:154700)", "Ectopia lentis", 1),
             ("Marfan syndrome (OMIM:154700)", "FBN1", 1), ("Marfan syndrome (ORPHA:558)", "Ectopia lentis", 1),
             ("Marfan syndrome (ORPHA:558)", "Aortic dilatation", 1), ("Malan syndrome", "Tall stature", 1),
             ("Alström syndrome", "Obesity", 1), ("Usher syndrome (ORPHA:886)", "Hearing loss", 1)] + [
        (d, "Obesity", 1) for d in ("Stuve-Wiedemann syndrome", "Stüve-Wiedemann syndrome", "MEND syndrome", "Mend syndrome")]
    return CandidateSpace(named_kg(HPO_LIKE, nodes, edges), HPO_LIKE.relations["dis_phe"])


def test_twins_resolve_together_and_answers_on_a_twin_are_known():
    space = hpo_like_space()
    kg = space.kg
    omim, orpha = entities.resolve(space, ["Marfan syndrome"])  # the README's example: both twins, node order
    assert (omim.node, omim.twins, orpha.node, orpha.twins) == (0, (1,), 1, (0,))
    assert (omim.name, orpha.name, omim.relation) == ("Marfan syndrome (OMIM:154700)", "Marfan syndrome (ORPHA:558)", "dis_phe")
    assert str(omim) == "Disease 'Marfan syndrome (OMIM:154700)' (id 0)"  # as the report heads its section
    label = lambda nodes: {kg.label(p) for p in nodes}  # noqa: E731
    # the twin's partners over the relation (not its gene): already known for the disease
    assert label(entities.known_on_twins(kg, omim)) == {"Ectopia lentis", "Aortic dilatation"}
    assert label(entities.known_on_twins(kg, orpha)) == {"Tall stature", "Ectopia lentis"}
    assert entities.resolve(space, ["marfan SYNDROME"]) == [omim, orpha]
    # one twin named by its keyed form (or id) is one entity that still knows its twin
    assert entities.resolve(space, ["Marfan syndrome (ORPHA:558)", 1]) == [orpha, orpha]
    # a twin without edges has nothing to rank: the other is the entity, with it as twin
    (usher,) = entities.resolve(space, ["Usher syndrome"])
    assert (usher.node, usher.twins, entities.known_on_twins(kg, usher)) == (5, (4,), set())
    with pytest.raises(DataError, match=r"^discover.entities: Disease 'Usher syndrome \(OMIM:276900\)' \(id 4\) has no edges"):
        entities.resolve(space, ["Usher syndrome (OMIM:276900)"])
    (malan,) = entities.resolve(space, ["Malan syndrome"])
    assert malan.twins == () and entities.known_on_twins(kg, malan) == set()
    # names differing only in accents are twins too, however written; in case only, they are not
    # (a chemical formula: 'CO' is not 'Co'), so such a name is ambiguous unless written exactly
    for given in ("Stuve-Wiedemann syndrome", "Stüve-Wiedemann syndrome", "STUVE-WIEDEMANN SYNDROME"):
        assert [(e.node, e.twins) for e in entities.resolve(space, [given])] == [(12, (13,)), (13, (12,))]
    assert [(e.node, e.twins) for e in entities.resolve(space, ["Mend syndrome"])] == [(15, ())]
    with pytest.raises(DataError, match=r"^discover.entities: 'mend syndrome' names 2 nodes: Disease 'MEND syndrome' "
                                        r"\(id 14\), Disease 'Mend syndrome' \(id 15\); give one by its id$"):
        entities.resolve(space, ["mend syndrome"])


class _ByDegree:
    """A stand-in GNN for rank_entity: logit = the partner's degree (hubs first, as the issue saw)."""

    def __init__(self, kg):
        self.kg = kg

    def pairs(self, src, dst):
        return self.kg.degree[dst].astype(np.float32) - 2.0

    @staticmethod
    def probability(logits):
        return 1 / (1 + np.exp(-np.asarray(logits, dtype=np.float64)))


def test_a_disease_is_never_offered_what_it_or_its_twin_already_implies():
    """Issue #36: on an HPO-like ontology (is_a closure as ``KG.ancestors``), Marfan's OMIM twin is
    never offered its ORPHA twin's annotation (Ectopia lentis) or that annotation's ancestors
    (Abnormality of the eye, Phenotypic abnormality), nor the ancestors of its own (KG.excluded);
    a descendant of a twin's annotation (Subluxated lens) is still a discovery. The heading counts
    what was left out."""
    names = ["Marfan syndrome (OMIM:154700)", "Marfan syndrome (ORPHA:558)", "Homocystinuria",
             "Phenotypic abnormality", "Abnormality of the eye", "Ectopia lentis", "Subluxated lens",
             "Abnormality of the skeleton", "Arachnodactyly", "Tall stature", "Myopia"]
    types = ["Disease"] * 3 + ["Phenotype"] * 8
    parent = {4: 3, 5: 4, 6: 5, 7: 3, 8: 7, 9: 7, 10: 4}  # is_a
    anc = np.zeros((len(names),) * 2, dtype=bool)
    for child in parent:
        up = child
        while up in parent:
            up = parent[up]
            anc[child, up] = True
    edges = pl.DataFrame({"u": [0, 1, 2, 2, 2], "v": [8, 5, 9, 10, 6], "type": "Disease-Phenotype", "count": 1,
                          "year": 2000})
    nodes = pl.DataFrame({"name": names, "type": types, "created": [None] * 3 + [1990] * 8})
    import scipy.sparse as sparse

    kg = KG(HPO_LIKE, nodes, edges, ancestors=sparse.csr_matrix(anc))
    space = CandidateSpace(kg, HPO_LIKE.relations["dis_phe"])
    omim, orpha = entities.resolve(space, ["Marfan syndrome"])
    on, implied = entities.known_through_twins(kg, omim)
    assert ({kg.label(p) for p in on}, {kg.label(p) for p in implied}) == (
        {"Ectopia lentis"}, {"Abnormality of the eye", "Phenotypic abnormality"})
    got = entities.rank_entity(space, _ByDegree(kg), Band(0.2, 0.6, True, True), omim, 10, seed=0)
    offered = set(got.table["partner"].to_list())
    # own annotation Arachnodactyly: its ancestors were excluded before (KG.excluded), the twin's are now
    assert offered == {"Subluxated lens", "Tall stature", "Myopia"}
    assert (got.candidates, got.on_twins, got.implied_by_twins) == (3, 1, 1)  # the root: excluded already
    report = entities.EntityReport([got], {"Disease": "Phenotype"})
    assert ("Disease 'Marfan syndrome (OMIM:154700)' (id 0): its best 3 of 3 candidates (GNN ranking, "
            in entity_page.markdown(report))
    assert "left out as known: 1 annotated on its twin (id 1), 1 implied by those (their ancestors))" in \
        entity_page.markdown(report)
    # the ORPHA twin is not offered the OMIM twin's Arachnodactyly nor Abnormality of the skeleton
    other = set(entities.rank_entity(space, _ByDegree(kg), Band(0.2, 0.6, True, True), orpha, 10, 0).table["partner"])
    assert not other & {"Arachnodactyly", "Abnormality of the skeleton", "Phenotypic abnormality",
                        "Abnormality of the eye"}
    assert "Subluxated lens" in other and "Tall stature" in other
    # with a cutoff an undated annotation (all of HPO's ORPHA ones) is withheld from the cut graph as a
    # masked pair (KG.until): still known for the twin, so still left out
    undated = edges.with_columns(pl.when(pl.col("u") == 1).then(-1).otherwise(pl.col("year")).alias("year"))
    cut = KG(HPO_LIKE, nodes, undated, ancestors=sparse.csr_matrix(anc)).until(2005)
    cut_space = CandidateSpace(cut, HPO_LIKE.relations["dis_phe"])
    (alone,) = entities.resolve(cut_space, ["Marfan syndrome"])  # the ORPHA twin has no dated edge by then
    assert alone == omim and not cut.has_edges(np.array([1]), np.array([5]))[0]
    got = entities.rank_entity(cut_space, _ByDegree(cut), Band(0.2, 0.6, True, True), alone, 10, seed=0)
    assert set(got.table["partner"]) == offered and (got.on_twins, got.implied_by_twins) == (1, 1)


@pytest.mark.parametrize("cards", [-1, 21, "five", True])
def test_entity_cards_out_of_range_is_a_one_line_error(cards):
    d = {"entity_k": 20, "entity_ks": [1, 5, 10], "entity_cards": cards, "entities": ["Marfan syndrome"]}
    with pytest.raises(DataError) as e:
        entities.options(d, hpo_like_space())
    assert str(e.value) == (f"discover.entity_cards={cards!r}: expected a number of evidence cards per entity from 0 "
                            f"to discover.entity_k=20")


def test_an_accent_free_spelling_resolves():
    space = hpo_like_space()
    for given in ("Alstrom syndrome", "ALSTROM SYNDROME", "alström syndrome", " Alström syndrome "):
        assert [e.name for e in entities.resolve(space, [given])] == ["Alström syndrome"]


def test_a_misspelling_lists_the_keyed_forms_and_how_to_quote():
    space = hpo_like_space()
    with pytest.raises(DataError) as near:
        entities.resolve(space, ["Marfen syndrome"])
    assert str(near.value) == (
        "discover.entities: no Disease or Phenotype is named 'Marfen syndrome'; closest: "
        "Disease 'Marfan syndrome (OMIM:154700)' (id 0), Disease 'Marfan syndrome (ORPHA:558)' (id 1), "
        "Disease 'MEND syndrome' (id 14), Disease 'Mend syndrome' (id 15), "
        "Disease 'Malan syndrome' (id 2), Disease 'Alström syndrome' (id 3), "
        "Disease 'Usher syndrome (OMIM:276900)' (id 4), Disease 'Usher syndrome (ORPHA:886)' (id 5) "
        "(on the command line quote names with accents, parentheses or commas: "
        "discover.entities='[\"Marfan syndrome (OMIM:154700)\"]')")
    with pytest.raises(DataError) as accented:  # compared accent-free: Alström is the closest
        entities.resolve(space, ["Alstrom sindrome"])
    assert "closest: Disease 'Alström syndrome' (id 3)," in str(accented.value)
    assert str(accented.value).endswith("""discover.entities='["Alström syndrome"]')""")
    with pytest.raises(DataError) as nothing:
        entities.resolve(space, ["zzz"])
    assert str(nothing.value).endswith("""closest: none (on the command line quote names with accents, parentheses or """
                                       """commas: discover.entities='["zzz"]')""")
    assert all("\n" not in str(e.value) for e in (near, accented, nothing))

def test_compatible_popularity_puts_element_compatible_precursors_first():
    """BaTiO3 (new: only its composition is known) can be made from precursors whose elements
    other than O, C, H, N it contains: TiO2 (used twice), BaCO3 (once), H2O (never), in that order;
    then the others by popularity."""
    elements = {"BaTiO3": "Ba Ti O", "LiCoO2": "Li Co O", "SrTiO3": "Sr Ti O", "BaZrO3": "Ba Zr O",
                "BaCO3": "Ba C O", "TiO2": "Ti O", "Li2CO3": "Li C O", "Co3O4": "Co O", "SrCO3": "Sr C O",
                "ZrO2": "Zr O", "H2O": "H O"}
    targets = ["BaTiO3", "LiCoO2", "SrTiO3", "BaZrO3"]
    symbols = sorted({x for v in elements.values() for x in v.split()})
    nodes = [(m, "Target" if m in targets else "Precursor") for m in elements] + [(x, "Element") for x in symbols]
    used = [("LiCoO2", "Li2CO3"), ("LiCoO2", "Co3O4"), ("LiCoO2", "TiO2"), ("SrTiO3", "SrCO3"), ("SrTiO3", "TiO2"),
            ("BaZrO3", "BaCO3"), ("BaZrO3", "ZrO2")]
    kg = named_kg(RECIPES, nodes, [(m, x, 1) for m, v in elements.items() for x in v.split()] + [(t, p, 1) for t, p in used])
    space = CandidateSpace(kg, RECIPES.relations["syn_tgt_pre"])
    score = entities.compatible_popularity(kg, space, {"via": "Element", "ignore": ["O", "C", "H", "N"]})
    block = space.block(np.array([kg.node_id("Target", "BaTiO3")]))
    row = score(block)[0][block.valid[0]]
    cand = space.dst[block.valid[0]]
    ranked = [kg.label(p) for p in cand[ranking(row, np.zeros_like(cand), cand, seed=0)]]
    assert ranked[:3] == ["TiO2", "BaCO3", "H2O"]
    assert set(ranked[3:]) == {"Li2CO3", "Co3O4", "SrCO3", "ZrO2"}
    with pytest.raises(DataError, match=r"^discover.compatible.via=None: compatible_popularity needs"):
        entities.compatible_popularity(kg, space, {"via": None})


def test_discovery_report_has_a_section_per_entity(tmp_path):
    overrides = ["task=discover", "backbone=rgcn", "backbone.epochs=2", "backbone.val_every=1", "data.scale=0.3",
                 "relation=chm_apl", "discover.top_k=10", "discover.review_budget.val=0",
                 "discover.review_budget.candidates=0", "discover.tsh.embedding=false", "discover.cutoff=2020",
                 "discover.entity_k=5", "discover.entity_lists=true", f"paths.outputs={tmp_path}"]
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    from hygrail.data import data_config, load_kg

    kg = load_kg(data_config(scale=0.3)).until(2020)
    chm, apl = (next(n for n in kg.nodes_of_type(t) if kg.degree[n] > 2) for t in ("CHM", "APL"))
    cfg.discover.entities = [kg.label(chm).upper(), int(apl)]
    result = discover(cfg)
    out = write_report(result)
    md, page = (out / "hypotheses.md").read_text(), (out / "index.html").read_text()
    for node in (chm, apl):
        head = f"{kg.type_of(node)} '{kg.label(node)}' (id {node}): its best 5 of"
        assert md.count(f"### {head}") == 1 and page.count(html.escape(head)) == 1
    assert md.index("## Per-entity discovery") < md.index("## Per-entity retrospective evaluation") < md.index("## Ranked hypotheses")
    assert [e.table.height for e in result.entities.lists] == [5, 5]
    # each listed candidate of an entity has its evidence card (discover.entity_cards=5, the default), built as
    # the ranked table's: same columns, the verdict named with its rule, linked from the entity's table
    for e in result.entities.lists:
        cards = e.cards
        assert cards.columns == list(COLUMNS) and cards["right_id" if e.entity.node_type == "CHM" else "left_id"].to_list() \
            == e.table["id"].to_list()
        assert cards["verdict"].to_list() == e.table["verdict"].to_list() and cards["rank"].to_list() == [1, 2, 3, 4, 5]
        rule = {"auto_accept": "GNN: score ", "auto_reject": "GNN: score ", "routed": "routed, beyond the review budget"}
        assert all(by.startswith(rule[r]) for by, r in zip(cards["decided_by"], cards["region"]))  # nothing reviewed
        for r in range(1, 6):
            assert page.count(f"id='entity-{e.entity.node}-card-{r}'") == 1
            assert page.count(f"href='#entity-{e.entity.node}-card-{r}'") == 1
    assert md.count("Evidence cards of its best 5 (discover.entity_cards=5;") == 2 and md.count("\n#### ") == 10 + 2  # 5 cards and a recorded-partners table per entity
    # discover.entity_lists: every source entity's best 5 from the scoring pass, the named CHM's equal to its query
    lists = pl.read_parquet(out / "entity_lists.parquet")
    assert lists["left_id"].n_unique() == len(result.space.src) and lists.group_by("left_id").len()["len"].max() == 5
    mine = lists.filter(pl.col("left_id") == chm).sort("rank")
    assert mine["right_id"].to_list() == result.entities.lists[0].table["id"].to_list() and mine["exact"].all()
    assert mine["probability"].to_list() == pytest.approx(result.entities.lists[0].table["score"].to_list(), rel=1e-5)
    m = json.loads((out / "metrics.json").read_text())
    n = m["retro_entity_sources"]
    assert n >= 1 and 0 <= m["retro_entity_gnn_hits_at_10"] <= 1 and m["retro_entity_paths3_recall_at_1_se"] >= 0
    csv = pl.read_csv(out / "retrospective_entities.csv")
    known = csv.filter(pl.col("entities known") == entity_retro.KNOWN_ROW)
    assert known["method"].to_list() == ["GNN", "TSH", "Popularity (all edges)", "Popularity (relation)", "3-paths"]
    assert (known["entities"] == n).all()


def test_a_sample_keeps_the_named_entities_and_their_neighbours():
    """Issue #36: a sample silently dropped what the user asked about (Alström syndrome, BaTiO3). Named
    by name, an entity, its neighbours known at the cutoff, and nothing else beyond the draw, are kept;
    the page's title counts them; a typo fails on the whole graph's names."""
    from omegaconf import OmegaConf

    from hygrail.data import data_config, load_kg
    from hygrail.discovery.report import graph_named
    from hygrail.discovery.run import sample_keep

    whole = load_kg(data_config(scale=0.5))
    plain = load_kg(data_config(scale=0.5, subgraph_nodes=300), cutoff=2020)
    dropped = next(int(n) for n in whole.nodes_of_type("CHM")
                   if whole.until(2020).degree[n] > 3 and whole.names[n] not in set(plain.names))
    d = {"entities": [whole.names[dropped]], "compositions": {}}
    keep = sample_keep(whole, "chm_apl", 2020, d)
    neighbours = whole.until(2020).neighbors(dropped)[0]
    assert set(keep.tolist()) == {dropped, *neighbours.tolist()}
    sample = load_kg(data_config(scale=0.5, subgraph_nodes=300), cutoff=2020,
                     keep=lambda kg: sample_keep(kg, "chm_apl", 2020, d))
    assert whole.names[dropped] in sample.names and {whole.names[n] for n in neighbours} <= set(sample.names)
    assert sample.kept_in_sample == sample.num_nodes - 300 > 0
    assert set(plain.names) <= set(sample.names)  # the draw itself is unchanged
    cfg = OmegaConf.create({"data": {"name": "matkg_synthetic", "subgraph_nodes": 300}})
    assert graph_named(cfg, sample) == (
        f"matkg_synthetic, a 300-node sample, plus {sample.kept_in_sample:,} kept for the named entities and their "
        f"neighbours: a smoke test; it keeps a fraction of each entity's edges, so degree and path signals are "
        f"weaker than on the whole graph")
    with pytest.raises(DataError, match=r"^discover.entities: no CHM or APL is named 'qqqq"):
        sample_keep(whole, "chm_apl", 2020, {"entities": ["qqqq" + whole.names[dropped]]})
