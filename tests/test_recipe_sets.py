"""Precursor sets (issue #47, hygrail/recipes): the recipe table, the element rules, exact-set
success@k, the new-composition path, no leak past the cutoff, the evidence a page shows, the page
itself. A synthetic history of recipes written here: perovskite families made from carbonates and
oxides, thiophosphates from Li2S and P2S5, one known target that gets a new route."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hygrail.data.recipes import RECIPE_COLUMNS, composition_formula, recipe_table
from hygrail.data.chemistry import amounts
from hygrail.kg import DataError
from hygrail.recipes import options
from hygrail.recipes.baselines import he_et_al, popularity
from hygrail.recipes.benchmark import Cell, benchmark, evaluate, paired, past, table_of
from hygrail.recipes.library import Library, Target, after
from hygrail.recipes.asked import Asked, resolve
from hygrail.recipes.page import evidence
from hygrail.recipes.ranker import FEATURES, Candidate, Proposal, SetRanker, features, local

ROOT = Path(__file__).resolve().parents[1]
VOLATILE, FREE = ("O", "C", "H", "N", "S"), ("O", "H")
PRE = {"BaCO3": "Ba C O", "SrCO3": "Sr C O", "CaCO3": "Ca C O", "BaO": "Ba O", "Ba(NO3)2": "Ba N O", "TiO2": "Ti O",
       "ZrO2": "Zr O", "Li2S": "Li S", "P2S5": "P S", "LiCl": "Li Cl", "LiBr": "Li Br", "LiI": "Li I", "Li2O": "Li O",
       "Li2CO3": "Li C O"}
FAMILIES = [("Ba{a}Sr{b}TiO3", "Ba Sr Ti O", ["BaCO3", "SrCO3", "TiO2"]),
            ("Ba{a}Ca{b}TiO3", "Ba Ca Ti O", ["BaCO3", "CaCO3", "TiO2"]),
            ("Sr{a}Ca{b}ZrO3", "Sr Ca Zr O", ["CaCO3", "SrCO3", "ZrO2"]),
            ("BaTi{a}Zr{b}O3", "Ba Ti Zr O", ["BaCO3", "TiO2", "ZrO2"]),
            ("Li{a}Ti{b}O3", "Li Ti O", ["Li2CO3", "TiO2"]),
            ("Li{a}PS{b}Br", "Li P S Br", ["Li2S", "LiBr", "P2S5"]),
            ("Li{a}PS{b}I", "Li P S I", ["Li2S", "LiI", "P2S5"])]


def doi(year: int, n: int) -> str:
    return f"10.1016/j.jssc.{year}.01.{n:03d}"  # an Elsevier DOI: its year is read from it


def history() -> list[tuple[str, str, list[str], int]]:
    """(material, elements, precursors, year): seven families a year 2000-2012 (every third year the Ba
    ones from BaO; bromide and iodide thiophosphates, no chloride), Li7PS6 and Li3OCl, and BaTiO3 with
    a new route in 2011."""
    rows = []
    for y in range(2000, 2013):
        a = round((y - 1995) / 20, 2)
        for tpl, els, pres in FAMILIES:
            pres = [("BaO" if p == "BaCO3" and y % 3 == 0 else p) for p in pres]
            rows.append((tpl.format(a=a, b=round(1 - a, 2)), els, pres, y))
    return rows + [("Li7PS6", "Li P S", ["Li2S", "P2S5"], 2002), ("Li3OCl", "Li O Cl", ["Li2O", "LiCl"], 2003),
                   ("BaTiO3", "Ba Ti O", ["BaCO3", "TiO2"], 2001),
                   ("BaTiO3", "Ba Ti O", ["BaO", "TiO2"], 2004), ("BaTiO3", "Ba Ti O", ["Ba(NO3)2", "TiO2"], 2011)]


def recipe_rows(rows) -> pl.DataFrame:
    """The recipe table of rows of its first ten columns (recipe ... year): the precursors' charge balance,
    the reaction and the firing conditions unknown."""
    return pl.DataFrame([tuple(r) + ([None] * len(r[5]), None, None) for r in rows], schema=RECIPE_COLUMNS,
                        orient="row")


def as_table(rows) -> pl.DataFrame:
    return recipe_rows([(i, m, m, composition_formula(amounts(m)), sorted(els.split()), sorted(set(pres)),
                         [sorted(PRE[p].split()) for p in sorted(set(pres))], sorted(set(pres)), doi(y, i), y)
                        for i, (m, els, pres, y) in enumerate(rows, start=1)])


def as_json(rows, path: Path) -> Path:
    """``rows`` in the dataset's own format (a material: formula, composition of its elements)."""
    def material(name, els):
        amounts_ = {e: str(n) for e, n in amounts(name).items()}
        return {"material_formula": name, "composition": [{"formula": name, "elements": amounts_, "amount": "1"}]}
    recipes = [{"doi": doi(y, i), "target": material(m, els), "precursors": [material(p, PRE[p]) for p in pres],
                "operations": [{"type": "HeatingOperation"}]} for i, (m, els, pres, y) in enumerate(rows, start=1)]
    path.write_text(json.dumps({"reactions": recipes}))
    return path


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    return as_table(history())


