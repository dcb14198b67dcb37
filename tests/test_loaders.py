"""MatKG release loader, generic CSV loader, their bad-input errors and merge reports."""

import logging
from pathlib import Path

import polars as pl
import pytest

from hygrail.data.csv import load_csv, save_csv
from hygrail.data.matkg import load_matkg
from hygrail.kg import KG, DataError

FIXTURES = Path(__file__).parent / "fixtures"
MATKG = FIXTURES / "matkg"
KG_CSV = FIXTURES / "kg_csv"
SAMPLE = Path(__file__).resolve().parents[1].parent / "shared" / "matkg-sample"


def edge_table(kg: KG) -> dict[frozenset, tuple[str, int, int]]:
    """{ {(type, name), (type, name)}: (edge type, count, year) } -- independent of node ids."""
    node = {i: (t, n) for i, n, t in kg.nodes.iter_rows()}
    return {frozenset((node[u], node[v])): (t, c, y) for u, v, t, c, y in kg.edges.iter_rows()}


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


# -- MatKG release format ------------------------------------------------------------------------
GRAPHENE, CONDUCTIVITY, BATTERIES = ("CHM", "Graphene"), ("PRO", "Conductivity"), ("APL", "Batteries")
CARBON_CHM, CARBON_DSC, RAMAN = ("CHM", "Carbon"), ("DSC", "Carbon"), ("CMT", "Raman Spectroscopy")


def test_matkg_fixture_nodes_edges_and_earliest_years(matkg_schema):
    kg = load_matkg(MATKG / "SUBRELOBJ.csv", matkg_schema, MATKG / "ENTPTNERDOI.csv")
    # Node identity is (type, name): Carbon is a CHM node and a DSC node; ids follow schema type order.
    assert kg.nodes.select("name", "type").rows() == [
        ("Carbon", "CHM"), ("Graphene", "CHM"), ("Conductivity", "PRO"), ("Batteries", "APL"),
        ("Carbon", "DSC"), ("Raman Spectroscopy", "CMT"),
    ]  # fmt: skip
    # 12 rows = 6 pairs in both directions -> 6 undirected edges; years worked out by hand from
    # ENTPTNERDOI.csv (see the comments on each line).
    assert edge_table(kg) == {
        frozenset((GRAPHENE, CONDUCTIVITY)): ("CHM-PRO", 120, 2012),  # DOIs a 2015, b 2012; c/d mention one end only
        frozenset((CARBON_CHM, GRAPHENE)): ("CHM-CHM", 45, 2011),  # e 2011; f 2005 has Carbon as DSC
        frozenset((CARBON_CHM, CARBON_DSC)): ("CHM-DSC", 60, 2019),  # g 2019: "carbon" tagged both ways
        frozenset((GRAPHENE, BATTERIES)): ("CHM-APL", 300, -1),  # never in one paper
        frozenset((CONDUCTIVITY, BATTERIES)): ("PRO-APL", 35, 2018),  # i 2020, j 2018 (surface forms differ)
        frozenset((GRAPHENE, RAMAN)): ("CHM-CMT", 80, 2017),  # k 1999 tags Graphene MAT/PRO; m has no Year
    }
    assert kg.edges.select((pl.col("u") < pl.col("v")).all()).item()


def test_matkg_without_mentions_has_unknown_years(matkg_schema):
    kg = load_matkg(MATKG / "SUBRELOBJ.csv", matkg_schema)
    assert kg.num_edges == 6 and kg.edges["year"].to_list() == [-1] * 6


@pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"real MatKG sample not present at {SAMPLE} (../shared is absent)")
def test_matkg_real_sample(matkg_schema, caplog):
    caplog.set_level(logging.INFO, logger="hygrail.data")
    kg = load_matkg(SAMPLE / "SUBRELOBJ.sample.csv", matkg_schema, SAMPLE / "ENTPTNERDOI.sample.csv")
    # 4,540 rows = 2,270 pairs x 2 directions. Nodes: Graphene, its 2,265 PRO neighbours (the five
    # random rows' PRO ends are among them), 3 more CHM, one CMT (HRTEM), one APL.
    assert (kg.num_nodes, kg.num_edges) == (2271, 2270)
    assert dict(kg.nodes.group_by("type").len().iter_rows()) == {"PRO": 2265, "CHM": 4, "CMT": 1, "APL": 1}
    # APL-PRO / PRO-APL rows become the canonical PRO-APL (schema order CHM, PRO, APL, ...).
    assert dict(kg.edges.group_by("type").len().iter_rows()) == {"CHM-PRO": 2267, "CHM-CMT": 1, "PRO-PRO": 1, "PRO-APL": 1}
    g = kg.node_id("CHM", "Graphene")
    nbrs, eids = kg.neighbors(g)
    assert len(nbrs) == kg.degree[g] == 2265
    assert kg.counts[eids].sum() == 372_326 and kg.counts[eids].max() == 9038 and kg.counts[eids].min() == 30
    assert kg.counts[kg.edge_id(g, kg.node_id("PRO", "Structure"))] == 9038
    # Both directions agree everywhere, so nothing was merged or flagged; the 10 mention rows date
    # nothing, which is the one warning: splits of this KG would be random, not temporal.
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "ENTPTNERDOI.sample.csv: no edge has a year" in warnings[0]
    assert "every split of this KG is random, not temporal" in warnings[0]
    assert (kg.edges["year"] == -1).all()


def test_matkg_merges_duplicates_and_disagreeing_directions(tmp_path, matkg_schema, caplog):
    path = write(tmp_path / "SUBRELOBJ.csv", "Subject,Object,Rel,Count\n"
                 "Graphene,Conductivity,CHM-PRO,120\n"
                 "Conductivity,Graphene,PRO-CHM,120\n"
                 "Graphene,Conductivity,CHM-PRO,120\n"  # exact duplicate: line 4
                 "Silicon,Hardness,CHM-PRO,40\n"  # line 5
                 "Hardness,Silicon,PRO-CHM,55\n"  # line 6: the other direction disagrees
                 "Alumina,Hardness,CHM-PRO,31\n")  # one direction only: kept, noted at INFO  # fmt: skip
    caplog.set_level(logging.INFO, logger="hygrail.data")
    kg = load_matkg(path, matkg_schema)
    assert sorted(c for c in kg.edges["count"]) == [31, 55, 120]
    messages = [r.getMessage() for r in caplog.records if r.name == "hygrail.data"]
    assert any("merged 1 duplicate row(s) into 1 edge(s)" in m for m in messages)
    assert any("1 pair(s) have rows with different Count; kept the max" in m and "lines 5 and 6" in m for m in messages)
    assert any("1 pair(s) appear in one direction only" in m for m in messages)


# -- generic CSV ---------------------------------------------------------------------------------
def test_csv_fixture_ids_orientation_and_merge(matkg_schema, caplog):
    caplog.set_level(logging.WARNING, logger="hygrail.data")
    kg = load_csv(KG_CSV / "nodes.csv", KG_CSV / "edges.csv", matkg_schema)
    assert kg.nodes.select("name", "type").rows() == [
        ("Graphene", "CHM"), ("Carbon", "CHM"), ("Carbon", "DSC"), ("Conductivity", "PRO"), ("Batteries, Li-ion", "APL")
    ]
    # Three rows of Graphene-Conductivity (two orientations) -> one edge: count max 150, year earliest 2010.
    # Edge order is first appearance; "APL-PRO" is canonicalised to PRO-APL; empty / -1 year = unknown.
    assert kg.edges.rows() == [
        (0, 3, "CHM-PRO", 150, 2010),
        (1, 2, "CHM-DSC", 60, -1),
        (0, 1, "CHM-CHM", 45, 2011),
        (3, 4, "PRO-APL", 35, -1),
    ]
    assert [r.getMessage() for r in caplog.records] == [
        f"{KG_CSV / 'edges.csv'}: merged 2 duplicate row(s) into 1 edge(s) (count = max, year = earliest)"
    ]


