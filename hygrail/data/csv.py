"""Generic typed weighted KG as two CSV files, and the checked CSV reading the loaders share.

``nodes.csv``: ``id,name,type`` -- ids are any strings (``"7"``, ``"Q42"``), unique; a node is
identified by (type, name), so the same name may appear under two types but not twice under one.
KG node ids are row positions in this file.

``edges.csv``: ``src,dst,type,count[,year]`` -- src/dst are ids from nodes.csv; type is the edge
type in either orientation (``CHM-PRO`` or ``PRO-CHM``) and must match the endpoints' types; count
is an integer >= 1; year is an integer, empty or -1 meaning unknown. Without years (no ``year``
column, or none known) splits are random instead of temporal: logged as a warning here and per
relation by ``hygrail.data.split``.

Edges are undirected, so rows of the same unordered pair (duplicates, or both directions as in the
MatKG release) are merged into one edge: count = max (counts are paper counts, so a repeated row
must not inflate them), year = earliest known. The merge is logged as a warning on logger
``hygrail.data``. Edge order is first appearance, so ``save_csv`` then ``load_csv`` is exact.

Every user error is a ``DataError`` whose one-line message names the file, the place (``line N``
as an editor shows it: the header is line 1, blank lines count, a quoted field spanning lines
takes all its lines) and what was expected. A row with fewer or more fields than the header is an
error, never an undated or half-empty row: the scan alone cannot tell "2,1,PRO-CHM,7" (year
missing) from "2,1,PRO-CHM,7," (year empty, i.e. unknown), so ``scan_checked`` counts each line's
fields first (one streaming pass over the lines, ~0.14 s for 2.7 M rows; a file with quoted
line breaks is counted record by record with Python's csv module instead).
"""

from __future__ import annotations

import csv as stdlib_csv  # this module is hygrail.data.csv
import logging
from pathlib import Path
from typing import Sequence

import polars as pl

from hygrail.kg import KG, NO_YEAR, DataError, Schema

log = logging.getLogger("hygrail.data")

ROW = "__row"  # 1-based data-row (record) index added to every scan; messages show editor_lines() of it
NODE_COLUMNS = ("id", "name", "type")
EDGE_COLUMNS = ("src", "dst", "type", "count")


# -- checked CSV reading (shared with the MatKG loader) ---------------------------------------
def scan_checked(path: Path, columns: Sequence[str], optional: Sequence[str] = ()) -> pl.LazyFrame:
    """Lazy scan of a UTF-8 CSV: the given (and present optional) columns as strings plus ``ROW``.

    Checks the file exists, is not empty, its header has every required column, and every row has
    the header's number of fields.
    """
    path = Path(path)
    expected = ",".join(columns)
    if not path.is_file():
        raise DataError(f"{path}: file not found; expected a CSV file with columns {expected}")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: line 1: empty file; expected a header line {expected}")
    lf = pl.scan_csv(path, infer_schema=False, row_index_name=ROW, row_index_offset=1)
    try:
        header = lf.collect_schema().names()[1:]
    except pl.exceptions.PolarsError as e:
        raise DataError(f"{path}: line 1 (header): unreadable ({_first_line(e)}); expected {expected}") from None
    missing = [c for c in columns if c not in header]
    if missing:
        raise DataError(
            f"{path}: line 1 (header): missing column(s) {','.join(missing)}; "
            f"expected columns {expected}, found {','.join(header)}"
        )
    _check_widths(path, header)
    present = [*columns, *(c for c in optional if c in header)]
    # A blank line parses as a row of nulls: skip it (it still counts in the row numbering).
    return lf.select(ROW, *present).filter(~pl.all_horizontal(pl.col(c).is_null() for c in present))


def collect(lf: pl.LazyFrame, path: Path) -> pl.DataFrame:
    """Streaming collect of a query over ``path``; parse failures become a one-line DataError."""
    try:
        return lf.collect(engine="streaming")
    except pl.exceptions.PolarsError as e:
        if _is_utf8_error(e):
            _raise_non_utf8(path)
        raise DataError(f"{path}: not a readable CSV file ({_first_line(e)})") from None


def _check_widths(path: Path, header: Sequence[str]) -> None:
    """DataError at the first row whose field count differs from the header's. Fast path: count the
    separators outside quotes on each line; only a file where that finds a suspect line (a ragged
    row, or a quoted field spanning lines) is read again record by record."""
    text = pl.col("text")
    fields = text.str.replace_all(r'"[^"]*"', "").str.count_matches(",") + 1
    suspect = (text.str.count_matches('"') % 2 == 1) | ((pl.col("line") > 1) & (text != "") & (fields != len(header)))
    try:
        lines = pl.scan_lines(path, name="text", row_index_name="line", row_index_offset=1)
        found = lines.filter(suspect).head(1).collect(engine="streaming").height
    except pl.exceptions.PolarsError as e:
        if _is_utf8_error(e):
            _raise_non_utf8(path)
        raise DataError(f"{path}: not a readable CSV file ({_first_line(e)})") from None
    if not found:
        return
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        rows = stdlib_csv.reader(f)
        next(rows, None)
        start = rows.line_num + 1
        for row in rows:
            if row and len(row) != len(header):  # blank lines are skipped by the scan too
                raise DataError(f"{path}: line {start}: {len(row)} field(s); expected {len(header)} like the "
                                f"header {','.join(header)}")
            start = rows.line_num + 1