@pytest.fixture(scope="module")
def fitted(table):
    return SetRanker(neighbours=10, composed=10).fit(past(table, 2010), 2010, VOLATILE, FREE)


def test_recipe_table_reads_each_recipe_with_its_substituted_material_and_dopants(tmp_path):
    def material(formula, elements, variables=None, additives=None):
        return {"material_formula": formula, "composition": [{"formula": formula, "elements": elements, "amount": "1"}],
                "elements_vars": variables or {}, "additives": additives or []}

    pr6o11, co3o4, eu2o3 = (material("Pr6O11", {"Pr": "6", "O": "11"}), material("Co3O4", {"Co": "3", "O": "4"}),
                            material("Eu2O3", {"Eu": "2", "O": "3"}))
    target = material("RBaCo2O5+δ", {"R": "1", "Ba": "1", "Co": "2", "O": "5"}, {"R": ["Pr", "Tb"]})
    recipes = [{"doi": "10.1016/j.ssi.2009.01.001", "target": target, "precursors": [pr6o11, co3o4, co3o4],
                "reaction": {"element_substitution": {"R": "Pr"}}},
               {"doi": "10.1021/cm0000001", "target": material("Ca2SnO4:Eu3+", {"Ca": "2", "Sn": "1", "O": "4"},
                                                               additives=["Eu3+"]), "precursors": [eu2o3]}]
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"reactions": recipes}))
    t = recipe_table(path)
    assert t["material"].to_list() == ["RBaCo2O5+δ (R=Pr)", "Ca2SnO4:Eu3+ (+Eu)"]
    assert t["target"].to_list() == ["RBaCo2O5+δ", "Ca2SnO4:Eu3+"]  # as the KG names it
    assert t["elements"].to_list() == [["Ba", "Co", "O", "Pr"], ["Ca", "Eu", "O", "Sn"]]
    assert t["precursors"].to_list() == [["Co3O4", "Pr6O11"], ["Eu2O3"]]  # distinct, sorted
    assert t["year"].to_list() == [2009, -1]


