"""The page a geneticist reads (issue #56): their own ids in and out, suggestions that contradict the
record, the back-test sentence, the Makefile's DISEASES, one folder per question with its CSV, and no
routing labels or empty sections where no reviewer ran. On tiny hand-built HPO releases."""

import html
import json
import os
import re
import subprocess

import numpy as np
import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from conftest import CONF, ROOT
from hygrail.data import data_config, load_kg
from hygrail.data.hpo import public_page
from hygrail.discovery import backtest, entities
from hygrail.discovery.opposites import Opposites, signatures
from hygrail.discovery.space import CandidateSpace
from hygrail.kg import DataError
from test_real_kgs import write_hpo

# A small HPO release: real ids and names where the issue quotes them, the hierarchy as hp.obo has it
# (Microcephaly and Macrocephaly are cousins: their parents are the opposites), and filler terms.
TERMS = [
    ("HP:0000001", "All", []),
    ("HP:0000118", "Phenotypic abnormality", ["HP:0000001"]),
    ("HP:0000152", "Abnormality of head or neck", ["HP:0000118"]),
    ("HP:0000240", "Abnormality of skull size", ["HP:0000152"]),
    ("HP:0040195", "Decreased head circumference", ["HP:0000240"]),
    ("HP:0000252", "Microcephaly", ["HP:0040195"]),
    ("HP:0011451", "Primary microcephaly", ["HP:0000252"]),
    ("HP:0040194", "Increased head circumference", ["HP:0000240"]),
    ("HP:0000256", "Macrocephaly", ["HP:0040194"]),
    ("HP:0000290", "Abnormal forehead morphology", ["HP:0000152"]),
    ("HP:0000341", "Narrow forehead", ["HP:0000290"]),
    ("HP:0000337", "Broad forehead", ["HP:0000290"]),
    ("HP:0000924", "Abnormality of the skeletal system", ["HP:0000118"]),
    ("HP:0011001", "Abnormality of skeletal maturation", ["HP:0000924"]),
    ("HP:0002750", "Delayed skeletal maturation", ["HP:0011001"]),
    ("HP:0005616", "Accelerated skeletal maturation", ["HP:0011001"]),
    ("HP:0001166", "Arachnodactyly", ["HP:0000924"]),
    ("HP:0000707", "Abnormality of the nervous system", ["HP:0000118"]),
    ("HP:0003808", "Abnormal muscle tone", ["HP:0000707"]),
    ("HP:0001252", "Hypotonia", ["HP:0003808"]),
    ("HP:0001276", "Hypertonia", ["HP:0003808"]),
    ("HP:0001250", "Seizure", ["HP:0000707"]),
    ("HP:0025031", "Abnormality of the digestive system", ["HP:0000118"]),
    ("HP:0100834", "Neoplasm of the large intestine", ["HP:0025031"]),
    ("HP:0100833", "Neoplasm of the small intestine", ["HP:0025031"]),
    *((f"HP:05{k:05d}", f"Feature {k}", [["HP:0000707", "HP:0000924", "HP:0025031", "HP:0000152"][k % 4]])
      for k in range(24)),
]
LEAVES = [t for t, _, _ in TERMS[4:] if t not in ("HP:0000240", "HP:0000290", "HP:0011001", "HP:0003808")]


def tiny_hpo(folder, n=48, seed=0):
    """``n`` OMIM diseases with 4-9 annotations each, dated 2009-2020, plus Marfan (OMIM and ORPHA twins,
    the ORPHA one undated as HPO's are), Noonan syndrome 1 (OMIM) and Noonan syndrome (ORPHA)."""
    rng = np.random.default_rng(seed)
    rows = []

    def annotate(db_id, name, terms, years):
        for t, y in zip(terms, years):
            curation = "ORPHA:orphadata[2025-01-16]" if db_id.startswith("ORPHA") else f"HPO:x[{y}-01-01]"
            rows.append(f"{db_id}\t{name}\t\t{t}\tPMID:1\tPCS\t\t\t\t\tP\t{curation}")

    for d in range(n):
        terms = rng.choice(LEAVES, size=int(rng.integers(4, 10)), replace=False)
        annotate(f"OMIM:9{d:05d}", f"Disease {d}", terms, rng.integers(2009, 2021, size=len(terms)))
    annotate("OMIM:154700", "Marfan syndrome", ["HP:0001166", "HP:0000256", "HP:0002750", "HP:0500001"],
             [2009, 2010, 2012, 2015])
    annotate("ORPHA:558", "Marfan syndrome", ["HP:0001166", "HP:0500005"], [0, 0])
    annotate("OMIM:163950", "Noonan syndrome 1", ["HP:0000337", "HP:0001252", "HP:0500002", "HP:0500006"],
             [2009, 2011, 2013, 2016])
    annotate("ORPHA:648", "Noonan syndrome", ["HP:0000337", "HP:0500002"], [0, 0])
    g2p = ["2200\tFBN1\tHP:0001166\tArachnodactyly\t-\tOMIM:154700", "5781\tPTPN11\tHP:0000337\tBroad forehead\t-\tOMIM:163950"]
    return write_hpo(folder, rows, g2p, [(t, n, parents, "") for t, n, parents in TERMS])


