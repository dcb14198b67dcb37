"""MatKG release files -> KG (paper §4, "Dataset").

``SUBRELOBJ.csv`` (``Subject,Object,Rel,Count``): one row per (entity, entity) pair per direction;
``Rel`` is the two entity types joined by ``-`` ("CHM-PRO": Subject is CHM, Object is PRO) and
``Count`` the number of papers mentioning both. A node is (type, name): "Carbon" as CHM and as DSC
are two nodes, and a Carbon/CHM - Carbon/DSC row is an ordinary edge, not a self loop.

Merging: all rows of one unordered pair become ONE undirected edge with count = max over its rows.
Exact duplicates and the two directions normally agree, so max changes nothing for them; when the
two directions disagree (a corrupt release) we keep the larger count rather than fail on one row of
5.4 M, and log a warning on ``hygrail.data`` with how many pairs disagree and an example's rows.

Optional ``ENTPTNERDOI.csv`` (``Entity,Part_of_text,NER_Tag,DOI,Preferred_Entity,Year``): an edge's
year is the earliest ``Year`` of a paper (DOI) whose mentions include both endpoints, a mention
matching a node by (NER_Tag, Preferred_Entity) = (type, name); edges without such a paper get -1.
Without the file every edge is undated and splits are random, not temporal: a warning says so.
Mentions of entities that are not nodes (other types, or pruned by Count >= 30) are dropped in the
scan, so their rows are not checked; an empty Year or DOI is skipped, a non-integer Year is an error.

Memory: both files are streamed with polars lazy scans. The year join never pairs entities with
DOIs wholesale: the scan keeps only mentions of graph nodes, as (node id, DOI hash, year) rows of
14 bytes; these are split by DOI hash into buckets of ``BUCKET_MENTIONS`` rows, and per bucket the
distinct (node, DOI) rows are joined with themselves on DOI and the co-mentioned pairs kept only if
they are edges, streamed straight into a per-edge minimum. Peak memory is the 14-byte rows plus one
bucket's tables plus the edge table (measured: 20 M mention rows -> 0.7 GB for the scan). DOIs are
compared by a 64-bit hash: for the release's ~5 M DOIs a collision has probability ~1e-6, and would
at worst give one edge an earlier year.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import polars as pl

from hygrail.data.csv import (
    ROW,
    collect,
    count_checks,
    editor_lines,
    empty,
    raise_first_problem,
    report_merged,
    report_years,
    require_rows,
    scan_checked,
    shown,
)
from hygrail.kg import KG, NO_YEAR, DataError, Schema

log = logging.getLogger("hygrail.data")

SUBRELOBJ_COLUMNS = ("Subject", "Object", "Rel", "Count")
MENTION_COLUMNS = ("NER_Tag", "DOI", "Preferred_Entity", "Year")  # Entity and Part_of_text are not needed
BUCKET_MENTIONS = 4_000_000
_BAD_YEAR = -(2**15)  # Int16 minimum: marks an unparsable Year; only then is the file rescanned for its row


def load_matkg(subrelobj: Path, schema: Schema, entptnerdoi: Path | None = None) -> KG:
    subrelobj = Path(subrelobj)
    nodes, edges = _read_subrelobj(subrelobj, schema)
    if entptnerdoi is not None:
        years = edge_years(Path(entptnerdoi), nodes, edges)
        edges = edges.with_columns(pl.Series("year", years, dtype=pl.Int32))
        report_years(Path(entptnerdoi), edges["year"], "no paper mentions both ends of any edge")
    else:
        report_years(subrelobj, pl.Series([NO_YEAR] * edges.height),
                     "no ENTPTNERDOI.csv: data.entptnerdoi unset or not found under data.path")  # fmt: skip
    return KG(schema, nodes.select("name", "type"), edges)


def _read_subrelobj(path: Path, schema: Schema) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(nodes: name, type, id) sorted by (schema type order, name); (edges: u, v, type, count) by (u, v)."""
    types = list(schema.node_types)
    lf = scan_checked(path, SUBRELOBJ_COLUMNS)
    require_rows(lf, path, "Subject,Object,Rel,Count row")
    lf = lf.with_columns(
        pl.col("Rel").str.extract(r"^([^-]+)-([^-]+)$", 1).alias("ta"),
        pl.col("Rel").str.extract(r"^([^-]+)-([^-]+)$", 2).alias("tb"),
        pl.col("Count").cast(pl.Int64, strict=False).alias("c"),
    )
    same_node = (pl.col("Subject") == pl.col("Object")) & (pl.col("ta") == pl.col("tb"))
    raise_first_problem(lf, path, [
        (empty("Subject"), pl.lit("empty Subject; expected an entity name")),
        (empty("Object"), pl.lit("empty Object; expected an entity name")),
        (~(pl.col("ta").is_in(types) & pl.col("tb").is_in(types)).fill_null(False),
         pl.format(f"Rel '{{}}' is not <type>-<type>; expected two of {','.join(types)} joined by '-'", shown("Rel"))),
        (same_node, pl.format("self loop: Subject and Object are the same {} entity '{}'; "
                              "expected two different entities", "ta", "Subject")),
        *count_checks("Count", "c"),
    ])  # fmt: skip

    # Orient each row canonically (lower schema type first; same type: lower name first) so both
    # directions of a pair share one key, then merge all rows of a key in one streaming group-by.
    ti = {t: i for i, t in enumerate(types)}
    lf = lf.with_columns(pl.col("ta").replace_strict(ti, return_dtype=pl.Int8).alias("ia"),
                         pl.col("tb").replace_strict(ti, return_dtype=pl.Int8).alias("ib"))  # fmt: skip
    swap = (pl.col("ia") > pl.col("ib")) | ((pl.col("ia") == pl.col("ib")) & (pl.col("Subject") > pl.col("Object")))
    pairs = collect(
        lf.select(
            pl.when(swap).then("ib").otherwise("ia").alias("ia"),
            pl.when(swap).then("Object").otherwise("Subject").alias("a"),
            pl.when(swap).then("ia").otherwise("ib").alias("ib"),
            pl.when(swap).then("Subject").otherwise("Object").alias("b"),
            "c",
            (~swap).alias("fwd"),
            ROW,
        )
        .group_by("ia", "a", "ib", "b")
        .agg(
            pl.col("c").max().alias("count"),
            pl.col("c").min().alias("cmin"),
            pl.len().alias("n"),
            pl.col("fwd").sum().alias("nfwd"),
            pl.col(ROW).min().alias("r1"),
            pl.col(ROW).max().alias("r2"),
        ),
        path,
    )
    _report(path, pairs, types)

    nodes = (
        pl.concat([pairs.select(pl.col("ia").alias("t"), pl.col("a").alias("name")),
                   pairs.select(pl.col("ib").alias("t"), pl.col("b").alias("name"))])  # fmt: skip
        .unique()
        .sort("t", "name")
        .with_row_index("id")
        .with_columns(pl.col("id").cast(pl.Int64), pl.col("t").replace_strict(dict(enumerate(types))).alias("type"))
    )
    ids = nodes.select("t", "name", "id")
    edges = (
        pairs.join(ids.rename({"t": "ia", "name": "a", "id": "u"}), on=["ia", "a"])
        .join(ids.rename({"t": "ib", "name": "b", "id": "v"}), on=["ib", "b"])
        .select(
            pl.min_horizontal("u", "v").alias("u"),
            pl.max_horizontal("u", "v").alias("v"),
            pl.format("{}-{}", pl.col("ia").replace_strict(dict(enumerate(types))),
                      pl.col("ib").replace_strict(dict(enumerate(types)))).alias("type"),  # fmt: skip
            "count",
        )
        .sort("u", "v")
    )
    return nodes.select("id", "name", "type"), edges