def test_precursors_are_one_by_composition_as_he_et_al_key_them_and_shown_as_most_often_written(tmp_path):
    assert [composition_formula(a) for a in ({"C": 1, "O": 3, "Li": 2}, {"Bi": 1, "O": 1.5}, {"Ba": 1, "Ti": 1, "O": 3},
                                             {"Mn": 1, "C": 4, "H": 6, "O": 4})] == ["Li2CO3", "Bi2O3", "BaTiO3", "MnH6C4O4"]

    def material(formula, elements, amount="1"):
        return {"material_formula": formula, "composition": [{"formula": formula, "elements": elements, "amount": amount}]}

    li2co3 = material("Li2CO3", {"Li": "2", "C": "1", "O": "3"})
    graded = material("Li2CO3(3N)", {"Li": "2", "C": "1", "O": "3"})
    reordered = material("CO3Li2", {"C": "1", "O": "3", "Li": "2"})
    hydrate = {"material_formula": "MnO·2H2O", "composition": [{"elements": {"Mn": "1", "O": "1"}, "amount": "1"},
                                                                {"elements": {"H": "2", "O": "1"}, "amount": "2"}]}
    varied = material("Li1-xCO3", {"Li": "1-x", "C": "1", "O": "3"})
    target = material("Li2MnO3", {"Li": "2", "Mn": "1", "O": "3"})
    recipes = [{"doi": doi(2005, n), "target": target, "precursors": pres}
               for n, pres in enumerate([[li2co3, hydrate], [graded, hydrate], [reordered, graded, hydrate],
                                         [li2co3, hydrate], [varied, hydrate]])]
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"reactions": recipes}))
    t = recipe_table(path)
    assert t["precursors"].to_list() == [["Li2CO3", "MnH4O3"]] * 4 + [["Li1-xCO3", "MnH4O3"]]  # x: no number, as written
    assert t["spellings"].to_list()[:3] == [["Li2CO3", "MnO·2H2O"], ["Li2CO3(3N)", "MnO·2H2O"], ["CO3Li2", "MnO·2H2O"]]
    assert recipe_table(path, "formula")["precursors"].to_list()[2] == ["CO3Li2", "Li2CO3(3N)", "MnO·2H2O"]
    lib = Library.build(t, None, VOLATILE, FREE)
    assert lib.show(("Li2CO3", "MnH4O3")) == "Li2CO3 + MnO·2H2O"  # the most written spelling
    assert lib.naming("Li2CO3(3N)") == {"Li2CO3"}
    # a set written one way is met by the same set written another: He et al.'s exact match
    target = Target("Li2MnO3", frozenset({"Li", "Mn", "O"}), frozenset({("Li2CO3", "MnH4O3")}), False, 2006)
    assert evaluate(lib, [target], {"x": lambda *_: [("Li2CO3", "MnH4O3")]}, (1,))["x"].tolist() == [[True]]
    with pytest.raises(DataError, match=r"recipes\.identity='name': expected one of composition, formula"):
        recipe_table(path, "name")


def test_a_set_covers_every_element_but_o_and_h_and_brings_nothing_foreign(table):
    lib = Library.build(table, None, VOLATILE, FREE)
    batio3, li6ps5cl = frozenset({"Ba", "Ti", "O"}), frozenset({"Li", "P", "S", "Cl"})
    assert lib.valid(["BaCO3", "TiO2"], batio3)
    assert lib.valid(["Ba(NO3)2", "TiO2"], batio3)  # a nitrate's N and O leave
    assert not lib.valid(["BaCO3"], batio3)  # Ti has no source
    assert not lib.valid(["BaCO3", "TiO2", "ZrO2"], batio3)  # Zr is foreign
    assert lib.valid(["Li2S", "LiCl", "P2S5"], li6ps5cl)
    assert lib.valid(["Li2O", "LiCl", "P2S5"], li6ps5cl)  # P2S5 brings the S
    assert not lib.valid(["Li2O", "LiCl"], frozenset({"Li", "S", "Cl"}))  # S needs a source (not free) ...
    assert lib.valid(["Li2S", "LiCl"], frozenset({"Li", "S", "Cl"}))
    assert lib.valid(["Li2S", "LiCl", "P2S5"], li6ps5cl | {"O"})  # ... O does not
    assert not lib.valid(["Li2O", "LiCl", "TiO2"], li6ps5cl)  # P uncovered, Ti foreign
    assert lib.need(li6ps5cl | {"O", "H"}) == li6ps5cl


