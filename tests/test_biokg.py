"""The benchmark's second KG (bench/biokg.py): generated, written as CSV and read back the way a new
user's KG is (data=biokg), with its own schema and a degree profile unlike the synthetic MatKG's."""

import sys

import numpy as np

from conftest import ROOT
from hygrail.data import data_config, load_kg
from hygrail.data.csv import save_csv
from hygrail.data.split import temporal_split

sys.path.insert(0, str(ROOT / "bench"))
from biokg import generate  # noqa: E402


def test_biokg_loads_as_csv_with_its_own_schema(tmp_path):
    kg = generate(seed=0, scale=0.4)
    save_csv(kg, tmp_path)
    loaded = load_kg(data_config("biokg", path=str(tmp_path)))
    assert loaded.schema.node_types == ("GEN", "DIS", "CPD", "PWY", "PHE", "ANA")
    assert loaded.num_nodes == kg.num_nodes and loaded.num_edges == kg.num_edges
    assert set(loaded.edge_types) == {"GEN-PWY", "GEN-GEN", "GEN-ANA", "GEN-DIS", "DIS-ANA", "DIS-PHE",
                                      "GEN-CPD", "CPD-PHE", "DIS-CPD"}  # fmt: skip
    # some years are unknown, as in many real KGs; hypothesis edges are dated
    years = loaded.edges["year"].to_numpy()
    assert (years == -1).any() and (years > 1900).any()
    for name in ("cpd_dis", "gen_dis"):
        split = temporal_split(loaded, loaded.schema.relation(name))
        counts = split.counts()
        assert counts["test"]["pos"] >= 20 and counts["test"]["neg"] == 20 * counts["test"]["pos"]
        assert split.kind == "temporal"


def test_biokg_degree_profile_differs_from_matkg():
    """Gene-gene interactions grow by preferential attachment (a heavy tail), other types stay narrow;
    support counts are small with no floor (MatKG's are >= 30). Deterministic per seed."""
    kg = generate(seed=0, scale=0.4)
    deg = kg.degree
    genes, compounds = deg[kg.nodes_of_type("GEN")], deg[kg.nodes_of_type("CPD")]
    assert genes.max() > 4 * np.median(genes)
    assert compounds.max() < 3 * np.median(compounds)
    assert kg.counts.min() < 30 and np.median(kg.counts) < 10
    again = generate(seed=0, scale=0.4)
    assert again.edges.equals(kg.edges)
