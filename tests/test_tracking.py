"""A cell's identity (what resume compares) holds what determines its result and nothing about how
or where it ran; a run whose LLM calls partly failed is not finished work."""

import mlflow
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from conftest import CONF
from hygrail import tracking


def _cfg(tmp_path, *overrides):
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"paths.outputs={tmp_path}", *overrides])
    OmegaConf.resolve(cfg)
    return cfg


@pytest.mark.parametrize("how", [
    ["llm.base_url=http://elsewhere:9001/v1"], ["llm.concurrency=3", "llm.timeout=30", "llm.max_retries=9"],
    ["threads=2"], ["llm=embedded", "llm.embedded.threads=1"], ["evidence.budget=1"], ["log_samples=3"],
])
def test_how_a_cell_runs_is_not_its_identity(tmp_path, how):
    base = ["method=hygrail", "llm=embedded" if "llm=embedded" in how else "llm=qwen3_4b"]
    assert tracking.cell_key(_cfg(tmp_path, *base, *how)) == tracking.cell_key(_cfg(tmp_path, *base))


@pytest.mark.parametrize("what", [["routing.m=0.99"], ["seed=43"], ["llm=qwen3_14b"], ["evidence.k=3"], ["data.scale=0.5"]])
def test_what_determines_the_result_is_its_identity(tmp_path, what):
    base = ["method=hygrail", "llm=qwen3_4b"]
    assert tracking.cell_key(_cfg(tmp_path, *base, *what)) != tracking.cell_key(_cfg(tmp_path, *base))


def test_gnn_only_cells_ignore_llm_and_evidence(tmp_path):
    key = tracking.cell_key(_cfg(tmp_path, "method=gnn_only"))
    assert tracking.cell_key(_cfg(tmp_path, "method=gnn_only", "llm=qwen3_14b", "evidence=llm", "evidence.k=3")) == key
    assert tracking.cell_key(_cfg(tmp_path, "method=gnn_only", "backbone=hgt")) != key


def test_edited_data_files_are_new_data(tmp_path):
    data = tmp_path / "kg"
    data.mkdir()
    (data / "nodes.csv").write_text("id,name,type\n")
    cfg = _cfg(tmp_path, "data=csv", f"data.path={data}")
    key = tracking.cell_key(cfg)
    (data / "nodes.csv").write_text("id,name,type\nn0,ZnO,CHM\n")
    assert tracking.cell_key(cfg) != key


def test_a_run_with_failed_llm_calls_is_not_finished(tmp_path):
    cfg = _cfg(tmp_path, "method=hygrail", "tracking.experiment=resume_test")
    assert tracking.finished_run(cfg) is None
    mlflow.set_tracking_uri(cfg.tracking.uri)
    exp = mlflow.create_experiment("resume_test", artifact_location=(tmp_path / "art").as_uri())
    with mlflow.start_run(experiment_id=exp, tags={"cell_key": tracking.cell_key(cfg)}) as partial:
        mlflow.log_metric("llm_call_failures", 2)
    assert tracking.finished_run(cfg) is None  # rerun: only the failed calls go out again
    with mlflow.start_run(experiment_id=exp, tags={"cell_key": tracking.cell_key(cfg)}) as complete:
        mlflow.log_metric("llm_call_failures", 0)
    assert tracking.finished_run(cfg) == complete.info.run_id != partial.info.run_id


def test_a_cell_run_is_live_and_lightning_writes_curves_into_it(tmp_path, monkeypatch):
    """The run is RUNNING while the cell computes; a Lightning Trainer's per-epoch logs land in it as
    step metrics and do not end it (the cell does); an error ends it FAILED with the reason. Secrets
    in the config reach neither params nor files."""
    import lightning as L
    import torch

    monkeypatch.setenv("HYGRAIL_LLM_API_KEY", "sk-planted-in-env-0123456789")
    cfg = _cfg(tmp_path, "method=hygrail", "llm=qwen3_4b", "tracking.experiment=live_test",
               "llm.base_url='http://bob:hunter2-pw@gpu1:8001/v1?token=tok-0123456789'",
               "llm.serve.extra_args=[--api-key,sk-planted-in-env-0123456789]")

    class Toy(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.tensor(1.0))

        def training_step(self, batch, batch_idx):
            loss = (self.w * batch).pow(2).mean()
            self.log("train_loss", loss, on_step=False, on_epoch=True)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    with tracking.cell_run(cfg, sweep="test") as cell:
        client = mlflow.MlflowClient(cfg.tracking.uri)
        assert client.get_run(cell.run_id).info.status == "RUNNING"
        L.Trainer(max_epochs=4, logger=cell.logger(), enable_checkpointing=False, enable_progress_bar=False,
                  enable_model_summary=False).fit(Toy(), torch.utils.data.DataLoader(torch.ones(1, 3), batch_size=None))
        assert client.get_run(cell.run_id).info.status == "RUNNING"  # Lightning's finalize did not end it
    history = client.get_metric_history(cell.run_id, "train_loss")
    assert [m.step for m in history] == [0, 1, 2, 3] and history[-1].value < history[0].value
    run = client.get_run(cell.run_id)
    assert run.info.status == "FINISHED"
    assert client.get_experiment(run.info.experiment_id).tags["mlflow.experimentKind"] == "custom_model_development"
    [ds] = run.inputs.dataset_inputs
    assert ds.dataset.name == "matkg_synthetic" and ds.tags[0].value == "training"
    assert run.data.params["llm.base_url"] == "http://[redacted]@gpu1:8001/v1?token=[redacted]"
    assert run.data.params["llm.serve.extra_args"] == '["--api-key", "[redacted]"]'

    with pytest.raises(ZeroDivisionError):
        with tracking.cell_run(cfg, sweep="test") as failing:
            1 / 0
    run = client.get_run(failing.run_id)
    assert run.info.status == "FAILED" and run.data.tags["failure"] == "ZeroDivisionError: division by zero"
    assert "error.txt" in {a.path for a in client.list_artifacts(failing.run_id)}
    blobs = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    for secret in (b"sk-planted-in-env", b"hunter2-pw", b"tok-0123456789"):
        assert secret not in blobs


def test_an_experiment_another_cell_created_first_is_used_not_a_failure(tmp_path, monkeypatch):
    """Parallel cells on a tracking server have no file lock: both may find no experiment and both
    create it; the second one's RESOURCE_ALREADY_EXISTS means "use it" (seen in test_cluster's
    multirun). Here the other cell is played by creating the experiment inside the first lookup."""
    from mlflow.exceptions import MlflowException

    t = {"uri": f"sqlite:///{tmp_path / 'm.db'}", "experiment": "raced", "artifacts": str(tmp_path / "art")}
    mlflow.set_tracking_uri(t["uri"])
    real = mlflow.get_experiment_by_name
    calls = []

    def looked_up_before_the_other_cell_created_it(name):
        calls.append(name)
        if len(calls) == 1:
            mlflow.create_experiment(name)  # the other cell, between our lookup and our create
            return None
        return real(name)

    monkeypatch.setattr(mlflow, "get_experiment_by_name", looked_up_before_the_other_cell_created_it)
    assert tracking.experiment_id(mlflow, t) == real("raced").experiment_id and len(calls) == 2
    monkeypatch.setattr(mlflow, "get_experiment_by_name", lambda name: None)
    with pytest.raises(MlflowException, match="name"):  # any other failure still fails: here an empty name
        tracking.experiment_id(mlflow, t | {"experiment": ""})