def test_an_oxide_for_a_material_without_o_counts_against_a_set():
    """Allowed by the rules (O is volatile), oxides for an intermetallic are what the ranker's
    ``oxide_for_no_o`` feature counts: a material without O is made from the metals in this history."""
    pre = {"Ni": ["Ni"], "Ti": ["Ti"], "NiO": ["Ni", "O"], "TiO2": ["O", "Ti"]}
    made = [("NiTi", ["Ni", "Ti"], ["Ni", "Ti"]), ("NiTiO3", ["Ni", "O", "Ti"], ["NiO", "TiO2"])] * 5
    rows = [(i, m, m, None, els, sorted(ps), [pre[p] for p in sorted(ps)], sorted(ps), doi(2000 + i % 5, i),
             2000 + i % 5) for i, (m, els, ps) in enumerate(made)]
    lib = Library.build(recipe_rows(rows), None, VOLATILE, FREE)
    column = FEATURES.index("oxide_for_no_o")
    metal, oxide = frozenset({"Ni", "Ti"}), frozenset({"Ni", "Ti", "O"})
    near = lib.similar(metal, 5)
    assert features(lib, metal, Candidate(("NiO", "TiO2")), local(lib, metal, near))[column] == 2
    assert features(lib, metal, Candidate(("Ni", "TiO2")), local(lib, metal, near))[column] == 1
    assert features(lib, metal, Candidate(("Ni", "Ti")), local(lib, metal, near))[column] == 0
    assert features(lib, oxide, Candidate(("NiO", "TiO2")), local(lib, oxide, lib.similar(oxide, 5)))[column] == 0


def test_success_at_k_is_an_exact_set_match_among_the_first_k(table):
    lib = Library.build(table, 2010, VOLATILE, FREE)
    targets = [Target("X1", frozenset(), frozenset({("A", "B")}), False, 2011),
               Target("X2", frozenset(), frozenset({("C", "D"), ("E", "F")}), False, 2012),
               Target("X3", frozenset(), frozenset({("G",)}), False, 2012)]
    proposals = {"x": {"X1": [("A", "B")], "X2": [("Z",), ("E", "F")], "X3": []},
                 "y": {"X1": [("A", "C"), ("A", "B")], "X2": [("C", "D")], "X3": [("A",), ("B",), ("C",), ("G",)]}}
    rows = {name: (lambda lib, t, k, ex, p=p: p[t.material]) for name, p in proposals.items()}
    success = evaluate(lib, targets, rows, ks=(1, 3, 5))
    assert success["x"].tolist() == [[True, True, True], [False, True, True], [False, False, False]]
    assert success["y"].tolist() == [[False, True, True], [True, True, True], [False, False, True]]
    cell = Cell(2010, targets, success)
    t = table_of(cell, ks=(1, 3, 5))
    assert t["success_at_1"].to_list() == pytest.approx([1 / 3, 1 / 3])
    assert t["success_at_5"].to_list() == pytest.approx([2 / 3, 1.0])
    d = paired(cell, ks=(1, 3, 5), against="y").row(0, named=True)  # y - x, target by target
    assert d["at_1"] == pytest.approx(0.0)
    assert d["at_1_se"] == pytest.approx(np.std([-1, 1, 0], ddof=1) / np.sqrt(3))
    assert d["at_5"] == pytest.approx(1 / 3) and d["at_5_se"] == pytest.approx(1 / 3)