def editor_lines(path: Path, rows: Sequence[int]) -> list[int]:
    """The line an editor shows each data row (``ROW``) on: row + 1, unless a quoted field before it
    spans lines. Only for messages: rereads the file up to the last of ``rows``."""
    want, found = set(rows), {}
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        records = stdlib_csv.reader(f)
        start = 1
        for i, _ in enumerate(records):  # record 0 is the header
            if i in want:
                found[i] = start
                if len(found) == len(want):
                    break
            start = records.line_num + 1
    return [found.get(r, r + 1) for r in rows]


def _is_utf8_error(e: Exception) -> bool:
    return "utf-8" in str(e).lower() or "utf8" in str(e).lower()


def _raise_non_utf8(path: Path) -> None:
    """Only on the failure path: rescan lossily and name the line holding a replacement char."""
    lf = pl.scan_csv(path, infer_schema=False, row_index_name=ROW, row_index_offset=1, encoding="utf8-lossy")
    cols = [c for c in lf.collect_schema().names() if c != ROW]
    bad = lf.filter(pl.any_horizontal(pl.col(c).str.contains("\ufffd", literal=True) for c in cols))
    rows = bad.select(ROW).head(1).collect()[ROW]
    where = f"line {editor_lines(path, [int(rows[0])])[0]}" if len(rows) else "somewhere"
    raise DataError(f"{path}: {where}: invalid UTF-8 bytes; expected a UTF-8 encoded file") from None


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def raise_first_problem(lf: pl.LazyFrame, path: Path, checks: Sequence[tuple[pl.Expr, pl.Expr]]) -> None:
    """Raise DataError for the first data row where a check's condition holds.

    ``checks``: (condition, message) expressions, in priority order; the message says what the
    row has and what was expected. One streaming pass; nothing but the offending row is kept.
    """
    message = pl.coalesce([pl.when(cond.fill_null(False)).then(msg) for cond, msg in checks])
    bad = lf.select(ROW, message.alias("problem")).filter(pl.col("problem").is_not_null())
    bad = collect(bad.sort(ROW).head(1), path)  # sort + head = top-k: the earliest bad row only
    if bad.height:
        raise DataError(f"{path}: line {editor_lines(path, [bad[ROW][0]])[0]}: {bad['problem'][0]}")


def require_rows(lf: pl.LazyFrame, path: Path, what: str) -> None:
    if collect(lf.select(ROW).head(1), path).height == 0:
        raise DataError(f"{path}: line 2: no data rows after the header; expected at least one {what}")


def empty(col: str) -> pl.Expr:
    return pl.col(col).is_null() | (pl.col(col).str.strip_chars() == "")


def shown(col: str) -> pl.Expr:
    """The raw cell for an error message (empty cells shown as '')."""
    return pl.col(col).fill_null("")


def count_checks(col: str, parsed: str) -> list[tuple[pl.Expr, pl.Expr]]:
    """A support count must be an integer >= 1."""
    expected = "expected an integer count >= 1"
    return [
        (pl.col(parsed).is_null(), pl.format(f"{col} '{{}}' is not an integer; {expected}", shown(col))),
        (pl.col(parsed) < 1, pl.format(f"{col} {{}} is not positive; {expected}", pl.col(parsed))),
    ]


def report_years(path: Path, years: pl.Series, why_none: str) -> None:
    """Say on the log how many edges carry a year: a split of undated edges is random, not temporal
    (hygrail.data.split warns again per relation and records the kind on the Split)."""
    dated = int((years != NO_YEAR).sum())
    if dated == 0:
        log.warning("%s: no edge has a year (%s), so every split of this KG is random, not temporal (paper §4)",
                    path, why_none)  # fmt: skip
    else:
        log.info("%s: %d of %d edges have a year", path, dated, len(years))


def report_merged(path: Path, merged_rows: int, pairs: int, how: str) -> None:
    if merged_rows:
        log.warning("%s: merged %d duplicate row(s) into %d edge(s) (%s)", path, merged_rows, pairs, how)


# -- generic nodes.csv + edges.csv ------------------------------------------------------------
def load_csv(nodes: Path, edges: Path, schema: Schema) -> KG:
    nodes, edges = Path(nodes), Path(edges)
    node_df = _read_nodes(nodes, schema)
    return KG(schema, node_df.select("name", "type"), _read_edges(edges, node_df, nodes.name, schema))


