"""Cluster mode on one machine, with the real engines: a joblib multirun tracked by a real
`mlflow server` subprocess (whose UI is then read in headless Chromium), and the submitit launcher's
local executor (the SLURM code path without SLURM)."""

import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import mlflow
import pytest

from conftest import ROOT
from scripted_server import Reply, ScriptedServer, ok_review

SMALL = ["data.scale=0.5", "backbone.epochs=6", "backbone.val_every=2", "routing.m=0.995", "routing.n=0.9"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sweep(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "hygrail.sweep", "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_a_slurm_sweep_refuses_a_sqlite_store_before_submitting(tmp_path):
    proc = _sweep("method=gnn_only", "seed=1,2", "hydra/launcher=slurm", f"paths.outputs={tmp_path}")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: tracking.uri=sqlite:///")
    assert "make tracking-server" in proc.stderr and not list(tmp_path.rglob(".submitit"))


@pytest.fixture
def tracking_server(tmp_path):
    """`mlflow server` as `make tracking-server` starts it: SQLite backend, artifact root, 127.0.0.1."""
    port = _port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{tmp_path}/server/mlflow.db", "--artifacts-destination",
         str(tmp_path / "server" / "artifacts")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("mlflow server did not start within 120 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_a_tracking_server_receives_a_parallel_multirun_and_its_ui_opens_on_the_runs(tmp_path, tracking_server):
    outputs = tmp_path / "out"
    with ScriptedServer(default=Reply(ok_review("yes", 0.9))) as llm:
        proc = _sweep("backbone=rgcn", "evidence=none,template", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                      "llm=scripted", f"llm.base_url={llm.base_url}", f"paths.outputs={outputs}",
                      f"tracking.uri={tracking_server}", "tracking.experiment=server_test", *SMALL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 finished, 0 failed, 0 skipped as done" in proc.stdout
    assert not (outputs / "mlflow.db").exists() and not (outputs / "mlartifacts").exists()  # all on the server
    mlflow.set_tracking_uri(tracking_server)
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name("server_test")
    runs = client.search_runs([exp.experiment_id])
    assert sorted(r.data.tags["evidence"] for r in runs) == ["none", "template"]  # each cell once
    trained = [r for r in runs if r.data.metrics["gnn_cache_hit"] == 0]
    assert len(trained) == 1  # the other cell waited for it and reused it
    for r in runs:
        assert r.info.status == "FINISHED"
        [ds] = r.inputs.dataset_inputs
        assert ds.dataset.name == "matkg_synthetic"
        assert {"predictions.parquet", "config.yaml"} <= {a.path for a in client.list_artifacts(r.info.run_id)}
        assert r.data.params["triage_key"]
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium not installed (make test-all installs it as root: apt-get install chromium)")
    from hygrail.tracking import ui_links

    [link] = [line.split(": ", 1)[1] for line in ui_links(tracking_server, tracking_server) if line.startswith("server_test")]
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
                          "--dump-dom", link], capture_output=True, text=True, timeout=180).stdout
    text = re.sub(r"<[^>]+>", "\n", re.sub(r"<script.*?</script>|<style.*?</style>", "", dom, flags=re.S))
    assert "Runs - Experiment" in text  # the runs table, not the GenAI traces overview
    assert "No data available" not in text
    assert text.count("chm_apl/rgcn/hygrail/scripted/") == 2 and "matkg_synthetic" in text
    # the training curves of the cell that trained: one point per epoch (6), through Lightning's logger
    curves = {k for k in trained[0].data.metrics if len(client.get_metric_history(trained[0].info.run_id, k)) > 1}
    assert curves, "no per-epoch metric reached the run"
    for key in curves:
        assert len(client.get_metric_history(trained[0].info.run_id, key)) >= 3


@pytest.mark.slow
def test_submitit_local_runs_the_cluster_code_path(tmp_path):
    proc = _sweep("method=gnn_only", "seed=1,2", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=20",
                  f"paths.outputs={tmp_path}", "tracking.experiment=submitit_test", *SMALL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 finished, 0 failed, 0 skipped as done" in proc.stdout
    assert len(list(tmp_path.glob("multirun/*/.submitit/*"))) >= 2  # really launched as submitit jobs
    logs = "".join(p.read_text() for p in tmp_path.glob("multirun/*/*/sweep.log"))
    assert logs.count("chm_apl rgcn GNN: GNN P/R/F1") == 2
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs([mlflow.get_experiment_by_name("submitit_test").experiment_id], output_format="list")
    assert sorted((r.info.status, r.data.params["seed"]) for r in runs) == [("FINISHED", "1"), ("FINISHED", "2")]