def test_test_targets_are_new_materials_and_known_ones_with_a_new_set(table):
    targets = {t.material: t for t in after(table, 2010, 3)}
    assert targets["BaTiO3"].known and targets["BaTiO3"].answers == {("Ba(NO3)2", "TiO2")}  # not its earlier sets
    assert not targets["Ba0.8Sr0.2TiO3"].known and targets["Ba0.8Sr0.2TiO3"].first_year == 2011
    assert all(2011 <= t.first_year <= 2012 for t in targets.values() if not t.known)
    assert "Li7PS6" not in targets  # recorded before the cutoff, nothing new after
    assert targets["Ba0.8Sr0.2TiO3"].unseen and not targets["BaTiO3"].unseen
    # a composition recorded before under another name is new here but not unseen (He et al. would not test it)
    renamed = {t.material: t for t in after(as_table(history() + [("Sr0.5Ba0.5TiO3", "Ba Sr Ti O", ["BaO", "TiO2"],
                                                                     2011)]), 2008, 3)}
    assert not renamed["Sr0.5Ba0.5TiO3"].known and not renamed["Sr0.5Ba0.5TiO3"].unseen  # Ba0.5Sr0.5TiO3, 2005
    assert renamed["Ba0.8Sr0.2TiO3"].unseen


def test_a_new_composition_gets_valid_sets_from_similar_materials(table, fitted):
    lib = Library.build(past(table, 2010), 2010, VOLATILE, FREE)
    asked = resolve(lib, "Li6PS5Cl")
    assert asked == Asked("Li6PS5Cl", (), frozenset({"Li", "P", "S", "Cl"}))
    props = fitted.propose(lib, asked.elements, 5)
    assert props and all(lib.valid(p.precursors, asked.elements) for p in props)
    assert props[0].precursors == ("Li2S", "LiCl", "P2S5")
    text = evidence(lib, asked, props[0])["text"]
    assert text.startswith("adapted from Li") and "LiCl added for Cl" in text
    # the popularity baseline and He et al. propose valid sets for it too
    assert he_et_al(lib, asked.elements, 3)[0] == ("Li2S", "LiCl", "P2S5")
    assert all(lib.valid(s, asked.elements) for s in popularity(lib, asked.elements, 5))


def test_evidence_names_the_recorded_set_its_year_and_doi_or_the_scores_it_was_composed_from(table, fitted):
    lib = Library.build(table, None, VOLATILE, FREE)
    asked = resolve(lib, "batio3")  # case-insensitive
    props = fitted.propose(lib, asked.elements, 10, avoid=frozenset({asked.name}))
    first = evidence(lib, asked, props[0])
    assert props[0].precursors == ("BaCO3", "TiO2")
    row = 1 + next(i for i, (m, _, pres, _) in enumerate(history()) if m == "BaTiO3" and pres == ["BaCO3", "TiO2"])
    assert first["text"] == f"recorded for BaTiO3 itself (2001, doi:{doi(2001, row)})"
    assert (first["material"], first["year"], first["doi"]) == ("BaTiO3", 2001, doi(2001, row))
    assert all(asked.name not in p.precursors for p in props)
    c = next(c for c in fitted.pool(lib, frozenset({"Li", "P", "S", "Cl"})) if not c.sources)  # composed only
    new = Asked("Li6PS5Cl", (), frozenset({"Li", "P", "S", "Cl"}))
    assert evidence(lib, new, Proposal(1, c.precursors, 0.0, c))["text"] == "composed: " + "; ".join(
        f"{p} for {e} ({lib.probability(e, p):.0%} of {e} recipes, {c.local[e][p]:.0%} near it)"
        for e, p in sorted(c.composed.choice.items()))


