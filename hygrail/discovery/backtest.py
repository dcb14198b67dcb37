"""How far to trust a list, in one sentence a clinician or chemist reads (issue #56): "for 47% of
diseases like this one (known at the 2018 cutoff, 5-19 clinical features recorded), one of the first 10
of this list was recorded within 3 years".

The figures come from the whole-graph retrospective's per-entity rows (``make retro``: every entity's
list ranked from the graph cut at a year, against what was recorded after it), summarised into a
committed CSV per relation (``discover.trust_table``, default ``experiments/trust/<relation>.csv``) with
the columns ``COLUMNS``:

- ``relation``, ``cutoff`` (year), ``horizon`` (years after it);
- ``list``: the label of the ranking a page shows (``EntityList.ranker``: 'Stack (trees + GNN)', 'GNN');
- ``population``: ``known`` (the entity had partners in the relation at the cutoff) or ``new`` (none);
- ``band``: the entity's degree in the relation at the cutoff, ``a-b`` (both included), ``a+`` or ``all``;
- ``k``, ``entities`` (how many the row averages), ``hit_rate`` (the share of them with an answer in the
  first k), ``precision`` (mean precision@k).

A listed entity's row (``pick``): its relation, its list, its population and degree band at the page's
date (a page without a cutoff reads the whole graph: known iff something is recorded for it), the
band holding its degree if it averages at least ``MIN_ENTITIES`` entities (else the row of ``all``), then the latest cutoff holding such a row, and there
the horizon ``HORIZON`` and list size ``K`` (else the longest horizon and the largest k). No table, or no
such row: the page says plainly that there is no back-test figure for that list yet (``missing``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from hygrail.kg import DataError

COLUMNS = ("relation", "cutoff", "horizon", "list", "population", "band", "k", "entities", "hit_rate", "precision")
POPULATIONS = ("known", "new")
HORIZON = 3  # the retrospective's headline horizon (conf/discover/default.yaml: horizons)
K = 10  # "one of these 10": the list size the retrospective's per-entity lifts compare at
# a band's share of fewer entities moves by 0.09 or more (binomial SE at 0.5); such a band reads its population's
# row of all entities instead (HPO's 100+ band holds 2 diseases at every cutoff: experiments/trust/hpo_dis_phe.csv)
MIN_ENTITIES = 30
_BAND = re.compile(r"^(\d+)(?:-(\d+)|(\+))$")


def read_table(path: Path) -> pl.DataFrame | None:
    """The trust table at ``path``; None when there is no such file; a one-line DataError naming the
    file when it is not the documented CSV."""
    if not path.is_file():
        return None
    try:
        table = pl.read_csv(path, infer_schema_length=None)
    except (pl.exceptions.PolarsError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: not a CSV file ({str(e).splitlines()[0]}); expected columns {', '.join(COLUMNS)}") \
            from None
    absent = [c for c in COLUMNS if c not in table.columns]
    if absent:
        raise DataError(f"{path}: line 1 (header): missing column(s) {', '.join(absent)}; expected {', '.join(COLUMNS)}")
    bad = table.with_row_index("line", offset=2).filter(
        ~pl.col("population").is_in(POPULATIONS)
        | ~pl.col("band").cast(pl.String).map_elements(lambda b: b == "all" or bool(_BAND.match(b)), pl.Boolean))
    if bad.height:
        r = bad.row(0, named=True)
        raise DataError(f"{path}: line {r['line']}: population {r['population']!r}, band {r['band']!r}; expected "
                        f"population known or new and a band such as 1-4, 100+ or all")
    return table.with_columns(pl.col("band").cast(pl.String))


def in_band(band: str, degree: int) -> bool:
    """Whether ``degree`` lies in ``band`` ('5-19', '100+', 'all')."""
    if band == "all":
        return True
    m = _BAND.match(band)
    low, high = int(m.group(1)), (math.inf if m.group(3) else int(m.group(2)))
    return low <= degree <= high


@dataclass(frozen=True)
class Figure:
    """One row of the trust table, as a page states it."""

    cutoff: int
    horizon: int
    population: str
    band: str
    k: int
    entities: int
    hit_rate: float
    precision: float


def pick(table: pl.DataFrame | None, relation: str, label: str, degree: int) -> Figure | None:
    """The row for an entity of ``degree`` partners in ``relation`` whose list is ``label`` (module
    docstring), or None."""
    if table is None:
        return None
    population = "known" if degree > 0 else "new"
    rows = table.filter((pl.col("relation") == relation) & (pl.col("list") == label)
                        & (pl.col("population") == population))
    mine = rows.filter(pl.col("band").map_elements(lambda b: b != "all" and in_band(b, degree), pl.Boolean)
                       & (pl.col("entities") >= MIN_ENTITIES))
    rows = mine if mine.height else rows.filter(pl.col("band") == "all")
    if not rows.height:
        return None
    rows = rows.filter(pl.col("cutoff") == rows["cutoff"].max())
    horizon = HORIZON if HORIZON in rows["horizon"].to_list() else rows["horizon"].max()
    rows = rows.filter(pl.col("horizon") == horizon)
    k = K if K in rows["k"].to_list() else rows["k"].max()
    r = rows.filter(pl.col("k") == k).row(0, named=True)
    return Figure(int(r["cutoff"]), int(r["horizon"]), population, r["band"], int(r["k"]), int(r["entities"]),
                  float(r["hit_rate"]), float(r["precision"]))


def plural(noun: str) -> str:
    return noun if noun.endswith("s") else noun + "s"


def sentence(f: Figure, noun: str, partner: str) -> str:
    """The figure as a page says it; ``noun``: what the entity is ('disease'), ``partner``: what is
    listed for it ('clinical feature')."""
    nouns, partners = plural(noun), plural(partner)
    if f.population == "known":
        like = f"known at the {f.cutoff} cutoff"
        if f.band != "all":
            count = f"{f.band[:-1]} or more" if f.band.endswith("+") else f.band
            like += f", {count} {partners} recorded"
    else:
        like = f"with nothing recorded at the {f.cutoff} cutoff"
    years = f"{f.horizon} year{'s' if f.horizon != 1 else ''}"
    return (f"For {f.hit_rate:.0%} of {nouns} like this one ({like}; {f.entities:,} {nouns}), one of the first "
            f"{f.k} of this list was recorded within {years} ({f.precision * f.k:.1f} of the {f.k} on average).")


def missing(path: Path | None, table: pl.DataFrame | None, label: str, degree: int, noun: str) -> str:
    """What a page says when ``pick`` found nothing; ``path`` None: ``discover.trust_table`` is not set."""
    who = f"known {plural(noun)}" if degree > 0 else f"{plural(noun)} with nothing recorded"
    where = ("discover.trust_table is not set" if path is None else
             f"{path}: that file does not exist" if table is None else f"{path} holds no row for it")
    return f"No back-test figure for this list ({label}, {who}) yet: {where}."