@pytest.fixture(scope="module")
def hpo_folder(tmp_path_factory):
    return tiny_hpo(tmp_path_factory.mktemp("hpo") / "hpo")


@pytest.fixture(scope="module")
def hpo(hpo_folder):
    return load_kg(data_config("hpo", path=str(hpo_folder)))


def _node(kg, name):
    return kg.names.index(name)


def test_source_ids_are_kept_on_the_nodes_and_linked(hpo, tmp_path):
    kg = hpo
    assert kg.keys[_node(kg, "Marfan syndrome (OMIM:154700)")] == "OMIM:154700"
    assert kg.keys[_node(kg, "Arachnodactyly")] == "HP:0001166" and kg.keys[_node(kg, "FBN1")] == "NCBIGene:2200"
    # a derived graph (the cut graph, the training graph) keeps them; a loader without ids has None
    assert kg.until(2012).keys == kg.keys and load_kg(data_config(scale=0.3)).keys[0] is None
    assert public_page("HP:0001166") == ("HPO", "https://hpo.jax.org/browse/term/HP:0001166")
    assert public_page("OMIM:154700") == ("OMIM", "https://omim.org/entry/154700")
    assert public_page("ORPHA:558") == ("Orphanet", "https://www.orpha.net/en/disease/detail/558")
    assert public_page("CHEBI:1") is None and public_page(None) is None and public_page("OMIM:") is None


def test_a_subgraph_sample_keeps_the_source_ids(hpo):
    from hygrail.data.subgraph import induced_subgraph

    keep = np.array(sorted([_node(hpo, "Arachnodactyly"), _node(hpo, "Marfan syndrome (OMIM:154700)")]))
    sample = induced_subgraph(hpo, keep)
    assert sorted(sample.keys) == ["HP:0001166", "OMIM:154700"]


def test_their_ids_are_accepted_as_input_and_the_match_is_said(hpo):
    kg = hpo
    space = CandidateSpace(kg, kg.schema.relation("hpo_dis_phe"))
    omim, = entities.resolve(space, ["OMIM:154700"])  # one source's entry: that node, its twin still known
    assert (kg.keys[omim.node], omim.matched, omim.asked) == ("OMIM:154700", "source id", "OMIM:154700")
    assert [kg.keys[t] for t in omim.twins] == ["ORPHA:558"]
    orpha, = entities.resolve(space, ["orpha:558"])
    assert kg.keys[orpha.node] == "ORPHA:558"
    term, = entities.resolve(space, ["HP:0001166"])
    assert (term.name, term.node_type) == ("Arachnodactyly", "Phenotype")
    # a plain name says which source's entry it matched, and how
    noonan, = entities.resolve(space, ["Noonan syndrome"])
    assert (kg.keys[noonan.node], noonan.matched) == ("ORPHA:648", "exact name")
    assert [e.matched for e in entities.resolve(space, ["noonan SYNDROME 1", "Marfan syndrome"])] == [
        "name, case aside", "name less its source id", "name less its source id"]
    with pytest.raises(DataError) as e:
        entities.resolve(space, ["OMIM:999999"])
    assert str(e.value) == ("discover.entities: no Disease or Phenotype has the id 'OMIM:999999' in this graph "
                            "(expected an id of its source such as OMIM:900000, a name or a node id)")


