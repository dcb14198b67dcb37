"""Every option of every config group composes with the root config, and every experiment too."""

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from conftest import CONF

GROUPS = ["data", "relation", "backbone", "routing", "evidence", "llm", "method", "experiment"]


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


CASES = [(g, o) for g in GROUPS for o in _options(g)]


@pytest.mark.parametrize("group,option", CASES, ids=[f"{g}={o}" for g, o in CASES])
def test_option_composes(group, option):
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"{group}={option}"], return_hydra_config=True)
    # Resolve everything but the run-time Hydra fields, so a typo in an interpolation fails here.
    plain = OmegaConf.to_container(cfg, resolve=False)
    plain.pop("hydra")
    cfg = OmegaConf.create(plain)
    cfg.paths.outputs = "/tmp/hygrail-test-outputs"
    resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    assert resolved["method"]["name"] and resolved["relation"]["name"] and resolved["data"]["loader"]


def test_every_group_has_options():
    for g in GROUPS:
        assert _options(g), f"conf/{g}/ is empty"


def test_relation_files_match_schema_relations():
    # one relation file per hypothesis relation of every schema (MatKG, the benchmark's second KG)
    relations = [r for f in (CONF / "data/schema").glob("*.yaml") for r in OmegaConf.load(f).relations]
    assert sorted(_options("relation")) == sorted(relations)


def test_the_reviewer_reads_its_field_from_the_kgs_schema_unless_the_llm_config_names_one():
    from hygrail.stages import llm_config

    with initialize_config_dir(str(CONF), version_base="1.3"):
        hpo = compose("config", overrides=["data=hpo", "relation=hpo_dis_phe", "llm=embedded"])
        matkg = compose("config", overrides=["llm=embedded"])
        own = compose("config", overrides=["data=hpo", "relation=hpo_dis_phe", "llm=embedded",
                                           "+llm.domain={expert: an expert dermatologist}"])
    assert llm_config(hpo)["domain"]["expert"] == "an expert clinical geneticist"
    assert llm_config(matkg).get("domain") is None  # the paper's wording, unchanged requests
    assert llm_config(own)["domain"] == {"expert": "an expert dermatologist"}
