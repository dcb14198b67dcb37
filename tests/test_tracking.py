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