def test_opposites_by_name_and_hierarchy(hpo):
    kg = hpo
    opp = Opposites.of(kg, "Phenotype")
    n = lambda name: _node(kg, name)  # noqa: E731
    pairs = {(kg.names[a], kg.names[b]) for a, b in opp.pairs}
    assert {tuple(sorted(p)) for p in pairs} == {
        ("Decreased head circumference", "Increased head circumference"), ("Broad forehead", "Narrow forehead"),
        ("Accelerated skeletal maturation", "Delayed skeletal maturation"), ("Hypertonia", "Hypotonia")}
    # the small and large intestine are parts, not a quality; siblings that differ otherwise are no pair
    assert not opp.conflict(n("Neoplasm of the large intestine"), n("Neoplasm of the small intestine"))
    # inherited: micro- and macrocephaly are cousins under opposite parents, a descendant inherits it
    assert opp.conflict(n("Microcephaly"), n("Macrocephaly")) and opp.conflict(n("Macrocephaly"), n("Microcephaly"))
    # a descendant of one side contradicts the pair's own other term, not a cousin naming something else
    assert opp.conflict(n("Primary microcephaly"), n("Increased head circumference"))
    assert not opp.conflict(n("Primary microcephaly"), n("Macrocephaly"))
    assert not opp.conflict(n("Microcephaly"), n("Primary microcephaly")) and not opp.conflict(n("Microcephaly"), n("Seizure"))
    flags = opp.flags([n("Microcephaly"), n("Seizure"), n("Narrow forehead"), n("Broad forehead")], [n("Macrocephaly")])
    assert {kg.names[k]: [(kg.names[o], w) for o, w in v] for k, v in flags.items()} == {
        "Microcephaly": [("Macrocephaly", "recorded")],
        "Narrow forehead": [("Broad forehead", "also suggested")], "Broad forehead": [("Narrow forehead", "also suggested")]}
    assert signatures("Hypoplasia") == [(("hyper/hypo:plasia",), -1)] and signatures("Seizure") == []


TRUST = """relation,cutoff,horizon,list,population,band,k,entities,hit_rate,precision
hpo_dis_phe,2015,3,Stack (trees + GNN),known,5-19,10,900,0.40,0.05
hpo_dis_phe,2018,3,Stack (trees + GNN),known,5-19,10,1234,0.47,0.08
hpo_dis_phe,2018,5,Stack (trees + GNN),known,5-19,10,1234,0.55,0.09
hpo_dis_phe,2018,3,Stack (trees + GNN),known,5-19,5,1234,0.30,0.07
hpo_dis_phe,2018,3,Stack (trees + GNN),known,100+,10,80,0.90,0.40
hpo_dis_phe,2018,3,Stack (trees + GNN),known,all,10,5000,0.44,0.07
hpo_dis_phe,2018,3,Stack (trees + GNN),new,all,10,300,0.61,0.11
hpo_dis_phe,2018,3,GNN,known,all,10,5000,0.41,0.06
"""


def test_the_back_test_row_and_sentence(tmp_path):
    path = tmp_path / "hpo_dis_phe.csv"
    path.write_text(TRUST)
    table = backtest.read_table(path)
    stack = "Stack (trees + GNN)"
    f = backtest.pick(table, "hpo_dis_phe", stack, 7)  # 5-19: the latest cutoff, 3 years, top 10
    assert (f.cutoff, f.horizon, f.k, f.entities, f.hit_rate) == (2018, 3, 10, 1234, 0.47)
    assert backtest.sentence(f, "disease", "clinical feature") == (
        "For 47% of diseases like this one (known at the 2018 cutoff, 5-19 clinical features recorded; 1,234 "
        "diseases), one of the first 10 of this list was recorded within 3 years (0.8 of the 10 on average).")
    assert backtest.pick(table, "hpo_dis_phe", stack, 150).band == "100+"
    few = table.with_columns(
        pl.when(pl.col("band") == "100+").then(29).otherwise(pl.col("entities")).alias("entities"))
    assert backtest.pick(few, "hpo_dis_phe", stack, 150).band == "all"  # 29 diseases: too few for a band's share
    assert backtest.pick(table, "hpo_dis_phe", stack, 2).band == "all"  # no 1-4 row: the row of all known ones
    new = backtest.pick(table, "hpo_dis_phe", stack, 0)
    assert (new.population, new.hit_rate) == ("new", 0.61)
    assert "(with nothing recorded at the 2018 cutoff; 300 diseases)" in backtest.sentence(new, "disease", "clinical feature")
    assert backtest.pick(table, "hpo_dis_phe", "Stack without GNN", 7) is None
    assert backtest.pick(table, "hpo_gen_dis", stack, 7) is None and backtest.pick(None, "hpo_dis_phe", stack, 7) is None
    assert backtest.missing(path, table, "Stack without GNN", 7, "disease") == (
        f"No back-test figure for this list (Stack without GNN, known diseases) yet: {path} holds no row for it.")
    assert backtest.missing(tmp_path / "none.csv", None, "GNN", 7, "disease").endswith("none.csv: that file does not exist.")
    assert backtest.read_table(tmp_path / "none.csv") is None


