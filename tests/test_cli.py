"""The CLI as a user meets it: one-line errors and a non-zero exit for bad input, stats (text and JSON)."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT


def _sweep(*args, tmp_path):
    return subprocess.run(
        [sys.executable, "-m", "hygrail.sweep", *args, f"paths.outputs={tmp_path}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )


def test_bad_data_path_is_one_line_and_non_zero(tmp_path):
    proc = _sweep("task=stats", "data=csv", f"data.path={tmp_path / 'missing'}", tmp_path=tmp_path)
    assert proc.returncode != 0
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "nodes.csv" in err[0]
    assert "Traceback" not in proc.stderr


def test_unknown_method_is_one_line(tmp_path):
    proc = _sweep("task=run", "method.name=nope", tmp_path=tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: method='nope'")


def test_bad_options_stop_before_any_training(tmp_path):
    for option, expected in (("evidence.strategy=hygrail.evidence.bogus.Mode", "error: evidence.strategy="),
                             ("llm.confidence=vibes", "error: llm.confidence='vibes'"), ("threads=0", "error: threads=0")):
        proc = _sweep("method=hygrail", option, tmp_path=tmp_path)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, option
        assert proc.stderr.strip().splitlines()[-1].startswith(expected), proc.stderr[-500:]
        assert "train " not in proc.stderr, option


def test_stats_json_has_tables_1_and_4_to_6(tmp_path):
    proc = _sweep("task=stats", "format=json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["num_nodes"] == 3000 and out["num_edges"] == 9874
    assert out["nodes"]["CHM"] == 661 and out["relation_edges"]["chm_apl"] == 194
    assert out["splits"]["chm_apl"]["test"] == {"pos": 39, "neg": 780}
    # Table 6 says what kind of split each relation got; the synthetic MatKG dates every edge
    assert {r: (s["kind"], s["dated"], s["ties"]) for r, s in out["splits"].items()}["chm_apl"] == ("temporal", 194, "shuffle")
    assert {s["kind"] for s in out["splits"].values()} == {"temporal"}
    # Table 1: P = the relation's edges, C = |CHM| x |APL| (or n (n - 1) / 2 within one type), rho = P / C
    spaces = out["hypothesis_spaces"]
    assert spaces["chm_apl"] == {"type": "CHM-APL", "positives": 194, "candidates": 661 * 419, "density": 194 / (661 * 419)}
    assert spaces["chm_pro"]["candidates"] == 661 * 1013 and spaces["chm_cmt"]["positives"] == 385


def test_stats_text_says_a_kg_without_years_gets_random_splits(tmp_path):
    import polars as pl

    from hygrail.data import data_config, load_kg
    from hygrail.data.csv import save_csv

    nodes, edges = save_csv(load_kg(data_config(scale=0.5)), tmp_path / "kg")
    pl.read_csv(edges).drop("year").write_csv(edges)  # a user's CSV KG without a year column
    proc = _sweep("task=stats", "data=csv", f"data.path={tmp_path / 'kg'}", "split.ties=shuffle", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "edges.csv: no edge has a year (no year column)" in proc.stderr
    assert "relation chm_apl (CHM-APL): none of its" in proc.stderr and "split is RANDOM" in proc.stderr
    table6 = proc.stdout[proc.stdout.index("Table 6: split sizes (split.ties=shuffle)"):]
    chm_apl = next(line for line in table6.splitlines() if "chm_apl" in line)
    assert "random" in chm_apl and "0/" in chm_apl
    assert "Not temporal (edges without a year; see the log): chm_apl, chm_pro" in table6
    assert proc.stdout.startswith("Table 1: hypothesis spaces (P positive links, C candidate pairs, rho = P / C)")
    # the warnings go to stderr, so JSON output stays one JSON object
    proc = _sweep("task=stats", "data=csv", f"data.path={tmp_path / 'kg'}", "format=json", tmp_path=tmp_path)
    assert proc.returncode == 0 and "split is RANDOM" in proc.stderr
    assert json.loads(proc.stdout)["splits"]["chm_apl"] | {"train": 0, "val": 0, "test": 0} == {
        "train": 0, "val": 0, "test": 0, "kind": "random", "dated": 0, "ties": "shuffle"
    }


# slow (issue #48: make test <= 6 min): a real sweep per baseline; test_structural keeps one in make test
@pytest.mark.slow
def test_baseline_cells_run_through_the_sweep(tmp_path):
    from scripted_server import ScriptedServer

    small = ["data.scale=0.5", "tracking.experiment=cli_test"]
    tsh = _sweep("method=tsh", "method.embedding=false", *small, tmp_path=tmp_path)
    assert tsh.returncode == 0, tsh.stderr[-2000:]
    assert "chm_apl TSH: method P/R/F1" in tsh.stdout and "GNN P/R/F1" not in tsh.stdout  # TSH trains no GNN
    with ScriptedServer() as server:
        kgfm = _sweep("method=kgfm", "llm=scripted", f"llm.base_url={server.base_url}",
                      "method.cap.val=10", "method.cap.test=10", *small, tmp_path=tmp_path)
        assert kgfm.returncode == 0, kgfm.stderr[-2000:]
        assert server.count == 20
    assert "chm_apl KG-FM: method P/R/F1" in kgfm.stdout and "LLM call rate 100.0%" in kgfm.stdout


def test_an_unreachable_llm_server_fails_before_training_in_one_line_as_a_failed_run(tmp_path, closed_url):
    import mlflow

    url = closed_url
    proc = _sweep("method=hygrail", "llm=scripted", f"llm.base_url={url}", "data.scale=0.5",
                  "tracking.experiment=cli_down", tmp_path=tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: llm scripted: no server reachable at {url} (ConnectError"), last
    assert "train " not in proc.stderr  # probed before any training
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    [run] = mlflow.search_runs([mlflow.get_experiment_by_name("cli_down").experiment_id], output_format="list")
    assert run.info.status == "FAILED" and run.data.tags["failure"] == last.removeprefix("error: ")