def test_nothing_dated_after_the_cutoff_reaches_the_proposals(table):
    planted = as_table(history() + [
        ("Li6PS5Cl", "Li P S Cl", ["Li2O", "LiCl", "P2S5"], 2011),  # a later recipe of the asked material itself
        ("Li7PS6", "Li P S", ["Li2O", "P2S5"], 2011), ("Li9PS6Cl", "Li P S Cl", ["Li2O", "LiCl", "P2S5"], 2011),
        ("BaTiO3", "Ba Ti O", ["Ba(NO3)2", "TiO2"], 2019)])
    li6ps5cl = frozenset({"Li", "P", "S", "Cl"})

    def proposals(t):
        ranker = SetRanker(neighbours=10, composed=10).fit(t, 2010, VOLATILE, FREE)  # given the whole table
        lib = Library.build(t, 2010, VOLATILE, FREE)
        return ([(p.precursors, round(p.score, 9)) for p in ranker.propose(lib, li6ps5cl, 10)],
                he_et_al(lib, li6ps5cl, 10), popularity(lib, li6ps5cl, 10))

    assert proposals(planted) == proposals(table)
    # the benchmark: a recipe past the horizon (2019) may move nothing it reports
    a = benchmark(table, 2010, 3, VOLATILE, FREE, SetRanker(neighbours=10, composed=10))
    b = benchmark(as_table(history() + [("BaTiO3", "Ba Ti O", ["Ba(NO3)2", "TiO2"], 2019)]), 2010, 3, VOLATILE, FREE,
                  SetRanker(neighbours=10, composed=10))
    assert [t.material for t in a.targets] == [t.material for t in b.targets]
    assert all(np.array_equal(a.success[k], b.success[k]) for k in a.success) and a.facts.keys() == b.facts.keys()
    # any ordering of the ranker's candidates reaches at most their recall, and no row passes the ceiling
    assert b.success["Set ranker"][:, -1].mean() <= b.facts["ranker recall"] <= b.facts["ceiling"]
    assert b.facts["ranker recall"] > 0.5 and b.facts["ranker recall"] == a.facts["ranker recall"]


def test_options_and_names_fail_in_one_line(table):
    good = {"targets": ["BaTiO3"], "sets": 5, "volatile": list(VOLATILE), "free": list(FREE), "neighbours": 30,
            "composed": 50, "window": 3, "identity": "composition"}
    assert options(good)["targets"] == ["BaTiO3"]
    # one target needs no brackets; a string of several is cut at the commas outside brackets
    assert options(good | {"targets": "BaTiO3"})["targets"] == ["BaTiO3"]
    assert options(good | {"targets": " LiCoO2, Na3V2(PO4)3,(Ba,Sr)TiO3 "})["targets"] == [
        "LiCoO2", "Na3V2(PO4)3", "(Ba,Sr)TiO3"]
    for bad, message in [({"volatile": ["O", "Xx"]}, r"recipes\.volatile=\['O', 'Xx'\]: expected a list of element symbols"),
                         ({"free": ["O", "F"]}, r"recipes\.free=\['O', 'F'\]: expected elements of recipes\.volatile"),
                         ({"sets": 0}, r"recipes\.sets=0: expected an integer >= 1"),
                         ({"targets": ["BaTiO3", " "]}, r"recipes\.targets=\['BaTiO3', ' '\]: expected materials"),
                         ({"trust": 3}, r"recipes\.trust=3: expected the path of the trust table"),
                         ({"identity": "name"}, r"recipes\.identity='name': expected one of composition, formula")]:
        with pytest.raises(DataError, match=message):
            options(good | bad)
    lib = Library.build(table, None, VOLATILE, FREE)
    with pytest.raises(DataError, match=r"recipes\.targets: 'BaTiO3x' is no material of the recipes \(closest: BaTiO3\) "
                                        r"and not a formula: 'x' \(character 7\)"):
        resolve(lib, "BaTiO3x")
    with pytest.raises(DataError, match=r"recipes\.targets: 'H2O': its elements \['H', 'O'\] need no source"):
        resolve(lib, "H2O")