@pytest.mark.parametrize("text, message", [
    ("relation,cutoff\nx,1\n", "line 1 (header): missing column(s) horizon, list, population, band, k, entities, "
                               "hit_rate, precision"),
    (TRUST.replace(",known,100+,", ",old,100+,"), "line 6: population 'old', band '100+'; expected population known or new"),
    (TRUST.replace(",known,100+,", ",known,many,"), "line 6: population 'known', band 'many'; expected"),
])
def test_a_bad_trust_table_is_a_one_line_error(tmp_path, text, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(DataError) as e:
        backtest.read_table(path)
    assert str(e.value).startswith(f"{path}: {message}") and "\n" not in str(e.value)


def _make(tmp_path, *args):
    """make's discover command line, as bash splits it (the venv faked, python replaced by printf)."""
    venv = tmp_path / "venv"
    venv.mkdir(exist_ok=True)
    (venv / ".installed").touch()
    os.utime(venv / ".installed", (4e9, 4e9))  # newer than pyproject.toml: nothing to install
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "discover", f"VENV={venv}", "PYTHON=printf '%s\\n'", *args],
                          capture_output=True, text=True)
    return done


def test_make_discover_diseases_quotes_each_name_for_hydra(tmp_path):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    names = ["Noonan syndrome", "Alström syndrome", "Marfan syndrome (OMIM:154700)", "Waardenburg's syndrome", "ORPHA:558"]
    done = _make(tmp_path, "DISEASES=" + ", ".join(names))
    assert done.returncode == 0, done.stderr
    args = done.stdout.splitlines()
    assert args[:3] == ["-m", "hygrail.sweep", "experiment=discover_hpo"]
    override, = OverridesParser.create().parse_overrides(args[3:])
    assert (override.key_or_group, override.value()) == ("discover.entities", names)
    # ARGS still passes through; with no DISEASES the experiment's own entities stay
    done = _make(tmp_path, "ARGS=discover.entity_k=5")
    assert done.stdout.splitlines()[2:] == ["experiment=discover_hpo", "discover.entity_k=5"]
    bad = _make(tmp_path, "DISEASES=Noonan syndrome", "DATA=synthesis_recipes")
    assert bad.returncode != 0 and 'make discover: DISEASES="Noonan syndrome" with DATA=synthesis_recipes; expected' \
        in bad.stderr


# -- the page, end to end (a GNN trained on the tiny release) ---------------------------------------
def _cfg(tmp_path, folder, *overrides):
    with initialize_config_dir(str(CONF), version_base="1.3"):
        return compose("config", overrides=[
            "task=discover", "data=hpo", f"data.path={folder}", "relation=hpo_dis_phe", "backbone=rgcn", "split.neg_ratio=3",
            "backbone.epochs=2", "backbone.val_every=1", "discover.entities_only=true", "discover.entity_k=6",
            "discover.review_budget.val=0", "discover.review_budget.candidates=0", "discover.review_budget.test=0",
            f"paths.outputs={tmp_path}", f"discover.trust_table={tmp_path / 'trust.csv'}", *overrides])


def ask(tmp_path, folder, names, *overrides):
    from hygrail.discovery.run import main

    (tmp_path / "trust.csv").write_text(TRUST)
    cfg = _cfg(tmp_path, folder, *overrides)
    cfg.discover.entities = names
    main(cfg)
    from hygrail.discovery.run import default_out

    return default_out(cfg)