def _report(path: Path, pairs: pl.DataFrame, types: list[str]) -> None:
    """Log what merging did: exact duplicates, directions that disagree, pairs seen one way only."""
    directions = (pl.col("nfwd") > 0).cast(pl.Int64) + (pl.col("nfwd") < pl.col("n")).cast(pl.Int64)
    duplicates = int(pairs.select((pl.col("n") - directions).sum()).item())
    report_merged(path, duplicates, int(pairs.filter(pl.col("n") > directions).height), "count = max")
    disagree = pairs.filter(pl.col("count") != pl.col("cmin")).sort("r1")
    if disagree.height:
        ex = disagree.row(0, named=True)
        log.warning(
            "%s: %d pair(s) have rows with different Count; kept the max (e.g. %s '%s' - %s '%s': Count %d..%d, "
            "lines %d and %d)",
            path, disagree.height, types[ex["ia"]], ex["a"], types[ex["ib"]], ex["b"], ex["cmin"], ex["count"],
            *editor_lines(path, [ex["r1"], ex["r2"]]),
        )  # fmt: skip
    one_way = pairs.filter((pl.col("nfwd") == 0) | (pl.col("nfwd") == pl.col("n"))).height
    if one_way:
        log.info("%s: %d pair(s) appear in one direction only (the release lists both)", path, one_way)


