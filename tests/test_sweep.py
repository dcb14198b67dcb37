"""A real Hydra multirun (joblib launcher, 2 parallel jobs) on a small synthetic graph with the
scripted LLM server, logged to a real SQLite MLflow store; then the same sweep again."""

import subprocess
import sys

import mlflow

from conftest import ROOT
from scripted_server import Reply, ScriptedServer, ok_review

SMALL = [
    "data.scale=0.5",  # ~1,500 nodes: enough positives for a 7:1:2 split, seconds to train
    "backbone.epochs=6",
    "backbone.val_every=2",
    "relation=chm_apl",
    "routing.m=0.995",
    "routing.n=0.9",
]


def _sweep(outputs, url, *extra):
    cmd = [
        sys.executable, "-m", "hygrail.sweep", "-m",
        "backbone=heteroconv,rgcn", "evidence=none,template",
        "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
        "llm=scripted", f"llm.base_url={url}", f"paths.outputs={outputs}",
        "tracking.experiment=sweep_test", *SMALL, *extra,
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _runs(outputs):
    mlflow.set_tracking_uri(f"sqlite:///{outputs}/mlflow.db")
    exp = mlflow.get_experiment_by_name("sweep_test")
    return mlflow.search_runs([exp.experiment_id], output_format="list")


def test_multirun_logs_cells_and_rerun_is_free(tmp_path):
    outputs = tmp_path / "out"
    with ScriptedServer(default=Reply(ok_review("yes", 0.9))) as server:
        _sweep(outputs, server.base_url)
        runs = _runs(outputs)
        assert len(runs) == 4
        cells = {(r.data.tags["backbone"], r.data.tags["evidence"]) for r in runs}
        assert cells == {(b, e) for b in ("heteroconv", "rgcn") for e in ("none", "template")}
        for r in runs:
            m = r.data.metrics
            assert 0 <= m["test_f1"] <= 1 and 0 < m["test_call_rate"] < 1
            assert m["band_a"] <= m["band_b"]
            assert m["llm_requests"] == m["val_reviewed"] + m["test_reviewed"]
            assert r.data.tags["method_label"] == {"none": "HyGRAIL-NE", "template": "HyGRAIL-Auto"}[r.data.tags["evidence"]]
            names = {a.path for a in mlflow.MlflowClient().list_artifacts(r.info.run_id)}
            assert {"predictions.parquet", "evidence_samples.json", "score_distribution.png", "config.yaml"} <= names
        # One GNN per backbone, however the parallel jobs interleave: the other cell is a cache hit.
        assert sum(r.data.metrics["gnn_cache_hit"] == 0 for r in runs) == 2
        calls = server.count
        assert calls == sum(r.data.metrics["llm_calls"] for r in runs) > 0

        # Same sweep again, forcing every cell to recompute: all from the caches.
        _sweep(outputs, server.base_url, "resume=false")
        assert server.count == calls, "a repeated sweep made LLM calls"
        new = [r for r in _runs(outputs) if r.info.run_id not in {x.info.run_id for x in runs}]
        assert len(new) == 4
        assert all(r.data.metrics["gnn_cache_hit"] == 1 and r.data.metrics["llm_calls"] == 0 for r in new)
        by_cell = {r.data.tags["cell_key"]: r.data.metrics["test_f1"] for r in runs}
        assert all(by_cell[r.data.tags["cell_key"]] == r.data.metrics["test_f1"] for r in new)

    # And with resume (the default): finished cells are skipped, nothing new is logged, even with
    # the server moved to another port and other client settings (how, not what, was run).
    with ScriptedServer(default=Reply(ok_review("yes", 0.9))) as moved:
        proc = _sweep(outputs, moved.base_url, "llm.concurrency=3", "llm.timeout=20")
        assert proc.stdout.count("already finished") == 4 and moved.count == 0
        assert len(_runs(outputs)) == 8