def test_csv_without_year_column(tmp_path, matkg_schema, caplog):
    caplog.set_level(logging.WARNING, logger="hygrail.data")
    nodes = write(tmp_path / "nodes.csv", "id,name,type\n1,A,CHM\n2,B,PRO\n")
    edges = write(tmp_path / "edges.csv", "src,dst,type,count\n2,1,PRO-CHM,7\n")
    kg = load_csv(nodes, edges, matkg_schema)
    assert kg.edges.rows() == [(0, 1, "CHM-PRO", 7, -1)]
    assert [r.getMessage() for r in caplog.records] == [
        f"{edges}: no edge has a year (no year column), so every split of this KG is random, not temporal (paper §4)"
    ]
    caplog.clear()
    write(edges, "src,dst,type,count,year\n2,1,PRO-CHM,7,\n")
    load_csv(nodes, edges, matkg_schema)
    assert "(the year column is empty or -1 throughout)" in caplog.records[0].getMessage()
    caplog.clear()
    load_matkg(write(tmp_path / "SUBRELOBJ.csv", "Subject,Object,Rel,Count\nA,B,CHM-PRO,40\n"), matkg_schema)
    assert "no ENTPTNERDOI.csv: data.entptnerdoi unset or not found under data.path" in caplog.records[0].getMessage()


def test_csv_accepts_bom_crlf_and_blank_lines(tmp_path, matkg_schema):
    # What spreadsheet exports look like; the blank line still counts in the row numbering.
    nodes = write(tmp_path / "nodes.csv", "\ufeffid,name,type\r\n1,A,CHM\r\n\r\n2,B,PRO\r\n\r\n")
    edges = write(tmp_path / "edges.csv", "src,dst,type,count\r\n1,2,CHM-PRO,3\r\n\r\n1,2,CHM-PRO,x\r\n")
    with pytest.raises(DataError, match=r"edges.csv: line 4: count 'x' is not an integer"):
        load_csv(nodes, edges, matkg_schema)
    write(edges, "src,dst,type,count\r\n1,2,CHM-PRO,3\r\n\r\n")
    kg = load_csv(nodes, edges, matkg_schema)
    assert kg.nodes.select("name", "type").rows() == [("A", "CHM"), ("B", "PRO")]
    assert kg.edges.rows() == [(0, 1, "CHM-PRO", 3, -1)]


def test_round_trip_matkg_to_csv(tmp_path, matkg_schema):
    kg = load_matkg(MATKG / "SUBRELOBJ.csv", matkg_schema, MATKG / "ENTPTNERDOI.csv")
    back = load_csv(*save_csv(kg, tmp_path / "out"), matkg_schema)
    assert back.nodes.equals(kg.nodes) and back.edges.equals(kg.edges)


def test_round_trip_awkward_names(tmp_path, matkg_schema):
    names = ['Li(Ni,Mn)O2', 'say "hi"', " leading space", "multi\nline", "Ångström", "123", "-1"]
    nodes = pl.DataFrame({"name": names, "type": ["CHM", "PRO", "APL", "SMT", "DSC", "CMT", "SPL"]})
    edges = pl.DataFrame({"u": [0, 1, 0, 5], "v": [1, 2, 6, 6], "type": ["CHM-PRO", "PRO-APL", "CHM-SPL", "CMT-SPL"],
                          "count": [30, 1, 9038, 2], "year": [1999, -1, 2023, 2001]})  # fmt: skip
    kg = KG(matkg_schema, nodes, edges)
    back = load_csv(*save_csv(kg, tmp_path), matkg_schema)
    assert back.nodes.equals(kg.nodes) and back.edges.equals(kg.edges)
    again = load_csv(*save_csv(back, tmp_path / "again"), matkg_schema)
    assert (tmp_path / "edges.csv").read_bytes() == (tmp_path / "again" / "edges.csv").read_bytes()
    assert again.nodes.equals(kg.nodes)


# -- bad input: one line naming the file, the place, and what was expected --------------------------
SRO_HEADER = "Subject,Object,Rel,Count\n"
GOOD_ROW = "Graphene,Conductivity,CHM-PRO,120\n"

