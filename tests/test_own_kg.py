"""A new user's own CSV KG of another schema (issue #27): the starter command, its configs outside
the package via --config-dir, task=stats and one GNN-only cell on them, and the one-line errors met
on the way (a schema set with key=value, a ragged row, line numbers as an editor shows them)."""

import os
import shlex
import sqlite3
import string
import subprocess
import sys

import numpy as np
import pytest
from omegaconf import OmegaConf

from conftest import CONF
from hygrail.data.csv import load_csv
from hygrail.data.init import main as init_main
from hygrail.kg import DataError, Schema
from hygrail.sweep import check_data

BIO = Schema.from_config({"node_types": ["DRUG", "GENE", "DISEASE"]})


def write_kg(folder):
    """60 nodes; DRUG-DISEASE (20 edges) can be split 7:1:2 with 20 negatives per positive (500
    candidate pairs); DRUG-GENE and GENE-DISEASE (30 each) are too dense for that, GENE-GENE too small."""
    rng = np.random.default_rng(0)
    ids = {"DRUG": [f"d{i}" for i in range(20)], "GENE": [f"g{i}" for i in range(15)], "DISEASE": [f"s{i}" for i in range(25)]}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nodes.csv").write_text("id,name,type\n" + "".join(f"{n},{t.lower()} {n},{t}\n" for t, ns in ids.items() for n in ns))
    rows = []

    def link(etype, first, total):
        """The index pairs ``first``, then random other pairs up to ``total`` edges."""
        src, dst = (ids[t] for t in etype.split("-"))
        pairs = dict.fromkeys(first)
        while len(pairs) < total:
            pairs[int(rng.integers(len(src))), int(rng.integers(len(dst)))] = None
        rows.extend(f"{src[i]},{dst[j]},{etype},{rng.integers(1, 50)},{rng.integers(2000, 2021)}\n" for i, j in pairs)

    link("DRUG-GENE", [(i, i % 15) for i in range(20)], 30)  # every drug has a gene
    link("DRUG-DISEASE", [(i, i * 7 % 25) for i in range(20)], 20)
    link("GENE-DISEASE", [(j % 15, j) for j in range(25)], 30)  # every disease has a gene
    link("GENE-GENE", [(0, 1), (2, 3), (4, 5), (6, 7)], 4)
    (folder / "edges.csv").write_text("src,dst,type,count,year\n" + "".join(rows))
    return folder


