"""`make paper-check`'s CPU path (bench/paper_check.py, issue #37): the band review and the Table 2
cell against the scripted OpenAI-compatible server, small configs, and the results file's values."""

import json
import sys

import polars as pl
import pytest

from conftest import CONF
from scripted_server import Reply, ScriptedServer, ok_review

sys.path.insert(0, str(CONF.parent / "bench"))

SMALL = ["data.scale=0.5", "backbone=rgcn", "backbone.epochs=10", "backbone.val_every=5", "relation=chm_apl",
         "routing.m=0.995", "routing.n=0.9"]  # as tests/test_pipeline.py: a wide band, so something is routed


# slow (issue #48): the served-model check end to end; the GPU path it prepares is never run by CI
@pytest.mark.slow
def test_paper_check_writes_the_band_and_the_cell_it_measured(tmp_path):
    import paper_check
    from bench_review import run_config
    from hygrail.stages import build_split

    cfg = run_config(SMALL, str(tmp_path))
    kg, split = build_split(cfg)
    with ScriptedServer(default=Reply(ok_review("no", 0.1))) as server:
        # an oracle: "yes" (0.9) exactly for the split's true pairs, whatever evidence follows the statement
        for part in ("val", "test"):
            pos = split.part(part).filter(pl.col("label") == 1)
            for s, d in zip(pos["src"].to_list(), pos["dst"].to_list()):
                server.script(cfg.relation.templates.hypothesis.format(left=kg.label(s), right=kg.label(d)),
                              Reply(ok_review("yes", 0.9)))
        out = tmp_path / "check.json"
        res = paper_check.main(["--llm", "scripted", "--n", "12", "--variants", "none,template", "--outputs",
                                str(tmp_path), "--out", str(out), "--band", *SMALL, "--cell", *SMALL,
                                "evidence=template", "--", f"llm.base_url={server.base_url}"])
        calls = server.count
    saved = json.loads(out.read_text())
    assert saved["llm"] == "scripted" and saved["model"] == "scripted-model" and "serve_command" not in saved
    band = saved["hpo_band"]
    assert band["pairs"] == 12 and band["positives"] == 6 and band["failures"] == {"none": 0, "template": 0}
    assert band["variants"]["none"]["auc"] == band["variants"]["template"]["auc"] == 1.0  # the oracle
    assert band["variants"]["template"]["auc_minus_none"] == 0.0
    assert band["variants"]["none"]["uncached_calls"] == 12 and "contamination" not in band  # not HPO
    cell = saved["table2_cell"]
    assert (cell["relation"], cell["backbone"], cell["evidence"], cell["llm"]) == ("chm_apl", "rgcn", "template", "scripted")
    assert cell["llm_failures"] == 0 and cell["test_f1"] >= cell["gnn_test_f1"]
    assert calls == 24 + cell["llm_calls"]  # the cell's reviews went to the server, none from the band's cache
    assert saved["within_budget"] and set(saved["stages_seconds"]) == {"serve", "band", "table2_cell"}
    assert saved == json.loads(json.dumps(res, default=float))
    print(saved["stages_seconds"])
    assert (tmp_path / "check.band.csv").is_file()