def test_one_folder_per_question_with_its_csv_and_no_routing_labels(tmp_path, hpo_folder, hpo, capsys):
    out = ask(tmp_path, hpo_folder, ["Noonan syndrome", "OMIM:154700"])
    printed = capsys.readouterr().out
    other = ask(tmp_path, hpo_folder, ["Marfan syndrome"])
    assert out != other and out.parent == other.parent == tmp_path / "discover" / "hpo_dis_phe"
    assert out.name.startswith("Noonan_syndrome+OMIM_154700-") and other.name.startswith("Marfan_syndrome-")
    assert (out / "index.html").is_file() and (other / "index.html").is_file()  # two queries, two pages
    assert not (out / "hypotheses.csv").exists() and not (out / "hypotheses.parquet").exists()
    rows = pl.read_csv(out / "lists.csv")
    assert rows["entity_id"].unique(maintain_order=True).to_list() == ["ORPHA:648", "OMIM:154700"]
    assert rows.group_by("entity_id").len()["len"].to_list() == [6, 6] and rows["rank"].to_list() == [*range(1, 7)] * 2
    kg = hpo
    assert rows["partner_id"].to_list() == [kg.keys[p] for p in rows["partner_node"].to_list()]
    assert all(re.fullmatch(r"HP:\d{7}", k) for k in rows["partner_id"])
    # nothing known is suggested: the entity's own annotations, its twin's and what they imply
    marfan = rows.filter(pl.col("entity_id") == "OMIM:154700")["partner_id"].to_list()
    assert not set(marfan) & {"HP:0001166", "HP:0000256", "HP:0002750", "HP:0500001", "HP:0500005", "HP:0000924"}
    page = (out / "index.html").read_text()
    md = (out / "hypotheses.md").read_text()
    for word in ("auto_accept", "auto_reject", "routed", "region", "b*", "verdict"):
        assert word not in page.split("<details class='run'>")[0] and word not in md.split("<summary>Run details")[0]
    assert "Ranked hypotheses" not in page and "Evidence cards" not in page and "Ranked hypotheses" not in md
    # the run's details last, collapsed
    assert page.index("<details class='run'><summary>Run details</summary>") > page.rindex("<section")
    assert "seed" in page.split("<details class='run'>")[1]
    # ids linked; which entry a name matched; the back-test sentence from the table (list 'GNN': all known)
    assert "<a href='https://www.orpha.net/en/disease/detail/648'>ORPHA:648</a>" in page
    assert "&#x27;Noonan syndrome&#x27; matched the Orphanet entry ORPHA:648 by exact name." in page
    assert "Asked as OMIM:154700: the OMIM entry OMIM:154700, &#x27;Marfan syndrome&#x27;. The same disease under " \
           "ORPHA:558" in page
    assert page.count("For 41% of diseases like this one (known at the 2018 cutoff; 5,000 diseases), one of the first "
                      "10 of this list was recorded within 3 years") == 2
    first = rows.row(0, named=True)
    assert f"<a href='https://hpo.jax.org/browse/term/{first['partner_id']}'>{html.escape(first['partner'])}</a>" in page
    # what is recorded, whole and collapsed, by top-level branch then name
    box = page.split("Recorded for it: 4 clinical features")[1].split("</details>")[0]
    assert box.index("Macrocephaly") < box.index("Arachnodactyly") < box.index("Delayed skeletal") < box.index("Feature 1")
    assert "<td>Abnormality of head or neck</td>" in box and box.count("<tr>") == 5
    # the terminal prints each entity's first five, with its ids and the sentence
    lines = printed.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("Noonan syndrome (ORPHA:648): "))
    assert lines[head + 1].startswith("  For 41% of diseases like this one")
    assert [x.split(". ")[0].strip() for x in lines[head + 2:head + 7]] == ["1", "2", "3", "4", "5"]
    assert f"1. {first['partner']} ({first['partner_id']})" in lines[head + 2]
    assert json.loads((out / "metrics.json").read_text())["discover_entities_only"] == 1.0


def test_without_a_trust_table_the_page_says_so(tmp_path, hpo_folder):
    out = ask(tmp_path, hpo_folder, ["Noonan syndrome"])
    (tmp_path / "trust.csv").unlink()
    from hygrail.discovery.run import default_out, main

    cfg = _cfg(tmp_path, hpo_folder)
    cfg.discover.entities = ["Noonan syndrome 1"]
    main(cfg)
    page = (default_out(cfg) / "index.html").read_text()
    assert f"No back-test figure for this list (GNN, known diseases) yet: {tmp_path / 'trust.csv'}: that file does " \
           f"not exist." in page
    assert "For 41%" in (out / "index.html").read_text()