def listing(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*"))


def table(text, title):
    """The body rows of one of task=stats' text tables, as lists of cell strings."""
    block = text[text.index(title):].split("\n\n")[0]
    return [[c.strip() for c in line.strip("│").split("┆")] for line in block.splitlines() if line.startswith("│")][1:]


def test_a_new_users_kg_from_csv_to_a_gnn_cell(tmp_path):
    kg, out = write_kg(tmp_path / "mybio"), tmp_path / "outputs"
    env = os.environ | {"HYGRAIL_OUTPUTS": str(out), "OMP_NUM_THREADS": "1"}
    before = listing(CONF)

    def run(*args):  # from the user's folder, as they would
        return subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip

    # As the README stood: data=csv with the default (MatKG) schema stops in one line naming the starter.
    proc = run("hygrail.sweep", "task=stats", "data=csv", f"data.path={kg}")
    assert proc.returncode == 1 and proc.stderr.splitlines()[-1] == (
        f"error: {kg / 'nodes.csv'}: line 2: unknown node type 'DRUG'; expected one of CHM,PRO,APL,SMT,DSC,CMT,SPL "
        f"(the schema's node_types); for a KG of other types, python -m hygrail.data.init {kg} writes a schema for it")

    proc = run("hygrail.data.init", str(kg))
    assert proc.returncode == 0, proc.stderr
    conf = kg / "conf"
    sweep = f"python -m hygrail.sweep --config-dir {conf} data=mybio"
    assert proc.stdout.splitlines() == [
        f"wrote 3 files under {conf}: data/mybio.yaml, data/schema/mybio.yaml, 1 relation/*.yaml",
        "  relation drug_disease: DRUG-DISEASE, 20 edges, 20 dated",
        "  not a relation: DRUG-GENE, 30 edges but 270 unlinked pairs: too dense for the default split (7:1:2, 20 "
        "negatives per positive)",
        "  not a relation: GENE-GENE, 4 edges: too few for the default split (7:1:2, 20 negatives per positive)",
        "  not a relation: GENE-DISEASE, 30 edges but 345 unlinked pairs: too dense for the default split (7:1:2, 20 "
        "negatives per positive)",
        "Edit the relation files' wording and the schema's domain (the reviewer's field), then:",
        f"  {sweep} task=stats",
        f"  {sweep} relation=drug_disease method=gnn_only backbone=rgcn_plus",
    ]
    schema = OmegaConf.to_container(OmegaConf.load(conf / "data/schema/mybio.yaml"))
    assert schema == {
        "node_types": ["DRUG", "GENE", "DISEASE"],
        "display": {"DRUG": "drug", "GENE": "gene", "DISEASE": "disease"},
        "domain": {"expert": "an expert scientist", "graph": "a knowledge graph mined from the literature",
                   "field": "scientific", "knowledge": "established scientific knowledge"},
        "relations": {"drug_disease": {"src": "DRUG", "dst": "DISEASE"}},
        "evidence": {"DRUG": ["DRUG-GENE", "DRUG-DISEASE"], "GENE": ["GENE-DRUG", "GENE-GENE", "GENE-DISEASE"],
                     "DISEASE": ["DISEASE-DRUG", "DISEASE-GENE"]},
    }  # fmt: skip
    assert OmegaConf.load(conf / "data/mybio.yaml").path == str(kg)

    # The printed commands, run as printed (python = this interpreter).
    stats = run(*shlex.split(proc.stdout.splitlines()[-2])[2:])
    assert stats.returncode == 0, stats.stderr[-2000:]
    assert table(stats.stdout, "Table 1:")[0] == ["DRUG-DISEASE", "0.000200", "5.00e-06", "40.0", "20", "500", "4.000e-02"]
    assert table(stats.stdout, "Table 4:")[:3] == [["DRUG", "20", "33.33%"], ["GENE", "15", "25.00%"], ["DISEASE", "25", "41.67%"]]
    assert table(stats.stdout, "Table 5:") == [  # every edge type, not 3 of 4 as "Other edge types"
        ["drug_disease", "20", "23.81%"], ["DRUG-GENE", "30", "35.71%"], ["GENE-GENE", "4", "4.76%"],
        ["GENE-DISEASE", "30", "35.71%"], ["Total", "84", "100.00%"],
    ]  # fmt: skip
    assert table(stats.stdout, "Table 6:")[0] == ["drug_disease", "14", "280", "294", "2", "40", "42", "4", "80", "84",
                                                  "temporal", "20/20"]  # fmt: skip

    cell = shlex.split(proc.stdout.splitlines()[-1])[2:]
    cell[cell.index("backbone=rgcn_plus")] = "backbone=rgcn"
    cell = run(*cell, "backbone.epochs=2", "backbone.val_every=1")
    assert cell.returncode == 0, cell.stderr[-2000:]
    [line] = [x for x in cell.stdout.splitlines() if x.startswith("drug_disease rgcn GNN: ")]
    f1, run_id = float(line.split(" | ")[1].split("/")[-1]), line.split()[-1]
    with sqlite3.connect(out / "mlflow.db") as db:
        [(logged,)] = db.execute("SELECT value FROM latest_metrics WHERE run_uuid = ? AND key = 'test_f1'", (run_id,))
        [(status,)] = db.execute("SELECT status FROM runs WHERE run_uuid = ?", (run_id,))
    assert 0 <= f1 <= 1 and round(logged, 3) == f1 and status == "FINISHED"
    assert listing(CONF) == before  # nothing written into the package's conf/


def test_starter_relation_file_keeps_table_9s_structure_and_placeholders(tmp_path):
    kg = write_kg(tmp_path / "kg")
    init_main([str(kg), "--out", str(tmp_path / "conf"), "--name", "bio"])
    mine = OmegaConf.to_container(OmegaConf.load(tmp_path / "conf/relation/drug_disease.yaml"))
    paper = OmegaConf.to_container(OmegaConf.load(CONF / "relation/chm_apl.yaml"))

    def fields(t):
        return {k: fields(v) for k, v in t.items()} if isinstance(t, dict) else sorted(
            f for _, f, _, _ in string.Formatter().parse(t) if f)  # fmt: skip

    assert mine["name"] == "drug_disease" and fields(mine["templates"]) == fields(paper["templates"])
    assert mine["templates"]["hypothesis"] == "The drug {left} is related to the disease {right}."
    text = (tmp_path / "conf/relation/drug_disease.yaml").read_text()
    assert not any(word in text for word in ("material", "application", "possesses"))


def test_starter_never_overwrites_without_force(tmp_path, capsys):
    kg = write_kg(tmp_path / "kg")
    init_main([str(kg)])
    (kg / "conf/relation/drug_disease.yaml").write_text("edited\n")
    with pytest.raises(SystemExit) as stop:
        init_main([str(kg)])
    assert stop.value.code == (f"error: {kg / 'conf/data/kg.yaml'} exists (3 of the 3 files to write do); "
                               f"pass --force to overwrite them")  # fmt: skip
    assert (kg / "conf/relation/drug_disease.yaml").read_text() == "edited\n"
    init_main([str(kg), "--force"])
    assert (kg / "conf/relation/drug_disease.yaml").read_text().startswith("# DRUG-DISEASE hypotheses of data=kg")
    with pytest.raises(SystemExit) as stop:
        init_main([str(kg), "--name", "biokg"])  # the package's data=biokg would win over the user's
    assert stop.value.code == ("error: --name biokg: the package has data/biokg.yaml, which Hydra would pick "
                               "instead of yours; pass another --name")


def test_schema_set_with_key_value_is_one_line():
    with pytest.raises(DataError) as err:
        check_data(OmegaConf.create({"data": {"schema": "mybio"}}))
    assert str(err.value) == (
        "data.schema=mybio is not a schema: key=value sets a string; select the file data/schema/mybio.yaml with "
        "data/schema=mybio (in conf/ or under --config-dir), or use the data config python -m hygrail.data.init "
        "writes (data=<name>)")


def test_ragged_row_stops_with_its_line(tmp_path):
    kg = write_kg(tmp_path)
    edges = kg / "edges.csv"
    lines = edges.read_text().splitlines()
    lines[5] = lines[5].rsplit(",", 1)[0]  # line 6 lost its last field, the year
    edges.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        load_csv(kg / "nodes.csv", edges, BIO)
    assert str(err.value) == f"{edges}: line 6: 4 field(s); expected 5 like the header src,dst,type,count,year"
    lines[5] += ","  # an empty year is an unknown year, not a ragged row
    edges.write_text("\n".join(lines) + "\n")
    assert load_csv(kg / "nodes.csv", edges, BIO).edges["year"].to_list().count(-1) == 1


def test_line_numbers_are_an_editors(tmp_path):
    # header = line 1; a blank line counts; a quoted name spanning two lines takes both
    nodes = tmp_path / "nodes.csv"
    head = 'id,name,type\nd1,"two\nlines",DRUG\n\nd2,Aspirin,DRUG\n'
    for tail, expected in [
        ("d2,Ibuprofen,DRUG\n", "line 6: duplicate id id='d2', first at line 5; expected each id once"),
        ("x1,Oxford,ORG\n", f"line 6: unknown node type 'ORG'; expected one of DRUG,GENE,DISEASE (the schema's "
                            f"node_types); for a KG of other types, python -m hygrail.data.init {tmp_path} writes a schema for it"),
        ("d3,Ibuprofen\n", "line 6: 2 field(s); expected 3 like the header id,name,type"),
        ("d3,Ibuprofen,DRUG,x\n", "line 6: 4 field(s); expected 3 like the header id,name,type"),
    ]:  # fmt: skip
        nodes.write_text(head + tail)
        with pytest.raises(DataError) as err:
            load_csv(nodes, tmp_path / "edges.csv", BIO)
        assert str(err.value) == f"{nodes}: {expected}"
    nodes.write_bytes(head.encode() + b"d3,Caf\xe9,DRUG\n")
    with pytest.raises(DataError) as err:
        load_csv(nodes, tmp_path / "edges.csv", BIO)
    assert str(err.value) == f"{nodes}: line 6: invalid UTF-8 bytes; expected a UTF-8 encoded file"


def test_starter_prefixes_a_relation_name_the_package_has(tmp_path):
    kg = write_kg(tmp_path / "bio")
    for f in ("nodes.csv", "edges.csv"):  # the benchmark's type names: its cpd_dis.yaml would win over the user's
        (kg / f).write_text((kg / f).read_text().replace("DRUG", "CPD").replace("DISEASE", "DIS"))
    init_main([str(kg)])
    schema = OmegaConf.load(kg / "conf/data/schema/bio.yaml")
    assert OmegaConf.to_container(schema.relations) == {"bio_cpd_dis": {"src": "CPD", "dst": "DIS"}}
    assert OmegaConf.load(kg / "conf/relation/bio_cpd_dis.yaml").name == "bio_cpd_dis"