def edge_years(path: Path, nodes: pl.DataFrame, edges: pl.DataFrame) -> np.ndarray:
    """Per edge (row order of ``edges``: u < v), the earliest Year of a DOI mentioning both ends, or -1.

    ``nodes``: id, name, type. See the module docstring for the bounded-memory bucketed self-join.
    """
    lf = scan_checked(path, MENTION_COLUMNS)
    year = _parsed_year()
    node_keys = nodes.lazy().select(
        pl.col("type").alias("NER_Tag"), pl.col("name").alias("Preferred_Entity"), pl.col("id").cast(pl.UInt32)
    )
    # 14 bytes per mention of a graph entity; no group-by here (its hash table cost 2.5x the
    # table on 20 M mentions): repeated (node, DOI) rows are collapsed per bucket below.
    mentions = collect(
        lf.join(node_keys, on=["NER_Tag", "Preferred_Entity"])
        .filter(~empty("DOI") & ~empty("Year"))
        .select(
            "id",
            pl.col("DOI").hash(seed=0).alias("doi"),
            pl.when(year.is_null()).then(pl.lit(_BAD_YEAR, pl.Int16)).otherwise(year).alias("year"),
        ),
        path,
    )
    if mentions.height and mentions["year"].min() == _BAD_YEAR:
        _raise_bad_year(lf, path, nodes)

    # One int64 key per node pair (u * N + v): a one-column join is ~1.5x faster than on (u, v).
    n = nodes.height
    keyed = edges.select((pl.col("u").cast(pl.Int64) * n + pl.col("v")).alias("key")).with_row_index("edge").lazy()
    n_buckets = max(1, -(-mentions.height // BUCKET_MENTIONS))
    parts = []
    for b in range(n_buckets):
        m = (
            mentions.lazy()
            .filter(pl.col("doi") % n_buckets == b)
            .group_by("id", "doi")
            .agg(pl.col("year").min())
            .with_columns(pl.col("id").cast(pl.Int64))
        )
        parts.append(
            m.join(m, on="doi", suffix="_2")
            .filter(pl.col("id") < pl.col("id_2"))
            .select((pl.col("id") * n + pl.col("id_2")).alias("key"), pl.min_horizontal("year", "year_2").alias("year"))
            .join(keyed, on="key")
            .group_by("edge")
            .agg(pl.col("year").min())
            .collect(engine="streaming")
        )
    earliest = pl.concat(parts).group_by("edge").agg(pl.col("year").min())
    years = np.full(edges.height, NO_YEAR, dtype=np.int32)
    years[earliest["edge"].to_numpy()] = earliest["year"].to_numpy()
    return years


def _parsed_year() -> pl.Expr:
    return pl.col("Year").cast(pl.Int16, strict=False)


def _raise_bad_year(lf: pl.LazyFrame, path: Path, nodes: pl.DataFrame) -> None:
    known = nodes.lazy().select(pl.col("type").alias("NER_Tag"), pl.col("name").alias("Preferred_Entity"))
    raise_first_problem(
        lf.join(known, on=["NER_Tag", "Preferred_Entity"], how="semi"),
        path,
        [(~empty("Year") & _parsed_year().is_null() & ~empty("DOI"),
          pl.format("Year '{}' is not a year; expected an integer publication year", shown("Year")))],
    )  # fmt: skip
    # Guard: the rescan above found the row in every case we know of; never use the marker as a year.
    raise DataError(f"{path}: a Year is not a year; expected an integer publication year")
