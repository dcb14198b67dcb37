"""How far to trust a page's five sets (issue #56): the precursor-set back-test's hit rate for targets
like the asked one, in a sentence a chemist reads.

The figures (``rows``) come from the benchmark's per-target results (``benchmark.Cell``) at each
cutoff: for the set ranker (the list the page shows), per population and size band, the share of
targets whose first k sets hold one recorded within the horizon (``hit_rate``) and the mean share of
those k sets that were recorded (``precision``). Populations are the two a page can be asked about:
``seen``, a new material whose composition the library records under another name (a page target the
recipes record, by name or by composition: its recorded sets are candidates, as the page's are), and
``unseen``, a composition the library lacks (a page's new composition; He et al.'s kind). A material
recorded by the cutoff that gets a new set later answers another question (a new route, its known ones
excluded) and is not a page's population. Bands: the target's number of elements (``BANDS``), and
``all``.

``bench/bench_recipe_sets.py --trust`` writes them to the CSV ``recipes.trust`` names
(experiments/trust/syn_tgt_pre_sets.csv, its provenance in experiments/recipes_sets.md); the page
(``figure``, ``sentence``) reads the latest cutoff's row of its population and band, the band's own
row where it holds at least ``MIN_TARGETS`` targets, else the population's ``all`` row, and says
plainly when the file or the row is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import polars as pl

from hygrail.kg import DataError
from hygrail.recipes.benchmark import KS, RANKER, Cell, population

COLUMNS = {"relation": pl.String, "cutoff": pl.Int64, "horizon": pl.Int64, "list": pl.String,
           "population": pl.String, "band": pl.String, "k": pl.Int64, "entities": pl.Int64,
           "hit_rate": pl.Float64, "precision": pl.Float64}
RELATION = "syn_tgt_pre"
POPULATIONS = {"seen": "a composition the recipes record", "unseen": "a composition the recipes lack"}
BANDS = {"1-3": (1, 3), "4": (4, 4), "5+": (5, 10**6)}  # elements per target
MIN_TARGETS = 100  # a band's own figure is shown from this many back-test targets on


def band(elements: int) -> str:
    """The size band (``BANDS``) of a target of ``elements`` elements."""
    return next(name for name, (lo, hi) in BANDS.items() if lo <= elements <= hi)


def rows(cell: Cell, horizon: int, ks: Sequence[int] = KS, method: str = RANKER) -> pl.DataFrame:
    """The trust rows of one benchmark cell (module docstring), ``COLUMNS``."""
    sizes = np.array([len(t.elements) for t in cell.targets])
    out = []
    for pop in POPULATIONS:
        mask = population(cell, pop)
        for name, (lo, hi) in {"all": (0, 10**6), **BANDS}.items():
            m = mask & (sizes >= lo) & (sizes <= hi)
            for j, k in enumerate(ks):
                n = int(m.sum())
                out.append({"relation": RELATION, "cutoff": cell.cutoff, "horizon": horizon, "list": method,
                            "population": pop, "band": name, "k": k, "entities": n,
                            "hit_rate": float(cell.success[method][m, j].mean()) if n else None,
                            "precision": float((cell.found[method][m, j] / k).mean()) if n else None})
    return pl.DataFrame(out, schema=COLUMNS)


def read(path: Path) -> pl.DataFrame | None:
    """The trust table at ``path``; None when there is none; one line when it is not one."""
    if not Path(path).is_file():
        return None
    try:
        table = pl.read_csv(path, schema_overrides=COLUMNS)
    except pl.exceptions.PolarsError as e:
        raise DataError(f"{path}: not a readable trust table ({str(e).splitlines()[0]}); expected a CSV with "
                        f"columns {', '.join(COLUMNS)} (bench/bench_recipe_sets.py --trust)") from None
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise DataError(f"{path}: no column {', '.join(missing)}; expected {', '.join(COLUMNS)} "
                        f"(bench/bench_recipe_sets.py --trust)")
    return table


def figure(table: pl.DataFrame | None, pop: str, elements: int, k: int, method: str = RANKER) -> dict | None:
    """The row the page shows for a target of population ``pop`` with ``elements`` elements (module
    docstring), as a dict; None when the table holds none."""
    if table is None:
        return None
    mine = table.filter((pl.col("relation") == RELATION) & (pl.col("list") == method) & (pl.col("population") == pop)
                        & (pl.col("k") == k) & pl.col("hit_rate").is_not_null())
    if mine.is_empty():
        return None
    latest = mine.filter(pl.col("cutoff") == mine["cutoff"].max())
    own = latest.filter((pl.col("band") == band(elements)) & (pl.col("entities") >= MIN_TARGETS))
    pick = own if not own.is_empty() else latest.filter(pl.col("band") == "all")
    return pick.row(0, named=True) if not pick.is_empty() else None


def sentence(row: dict | None, pop: str, k: int) -> str:
    """The trust sentence (module docstring) of ``figure``'s row, or what is missing."""
    if row is None:
        return (f"No back-test figure exists yet for {POPULATIONS[pop]} and {k} sets: how often such a list holds a "
                f"recorded route is unknown (bench/bench_recipe_sets.py --trust writes it).")
    like = POPULATIONS[pop] + (f", {row['band']} elements" if row["band"] != "all" else "")
    return (f"For {row['hit_rate']:.0%} of targets like this one ({like}), one of these {k} sets was recorded within "
            f"{row['horizon']} years; on average {row['precision']:.0%} of the {k} were (back-test from the recipes "
            f"up to {row['cutoff']}, {row['entities']:,} targets).")