MATKG_BAD = {
    "missing file": (None, "SUBRELOBJ.csv: file not found; expected a CSV file with columns Subject,Object,Rel,Count"),
    "empty file": ("", "SUBRELOBJ.csv: line 1: empty file; expected a header line Subject,Object,Rel,Count"),
    "header only": (SRO_HEADER, "SUBRELOBJ.csv: line 2: no data rows after the header; expected at least one"),
    "missing column": ("Subject,Object,Rel\nA,B,CHM-PRO\n",
                       "SUBRELOBJ.csv: line 1 (header): missing column(s) Count; expected columns Subject,Object,Rel,Count"),
    "unknown type": (SRO_HEADER + GOOD_ROW + "Graphene,Oxford,CHM-ORG,40\n",
                     "SUBRELOBJ.csv: line 3: Rel 'CHM-ORG' is not <type>-<type>; expected two of CHM,PRO,APL,SMT,DSC,CMT,SPL"),
    "malformed Rel": (SRO_HEADER + "Graphene,Conductivity,CHMPRO,40\n", "line 2: Rel 'CHMPRO' is not <type>-<type>"),
    "non-integer count": (SRO_HEADER + GOOD_ROW * 2 + "A,B,CHM-PRO,3.5\n",
                          "SUBRELOBJ.csv: line 4: Count '3.5' is not an integer; expected an integer count >= 1"),
    "empty count": (SRO_HEADER + "A,B,CHM-PRO,\n", "line 2: Count '' is not an integer; expected an integer count >= 1"),
    "zero count": (SRO_HEADER + GOOD_ROW + "A,B,CHM-PRO,0\n", "line 3: Count 0 is not positive; expected an integer count >= 1"),
    "negative count": (SRO_HEADER + "A,B,CHM-PRO,-4\n", "line 2: Count -4 is not positive"),
    "self loop": (SRO_HEADER + GOOD_ROW + "Graphene,Graphene,CHM-CHM,50\n",
                  "line 3: self loop: Subject and Object are the same CHM entity 'Graphene'; expected two different entities"),
    "empty name": (SRO_HEADER + ",Conductivity,CHM-PRO,40\n", "line 2: empty Subject; expected an entity name"),
    "extra field": (SRO_HEADER + GOOD_ROW + "A,B,CHM-PRO,4,5\n", "SUBRELOBJ.csv: line 3: 5 field(s); expected 4 like the header Subject,Object,Rel,Count"),
    "bad encoding": (SRO_HEADER.encode() + GOOD_ROW.encode() * 2 + b"Graph\xe8ne,Conductivity,CHM-PRO,40\n",
                     "SUBRELOBJ.csv: line 4: invalid UTF-8 bytes; expected a UTF-8 encoded file"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(MATKG_BAD))
def test_matkg_bad_input(tmp_path, matkg_schema, case):
    text, expected = MATKG_BAD[case]
    path = tmp_path / "SUBRELOBJ.csv"
    if text is not None:
        write(path, text)
    with pytest.raises(DataError) as err:
        load_matkg(path, matkg_schema)
    message = str(err.value)
    assert expected in message and str(path) in message and "\n" not in message


MENTION_HEADER = "Entity,Part_of_text,NER_Tag,DOI,Preferred_Entity,Year\n"


@pytest.mark.parametrize(
    "text, expected",
    [
        (None, "ENTPTNERDOI.csv: file not found"),
        ("Entity,NER_Tag,DOI,Preferred_Entity\n", "line 1 (header): missing column(s) Year"),
        # Row 1 is an entity that is not a node, so its Year is never read; row 2 is Graphene's.
        (MENTION_HEADER + "x,Abs,CHM,10.1/a,Unobtainium,soon\ngraphene,Abs,CHM,10.1/a,Graphene,20l5\n",
         "ENTPTNERDOI.csv: line 3: Year '20l5' is not a year; expected an integer publication year"),
    ],
)  # fmt: skip
def test_matkg_bad_mentions(tmp_path, matkg_schema, text, expected):
    path = tmp_path / "ENTPTNERDOI.csv"
    if text is not None:
        write(path, text)
    with pytest.raises(DataError) as err:
        load_matkg(MATKG / "SUBRELOBJ.csv", matkg_schema, path)
    assert expected in str(err.value) and str(path) in str(err.value)


NODES = "id,name,type\nm1,Graphene,CHM\np1,Conductivity,PRO\na1,Batteries,APL\n"
EDGES_HEADER = "src,dst,type,count,year\n"
GOOD_EDGE = "m1,p1,CHM-PRO,120,2012\n"

CSV_BAD = {
    # (which file is bad, its text, expected message after "<file>: ")
    "nodes missing": ("nodes", None, "file not found; expected a CSV file with columns id,name,type"),
    "nodes empty": ("nodes", "", "line 1: empty file; expected a header line id,name,type"),
    "nodes header only": ("nodes", "id,name,type\n", "line 2: no data rows after the header; expected at least one node"),
    "nodes missing column": ("nodes", "id,name\n1,A\n", "line 1 (header): missing column(s) type; expected columns id,name,type"),
    "unknown node type": ("nodes", NODES + "x9,Oxford,ORG\n",
                          "line 5: unknown node type 'ORG'; expected one of CHM,PRO,APL,SMT,DSC,CMT,SPL"),
    "duplicate node": ("nodes", NODES + "m2,Graphene,CHM\n",
                       "line 5: duplicate node (type, name) type='CHM', name='Graphene', first at line 2; "
                       "expected each node (type, name) once"),
    "duplicate id": ("nodes", NODES + "m1,Silicon,CHM\n", "line 5: duplicate id id='m1', first at line 2"),
    "nodes bad encoding": ("nodes", NODES.encode() + b"c1,Caf\xe9,CHM\n", "line 5: invalid UTF-8 bytes; expected a UTF-8"),
    "edges missing": ("edges", None, "file not found; expected a CSV file with columns src,dst,type,count"),
    "edges empty": ("edges", "", "line 1: empty file; expected a header line src,dst,type,count"),
    "edges missing column": ("edges", "src,dst,type\nm1,p1,CHM-PRO\n", "line 1 (header): missing column(s) count"),
    "unknown node": ("edges", EDGES_HEADER + GOOD_EDGE + "m1,p9,CHM-PRO,40,\n",
                     "line 3: dst 'p9' is not an id in nodes.csv; expected a node id"),
    "self loop": ("edges", EDGES_HEADER + "m1,m1,CHM-CHM,40,\n", "line 2: self loop on node 'm1'; expected two different nodes"),
    "type mismatch": ("edges", EDGES_HEADER + GOOD_EDGE + "p1,a1,CHM-APL,40,\n",
                      "line 3: edge type 'CHM-APL' does not match the node types PRO (src) and APL (dst); "
                      "expected PRO-APL or APL-PRO"),
    "unknown edge type": ("edges", EDGES_HEADER + "m1,p1,CHMPRO,40,\n", "line 2: edge type 'CHMPRO' does not match"),
    "non-integer count": ("edges", EDGES_HEADER + GOOD_EDGE + "m1,a1,CHM-APL,many,\n",
                          "line 3: count 'many' is not an integer; expected an integer count >= 1"),
    "zero count": ("edges", EDGES_HEADER + "m1,a1,CHM-APL,0,\n", "line 2: count 0 is not positive; expected an integer count >= 1"),
    "bad year": ("edges", EDGES_HEADER + "m1,a1,CHM-APL,3,2019.5\n",
                 "line 2: year '2019.5' is not a year; expected an integer >= 0, or empty / -1 for unknown"),
    "edges bad encoding": ("edges", EDGES_HEADER.encode() + b"m1,p1,CHM-PRO,4,\xff\xfe\n", "line 2: invalid UTF-8 bytes"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CSV_BAD))
def test_csv_bad_input(tmp_path, matkg_schema, case):
    which, text, expected = CSV_BAD[case]
    files = {"nodes": write(tmp_path / "nodes.csv", NODES), "edges": write(tmp_path / "edges.csv", EDGES_HEADER + GOOD_EDGE)}
    files[which].unlink()
    if text is not None:
        write(files[which], text)
    with pytest.raises(DataError) as err:
        load_csv(files["nodes"], files["edges"], matkg_schema)
    message = str(err.value)
    assert message.startswith(f"{files[which]}: ") and expected in message and "\n" not in message