def _read_nodes(path: Path, schema: Schema) -> pl.DataFrame:
    lf = scan_checked(path, NODE_COLUMNS)
    require_rows(lf, path, "node")
    types = list(schema.node_types)
    raise_first_problem(lf, path, [
        (empty("id"), pl.lit("empty id; expected a node id")),
        (empty("name"), pl.lit("empty name; expected a node name")),
        (~pl.col("type").is_in(types).fill_null(False),
         pl.format(f"unknown node type '{{}}'; expected one of {','.join(types)} (the schema's node_types); "
                   f"for a KG of other types, python -m hygrail.data.init {path.parent} writes a schema for it",
                   shown("type"))),
    ])  # fmt: skip
    df = collect(lf, path)
    for keys, what in ((["id"], "id"), (["type", "name"], "node (type, name)")):
        first = df.with_columns(pl.col(ROW).min().over(keys).alias("first"))
        dup = first.filter(pl.col(ROW) != pl.col("first")).head(1)
        if dup.height:
            shown_key = ", ".join(f"{k}={dup[k][0]!r}" for k in keys)
            line, first_line = editor_lines(path, [dup[ROW][0], dup["first"][0]])
            raise DataError(f"{path}: line {line}: duplicate {what} {shown_key}, first at line {first_line}; "
                            f"expected each {what} once")
    node = pl.int_range(pl.len(), dtype=pl.Int64).alias("node")
    return df.select(pl.col("id").alias("key"), "name", "type", node)


def _read_edges(path: Path, node_df: pl.DataFrame, nodes_file: str, schema: Schema) -> pl.DataFrame:
    lf = scan_checked(path, EDGE_COLUMNS, optional=("year",))
    require_rows(lf, path, "edge")
    has_year = "year" in lf.collect_schema().names()
    ids = node_df.lazy().select("key", "node", "type")
    lf = (
        lf.join(ids.rename({"key": "src", "node": "u", "type": "ts"}), on="src", how="left")
        .join(ids.rename({"key": "dst", "node": "v", "type": "td"}), on="dst", how="left")
        .with_columns(
            pl.col("type").str.extract(r"^([^-]+)-([^-]+)$", 1).alias("ta"),
            pl.col("type").str.extract(r"^([^-]+)-([^-]+)$", 2).alias("tb"),
            pl.col("count").cast(pl.Int64, strict=False).alias("c"),
            (pl.col("year").cast(pl.Int32, strict=False) if has_year else pl.lit(NO_YEAR, pl.Int32)).alias("y"),
        )
    )
    unknown = f"'{{}}' is not an id in {nodes_file}; expected a node id"
    checks = [
        (pl.col("u").is_null(), pl.format(f"src {unknown}", shown("src"))),
        (pl.col("v").is_null(), pl.format(f"dst {unknown}", shown("dst"))),
        (pl.col("u") == pl.col("v"), pl.format("self loop on node '{}'; expected two different nodes", shown("src"))),
        (~(((pl.col("ta") == pl.col("ts")) & (pl.col("tb") == pl.col("td")))
           | ((pl.col("ta") == pl.col("td")) & (pl.col("tb") == pl.col("ts")))).fill_null(False),
         pl.format("edge type '{}' does not match the node types {} (src) and {} (dst); expected {}-{} or {}-{}",
                   shown("type"), "ts", "td", "ts", "td", "td", "ts")),
        *count_checks("count", "c"),
    ]  # fmt: skip
    if has_year:
        checks.append((
            (pl.col("y").is_null() & ~empty("year")) | (pl.col("y") < NO_YEAR),
            pl.format("year '{}' is not a year; expected an integer >= 0, or empty / -1 for unknown", shown("year")),
        ))  # fmt: skip
    raise_first_problem(lf, path, checks)

    # The node types are checked against the edge type, so the canonical type follows from them.
    ti = {t: i for i, t in enumerate(schema.node_types)}
    first_t = pl.when(pl.col("ts").replace_strict(ti) <= pl.col("td").replace_strict(ti))
    rows = collect(
        lf.select(
            ROW,
            pl.min_horizontal("u", "v").alias("u"),
            pl.max_horizontal("u", "v").alias("v"),
            pl.format("{}-{}", first_t.then("ts").otherwise("td"), first_t.then("td").otherwise("ts")).alias("type"),
            pl.col("c").alias("count"),
            pl.col("y").fill_null(NO_YEAR).alias("year"),
        ),
        path,
    ).sort(ROW)  # first-appearance order of edges, whatever order the streaming engine returns rows in
    merged = rows.group_by("u", "v", maintain_order=True).agg(
        pl.col("type").first(),
        pl.col("count").max(),
        pl.col("year").filter(pl.col("year") != NO_YEAR).min().fill_null(NO_YEAR),
        pl.len().alias("rows"),
    )
    merged_into = int((merged["rows"] > 1).sum())
    report_merged(path, rows.height - merged.height, merged_into, "count = max, year = earliest")
    report_years(path, merged["year"], "the year column is empty or -1 throughout" if has_year else "no year column")
    return merged.drop("rows")


def save_csv(kg: KG, folder: Path) -> tuple[Path, Path]:
    """Write ``kg`` as nodes.csv + edges.csv (ids = KG node ids); ``load_csv`` reads it back exactly."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    nodes, edges = folder / "nodes.csv", folder / "edges.csv"
    kg.nodes.select("id", "name", "type").write_csv(nodes)
    kg.edges.select(pl.col("u").alias("src"), pl.col("v").alias("dst"), "type", "count", "year").write_csv(edges)
    return nodes, edges
