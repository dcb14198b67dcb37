"""The recipes page as a chemist asks it (issue #56; hygrail/recipes/asked.py, render.py, trust.py, page.py):
targets by composition, bad ones reported while the others are answered, repeats once, the target never
its own precursor and its own recorded routes first, each set's kind and the recorded recipe behind it,
the trust sentence from the back-test's table, run details last."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from hygrail.data.chemistry import amounts
from hygrail.recipes import trust
from hygrail.recipes.asked import Asked, itself, resolve, targets
from hygrail.recipes.benchmark import KS, RANKER, Cell
from hygrail.recipes.library import Library, Target
from hygrail.recipes.ranker import SetRanker, own_sets
from test_recipe_sets import FREE, ROOT, VOLATILE, as_table, doi, history, recipe_rows


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    """The history, and BaTiO3 under its name (composition BaTiO3) with a set holding BaTiO3 itself."""
    named = [(len(history()) + 1, "barium titanate", "barium titanate", "BaTiO3", ["Ba", "O", "Ti"],
              ["BaTiO3", "TiO2"], [["Ba", "O", "Ti"], ["O", "Ti"]], ["BaTiO3", "TiO2"], doi(2005, 999), 2005)]
    return pl.concat([as_table(history()), recipe_rows(named)])


@pytest.fixture(scope="module")
def lib(table) -> Library:
    return Library.build(table, None, VOLATILE, FREE)


def test_targets_are_read_by_name_or_composition_and_a_bad_one_is_reported(lib):
    asked = resolve(lib, "TiO3Ba")  # element order free
    assert asked.materials == ("BaTiO3", "barium titanate") and asked.matched.startswith("by composition: BaTiO3")
    assert resolve(lib, "Sr0.2Ba0.8TiO3").material == "Ba0.8Sr0.2TiO3"
    assert resolve(lib, "barium titanate").materials == ("barium titanate", "BaTiO3")
    assert resolve(lib, "Li6PS5Cl") == Asked("Li6PS5Cl", (), frozenset({"Li", "P", "S", "Cl"}))
    answered, problems = targets(lib, ["BaTiO3", "BaTi03", "Li6PS5Cl", "TiO3Ba", "Xx2O", "BaTiO3"])
    assert [a.name for a in answered] == ["BaTiO3", "Li6PS5Cl"]
    assert [(p.value, p.why) for p in problems] == [
        ("BaTi03", "'BaTi03' is no material of the recipes (closest: BaTiO3, BaTi0.8Zr0.2O3, BaTi0.7Zr0.3O3, "
                   "BaTi0.6Zr0.4O3, BaTi0.5Zr0.5O3) and not a formula: '03' (character 5) is an amount with a leading "
                   "zero; the letter O was probably meant: BaTiO3"),
        ("TiO3Ba", "'TiO3Ba' is the same target as 'BaTiO3', answered once"),
        ("Xx2O", "'Xx2O' is no material of the recipes and not a formula: 'Xx' (character 1) is not a chemical element"),
        ("BaTiO3", "'BaTiO3' is the same target as 'BaTiO3', answered once")]


def test_the_target_is_never_its_own_precursor_and_its_own_routes_come_first(table, lib):
    ranker = SetRanker(neighbours=10, composed=10).fit(table, 2010, VOLATILE, FREE)
    asked = resolve(lib, "barium titanate")
    assert {"BaTiO3", "barium titanate"} <= itself(lib, asked)
    own = frozenset().union(*(own_sets(lib, m) for m in asked.materials))
    assert ("BaTiO3", "TiO2") in own  # recorded for it: a set no synthesis would use
    props = ranker.propose(lib, asked.elements, 10, avoid=itself(lib, asked), first=own)
    assert all("BaTiO3" not in p.precursors for p in props)
    mine = {("BaCO3", "TiO2"), ("BaO", "TiO2"), ("Ba(NO3)2", "TiO2")}
    assert {p.precursors for p in props[:3]} == mine  # its recorded routes lead, in the model's order


def recipe(target: str, pres: list[str], year: int, n: int, **more) -> dict:
    def material(f):
        return {"material_formula": f, "composition": [
            {"formula": f, "elements": {e: str(v) for e, v in amounts(f).items()}, "amount": "1"}]}
    return {"doi": doi(year, n), "target": material(target), "precursors": [material(p) for p in pres], **more}


def write_trust(path, rows) -> None:
    pl.DataFrame([{"relation": "syn_tgt_pre", "cutoff": c, "horizon": 3, "list": RANKER, "population": pop,
                   "band": band, "k": 5, "entities": n, "hit_rate": h, "precision": p}
                  for c, pop, band, n, h, p in rows], schema=trust.COLUMNS).write_csv(path)


def test_the_page_opens_on_the_question_the_trust_sentence_and_the_sets(tmp_path):
    from hydra import compose, initialize_config_dir

    from hygrail.recipes.page import main

    fired = {"reaction_string": "1 BaCO3 + 1 TiO2 == 1 BaTiO3 + 1 CO2", "operations": [
        {"type": "HeatingOperation", "token": "calcined", "conditions": {
            "heating_temperature": [{"values": [1100.0], "units": "C"}], "heating_time": [{"values": [4.0], "units": "h"}],
            "heating_atmosphere": ["air"]}}]}
    recipes = [recipe(m, pres, y, i, **(fired if (m, pres) == ("BaTiO3", ["BaCO3", "TiO2"]) else {}))
               for i, (m, _, pres, y) in enumerate(history(), start=1)]
    data = tmp_path / "recipes.json"
    data.write_text(json.dumps({"reactions": recipes}))
    table = tmp_path / "trust.csv"
    write_trust(table, [(2010, "seen", "all", 300, 0.8, 0.25), (2014, "seen", "all", 400, 0.814, 0.231),
                        (2014, "seen", "1-3", 50, 0.9, 0.3)])  # too few targets in its band: the "all" row is read
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["task=recipes", "data=synthesis_recipes", f"data.path={data}",
                                           f"paths.outputs={tmp_path / 'out'}", "recipes.neighbours=10",
                                           "recipes.composed=10", f"recipes.trust={table}",
                                           "recipes.targets='TiO3Ba, BaTi03, Li6PS5Cl'"])
    main(cfg)
    (folder,) = (tmp_path / "out" / "recipes").iterdir()
    page = (folder / "index.html").read_text()
    sets = pl.read_csv(folder / "sets.csv")
    assert sets["target"].unique(maintain_order=True).to_list() == ["TiO3Ba", "Li6PS5Cl"]
    first = sets.row(0, named=True)
    assert (first["precursors"], first["kind"]) == ("BaCO3 + TiO2", "recorded")
    assert first["reaction"] == "1 BaCO3 + 1 TiO2 == 1 BaTiO3 + 1 CO2" and first["firing"] == "calcined: 1100 °C, 4 h, air"
    assert set(sets["kind"]) <= {"recorded", "adapted", "composed"} and "adapted" in set(sets["kind"])
    seen = ("For 81% of targets like this one (a composition the recipes record), one of these 5 sets was recorded "
            "within 3 years; on average 23% of the 5 were (back-test from the recipes up to 2014, 400 targets).")
    unseen = "No back-test figure exists yet for a composition the recipes lack and 5 sets"
    assert seen in page and unseen in page
    question = page.index("id='question'")
    assert "Which precursors to try for TiO3Ba, BaTi03, Li6PS5Cl?" in page
    assert question < page.index(seen) < page.index("<table class='sets'>") < page.index("<details id='run'>")
    assert "the letter O was probably meant: BaTiO3" in page  # the bad target, named
    assert "matched by composition: BaTiO3" in page and "calcined: 1100 °C, 4 h, air" in page
    assert "log-odds" not in page and "ranker.py" in page.split("<details id='run'>")[1]  # developer facts: last
    md = (folder / "sets.md").read_text()
    assert md.index(seen) < md.index("## Run details")


def test_make_discover_targets_quotes_each_target_for_hydra(tmp_path):
    """`make discover DATA=synthesis_recipes TARGETS="LiCoO2, Na3V2(PO4)3"` (issue #56): brackets, ·, an
    apostrophe and a quote reach Hydra as the targets typed; ARGS still passes through."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from test_question_page import _make

    names = ["LiCoO2", "Na3V2(PO4)3", "CuSO4·5H2O", "Li's \"x\"", "barium titanate"]
    done = _make(tmp_path, "DATA=synthesis_recipes", "TARGETS=" + ", ".join(names), "ARGS=recipes.sets=3")
    assert done.returncode == 0, done.stderr
    args = done.stdout.splitlines()
    assert args[:3] == ["-m", "hygrail.sweep", "experiment=discover_synthesis_recipes"]
    targets_, sets = OverridesParser.create().parse_overrides(args[3:])
    assert (targets_.key_or_group, targets_.value()) == ("recipes.targets", names)
    assert (sets.key_or_group, sets.value()) == ("recipes.sets", 3)
    bad = _make(tmp_path, "TARGETS=LiCoO2")
    assert bad.returncode != 0 and 'make discover: TARGETS="LiCoO2" with DATA=; expected DATA=synthesis_recipes' \
        in bad.stderr


def test_trust_rows_figures_and_sentences():
    def target(m, n_elements, unseen, known=False):
        els = frozenset(["O", "Ba", "Ti", "Sr", "Ca", "Zr"][:n_elements])
        return Target(m, els, frozenset(), known, 2011, unseen, None if m.startswith("x") else m)

    targets_ = [target("a", 3, False), target("b", 3, False), target("c", 4, True), target("d", 5, True),
                target("e", 3, False, known=True), target("x1", 3, False)]
    success = np.array([[1, 1, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 1], [1, 1, 1, 1], [1, 1, 1, 1]], bool)
    found = np.array([[1, 1, 2, 2], [0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 1], [1, 1, 1, 1], [1, 1, 1, 1]])
    cell = Cell(2014, targets_, {RANKER: success}, {}, {RANKER: found})
    rows = trust.rows(cell, 3)
    assert rows.columns == list(trust.COLUMNS)
    at5 = {(r["population"], r["band"]): r for r in rows.filter(pl.col("k") == 5).iter_rows(named=True)}
    # seen: a and b (new, a recorded composition); neither the known e nor the written x1
    assert at5["seen", "all"]["entities"] == 2 and at5["seen", "all"]["hit_rate"] == 1.0
    assert at5["seen", "all"]["precision"] == pytest.approx((2 / 5 + 1 / 5) / 2)
    assert at5["unseen", "all"]["hit_rate"] == 0.5 and at5["unseen", "4"]["hit_rate"] == 1.0
    assert at5["unseen", "5+"]["hit_rate"] == 0.0 and at5["seen", "4"]["entities"] == 0
    assert at5["seen", "4"]["hit_rate"] is None
    assert len(rows) == 2 * 4 * len(KS)
    big = pl.concat([rows.with_columns(pl.col("entities") * 100), rows.with_columns(pl.lit(2010, pl.Int64).alias("cutoff"))])
    assert trust.figure(big, "unseen", 4, 5)["band"] == "4"  # its band holds enough targets, at the latest cutoff
    assert trust.figure(big, "unseen", 4, 5)["cutoff"] == 2014
    assert trust.figure(rows, "unseen", 4, 5)["band"] == "all"  # 1 target in its band: too few
    assert trust.figure(None, "seen", 3, 5) is None and trust.figure(rows, "seen", 3, 7) is None
    assert trust.sentence(None, "unseen", 5).startswith("No back-test figure exists yet for a composition the "
                                                        "recipes lack")


def test_a_trust_table_that_is_no_table_fails_in_one_line(tmp_path):
    from hygrail.kg import DataError

    bad = tmp_path / "trust.csv"
    bad.write_text("relation,cutoff\nsyn_tgt_pre,2014\n")
    with pytest.raises(DataError, match=r"trust\.csv: no column horizon, list, population, band, k, entities, "
                                        r"hit_rate, precision; expected relation, cutoff"):
        trust.read(bad)
    assert trust.read(tmp_path / "none.csv") is None