def test_the_page_lists_five_sets_per_target_in_a_folder_of_its_own(tmp_path):
    from hydra import compose, initialize_config_dir

    from hygrail.recipes.page import main

    data = as_json(history(), tmp_path / "recipes.json")

    def run(targets):
        with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
            cfg = compose("config", overrides=["task=recipes", "data=synthesis_recipes", f"data.path={data}",
                                               f"paths.outputs={tmp_path / 'out'}", f"recipes.targets={targets}",
                                               "recipes.neighbours=10", "recipes.composed=10"])
        main(cfg)
        return sorted((tmp_path / "out" / "recipes").iterdir())

    first = run("[BaTiO3,Li6PS5Cl]")
    assert len(first) == 1 and first[0].name.startswith("BaTiO3+Li6PS5Cl-")
    sets = pl.read_csv(first[0] / "sets.csv")
    # BaTiO3: the three valid sets its library precursors allow (sets holding BaTiO3 itself left out), each recorded
    assert sets.group_by("target", maintain_order=True).len().rows() == [("BaTiO3", 3), ("Li6PS5Cl", 5)]
    page = (first[0] / "index.html").read_text()
    assert "<a href='https://doi.org/10.1016/j.jssc." in page and "a new composition (Cl, Li, P, S)" in page
    assert "only 3 sets obey the rules" in page
    assert len(run("[BaTiO3]")) == 2  # another query, another folder: the first page is kept
    assert len(list((tmp_path / "out" / "cache" / "recipes").iterdir())) >= 2  # the parsed table and the fit ranker


# -- the caches (issue #54) -------------------------------------------------------------------------------
CACHE_OPTIONS = {"neighbours": 10, "composed": 10, "window": 3, "volatile": list(VOLATILE), "free": list(FREE)}


@pytest.mark.parametrize("name", ["recipes.parquet", "trees.npz", "ranker.json"])
def test_a_truncated_recipe_cache_file_heals_with_one_warning(tmp_path, caplog, name):
    """The parsed table (``recipes.parquet``) and the fitted set ranker (its trees as arrays, its
    settings as JSON; no pickle) come back from the cache as they went in; a truncated file is named in
    one warning line, its entry set aside, and the next run computes it again with the same result."""
    from hygrail.recipes.page import fitted as cached_ranker, recipe_table as cached_table

    data, cache = as_json(history(), tmp_path / "recipes.json"), tmp_path / "cache"
    table, key, hit = cached_table(data, cache)
    ranker, last, fit_hit = cached_ranker(table, key, CACHE_OPTIONS, cache, 0)
    assert not hit and not fit_hit and not list(cache.rglob("*.pkl"))
    lib = Library.build(table, None, VOLATILE, FREE)
    want = [(p.precursors, p.score) for p in ranker.propose(lib, frozenset({"Li", "P", "S", "Cl"}), 5)]
    (file,) = cache.glob(f"*/{name}")
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        again, _, hit = cached_table(data, cache)
        read, _, fit_hit = cached_ranker(again, key, CACHE_OPTIONS, cache, 0)
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(file) in line and "moved aside" in line and len(list(cache.glob("*.damaged-*"))) == 1
    assert (hit, fit_hit) == (name != "recipes.parquet", name == "recipes.parquet")
    assert again.equals(table) and (read.fit_rows, read.fit_targets) == (ranker.fit_rows, ranker.fit_targets)
    got = [(p.precursors, p.score) for p in read.propose(Library.build(again, None, VOLATILE, FREE),
                                                        frozenset({"Li", "P", "S", "Cl"}), 5)]
    assert got == want  # scores to the bit: the trees read back are the trees fit
    assert cached_ranker(again, key, CACHE_OPTIONS, cache, 0)[2]  # and now a plain hit


def test_a_full_disk_while_the_recipe_table_is_written_is_one_line_and_the_rerun_goes_on(tmp_path, monkeypatch):
    """The table goes to disk through bytes, so a full disk is the ``OSError`` behind it, not polars'
    ComputeError: one line naming the cache folder and the table; nothing kept; once there is room
    the same call writes it."""
    import errno

    from hygrail.cache import CacheWriteError
    from hygrail.recipes.page import recipe_table as cached_table

    data, cache = as_json(history(), tmp_path / "recipes.json"), tmp_path / "cache"
    write_bytes = Path.write_bytes

    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(CacheWriteError, match=f"^cannot write the parsed recipe table into {cache}: No space left on "
                                              r"device \(ENOSPC\); nothing half-written was kept"):
        cached_table(data, cache)
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []
    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    table, _, hit = cached_table(data, cache)
    assert not hit and table.height == len(history())