def test_the_per_entity_ranker_chooses_the_list_and_the_page_names_it(tmp_path, hpo_folder):
    """``make discover``'s default (conf/experiment/discover_hpo.yaml): the list each population reads is the one
    the pre-cutoff check chose, and the page says which and why, beside that list's back-test figure."""
    out = ask(tmp_path, hpo_folder, ["Marfan syndrome"], "discover.entity_ranker=ltr", "discover.ltr=[ltr_no_text]")
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["ltr_ltr_no_text_rounds"] > 0 and "ltr_fit_seconds" in metrics
    page = html.unescape((out / "index.html").read_text())
    why = re.search(r"Why this list \((.*?)\): on (\d+) entities known in the split's last years, before the cutoff, "
                    r"its first 10 held an answer for (\d+)% of them \((.*?)\)\.", page)
    assert why, "the page says why it shows its list"
    label = why.group(1)
    # the list with the best hits@10 on the check's entities (validation rows only), as metrics.json records them
    figures = {k: metrics[f"ltr_check_known_{k}_hits_at_10"] for k in ("gnn", "stack_with_gnn", "ltr_no_text")}
    best = max(figures, key=figures.get)
    assert label == {"gnn": "GNN", "stack_with_gnn": "Stack (trees + GNN)", "ltr_no_text": "Per-entity ranker"}[best]
    assert int(why.group(2)) == metrics["ltr_check_known_entities"]
    assert int(why.group(3)) == round(100 * figures[best])
    # the trust figure is that list's own: the table's row for it, or a sentence saying there is none
    assert (f"No back-test figure for this list ({label}, known diseases)" in page) or "For 4" in page
    # the same list ordered lists.csv
    assert pl.read_csv(out / "lists.csv").height == 6 * 2  # Marfan's OMIM and ORPHA twins


def test_a_suggestion_that_contradicts_the_record_is_flagged_on_the_page(hpo):
    from hygrail.discovery import entity_page
    from hygrail.discovery.entities import EntityList, EntityReport

    kg = hpo
    space = CandidateSpace(kg, kg.schema.relation("hpo_dis_phe"))
    marfan, = entities.resolve(space, ["OMIM:154700"])  # Macrocephaly is recorded for it
    ids = [_node(kg, x) for x in ("Microcephaly", "Seizure", "Narrow forehead", "Broad forehead")]
    table = pl.DataFrame({"rank": [1, 2, 3, 4], "partner": [kg.names[i] for i in ids], "id": ids,
                          "score": [0.9, 0.8, 0.7, 0.6]})
    report = EntityReport([EntityList(marfan, table, 40, 0.01)], {"Disease": "clinical feature", "Phenotype": "disease"})
    s, = entity_page.question_sections(report, kg, "hpo_dis_phe", None)
    assert s.table["contradicts"].to_list() == ["opposite of Macrocephaly (recorded)", "",
                                                "opposite of Broad forehead (also suggested)",
                                                "opposite of Narrow forehead (also suggested)"]
    assert s.trust == "No back-test figure for this list (GNN, known diseases) yet: discover.trust_table is not set."
    summary = {"title": "t", "lead": [], "facts": {"seed": 1}}
    page = entity_page.question_html(summary, [s])
    assert "<td class=flag>opposite of Macrocephaly (recorded)</td>" in page and page.count("class=flag") == 3
    assert "  1. Microcephaly (HP:0000252)  0.900  [opposite of Macrocephaly (recorded)]" in entity_page.terminal([s])
    # no flag anywhere: no 'contradicts' column
    s.table = s.table.with_columns(pl.lit("").alias("contradicts"))
    assert "contradicts" not in entity_page.question_html(summary, [s])


def test_the_whole_run_page_lists_the_source_ids_too(hpo):
    """The full discovery page (a walk, reviews) puts the named entities' sections before its ranked table;
    their lists carry the source ids beside the node ids."""
    from hygrail.discovery import entity_page
    from hygrail.discovery.entities import EntityList, EntityReport

    kg = hpo
    space = CandidateSpace(kg, kg.schema.relation("hpo_dis_phe"))
    noonan, = entities.resolve(space, ["Noonan syndrome 1"])
    ids = [_node(kg, "Microcephaly"), _node(kg, "Seizure")]
    table = pl.DataFrame({"rank": [1, 2], "partner": [kg.names[i] for i in ids], "id": ids, "score": [0.9, 0.8],
                          "region": ["auto_accept", "routed"], "future_year": pl.Series([None, None], dtype=pl.Int32)})
    report = EntityReport([EntityList(noonan, table, 40, 0.01)], {"Disease": "clinical feature"})
    md = entity_page.markdown(report, kg)
    assert "| rank | clinical feature | source id | id | GNN score | region |" in md
    assert f"| 1 | Microcephaly | HP:0000252 | {ids[0]} | 0.9000 | auto_accept |" in md
    assert "source id" not in entity_page.markdown(report)  # without the graph, as before
