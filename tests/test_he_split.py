"""He et al.'s split replayed (hygrail/recipes/he_split.py): parts by the linked group's earliest year,
test years the last 10% of the key reactions' years, test targets grouped by identity."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from hygrail.kg import NO_YEAR, DataError
from hygrail.recipes import he_split
from hygrail.recipes.benchmark import Cell, paired, past, table_of
from hygrail.recipes.ranker import SetRanker
from test_recipe_sets import FREE, PRE, VOLATILE, as_table, history, recipe_rows

ELEMENTS = {"BaTiO3": "Ba Ti O", "SrTiO3": "Sr Ti O", "CaTiO3": "Ca Ti O", "Ca-titanate": "Ca Ti O",
            "SrZrO3": "Sr Zr O", "Ca1-xSrxTiO3": "Ca Sr Ti O"}


def rows(spec) -> pl.DataFrame:
    """(material, composition or None, precursors, doi, year) -> recipe rows."""
    return recipe_rows([(i, m, m, comp, sorted(ELEMENTS.get(m, "Li Ti O").split()), sorted(pres),
                         [sorted(PRE[p].split()) for p in sorted(pres)], sorted(pres), d, y)
                        for i, (m, comp, pres, d, y) in enumerate(spec, start=1)])


@pytest.fixture(scope="module")
def parts():
    # one new material a year 2000-2019 in a paper of its own: 20 key years -> 17 train, 1 val, 2 test
    spec = [(f"Li{y - 1990}TiO{y - 1980}", f"Li{y - 1990}TiO{y - 1980}", ["Li2CO3", "TiO2"], f"doi/{y}", y)
            for y in range(2000, 2020)]
    spec += [
        ("BaTiO3", "BaTiO3", ["BaCO3", "TiO2"], "doi/2003b", 2003),
        ("BaTiO3", "BaTiO3", ["BaO", "TiO2"], "doi/2018b", 2018),  # an earlier material in a test year: train
        ("SrTiO3", "SrTiO3", ["SrCO3", "TiO2"], "doi/2018b", 2019),  # new, but in that paper: train too
        ("CaTiO3", "CaTiO3", ["CaCO3", "TiO2"], "doi/2018c", 2018),  # new in a new paper: a test target
        ("CaTiO3", "CaTiO3", ["CaCO3", "TiO2"], "doi/2019c", 2019),  # its same set again: one answer
        ("Ca-titanate", "CaTiO3", ["CaCO3", "TiO2", "Li2CO3"], "doi/2019d", 2019),
        ("SrZrO3", None, ["SrCO3", "ZrO2"], "doi/none", NO_YEAR),  # undated: no part
        ("Ca1-xSrxTiO3", None, ["CaCO3", "SrCO3", "TiO2"], "doi/2019e", 2019),  # a written name only: no number
    ]
    return he_split.split(rows(spec))


def test_parts_follow_the_linked_groups_earliest_year(parts):
    assert parts.val_years == (2017,) and parts.test_years == (2018, 2019) and parts.cutoff == 2017
    part = dict(parts.parts.select("material", "part").unique().iter_rows())
    assert part["BaTiO3"] == "train"  # 2003 and 2018 share its composition
    assert part["SrTiO3"] == "train"  # first seen in 2019, but in the 2018 paper on BaTiO3
    assert part["CaTiO3"] == part["Ca-titanate"] == "test" and part["Li27TiO37"] == "val"
    assert "SrZrO3" not in part
    assert parts.later_train == 2  # BaTiO3 2018 and SrTiO3 2019: their knowledge base reads both


def test_test_targets_are_grouped_by_identity_with_every_set_as_an_answer(parts):
    targets = {t.material: t for t in parts.targets}
    assert sorted(targets) == ["Ca1-xSrxTiO3", "CaTiO3", "Li28TiO38", "Li29TiO39"]  # "Ca-titanate" is CaTiO3
    # He et al.'s kind (issue #54, item 3): a numeric composition; the written name is reported apart
    assert targets["CaTiO3"].numeric and targets["CaTiO3"].composition == "CaTiO3"
    assert not targets["Ca1-xSrxTiO3"].numeric and not targets["Ca1-xSrxTiO3"].unseen
    cell = Cell(parts.cutoff, parts.targets, {"x": np.array([[1], [0], [1], [1]], bool),
                                              "y": np.array([[0], [0], [1], [0]], bool)})
    assert [t.material for t in cell.targets] == ["Ca1-xSrxTiO3", "CaTiO3", "Li28TiO38", "Li29TiO39"]
    assert table_of(cell, ks=(5,), which="numeric")["targets"].to_list() == [3, 3]
    assert table_of(cell, ks=(5,), which="written")["success_at_5"].to_list() == [1.0, 0.0]
    assert paired(cell, ks=(5,), against="x", which="numeric")["at_5"].to_list() == pytest.approx([1 / 3])
    assert targets["CaTiO3"].answers == {("CaCO3", "TiO2"), ("CaCO3", "Li2CO3", "TiO2")}
    assert targets["CaTiO3"].first_year == 2018 and targets["CaTiO3"].unseen and not targets["CaTiO3"].known
    assert targets["CaTiO3"].elements == frozenset({"Ca", "Ti", "O"})


def test_the_rows_propose_from_their_training_part_and_from_the_recipes_up_to_the_cutoff():
    table = as_table(history())  # 2000-2012, a paper per recipe: each family member a key reaction
    parts, cells = he_split.run(table, VOLATILE, FREE, SetRanker(neighbours=10, composed=10))
    theirs, strict = cells.values()
    assert theirs.facts["library recipes"] == parts.train.height
    assert strict.facts["library recipes"] == past(table, parts.cutoff).height
    # 13 key years: int(13 * 0.85) = int(13 * 0.9) = 11, so no validation year and the last two tested
    assert parts.val_years == () and parts.test_years == (2011, 2012) and parts.cutoff == 2010
    assert len(parts.targets) > 0
    for cell in cells.values():
        assert set(cell.success) >= {"Set ranker", "He et al. (element similarity)"}
        assert cell.success["Set ranker"].shape == (len(parts.targets), 4)
        assert 0 < cell.success["Set ranker"][:, 2].mean() <= cell.facts["ranker recall"] <= 1


def test_no_dated_recipe_fails_in_one_line():
    with pytest.raises(DataError, match="no dated recipe"):
        he_split.split(rows([("SrZrO3", None, ["SrCO3", "ZrO2"], "doi/none", NO_YEAR)]))
