"""`make paper-check` (issue #37): one command for a GPU machine with vLLM that measures a paper model.

1. Serve ``--llm`` (default qwen3_4b) with paper Table 8's vLLM settings (conf/llm/<llm>.yaml
   ``serve:``; Qwen3-4B: gpu-mem 0.90, max-len 32,768, max-seq 64, new-tok 1,024; decoding
   temperature 0.2, top_p 0.9, timeout 180 s): `make serve`'s command, run with ``--vllm`` (the
   vllm executable of the vLLM environment), and wait until its /v1/models answers. Skipped when
   the model already answers at ``llm.base_url``, for a model without a ``serve`` block (the
   embedded CPU judge, a scripted test server), or with ``--no-serve``.
2. Review the HPO band: bench_context.py's pairs (the routed band of `make run DATA=hpo`'s cell,
   class-stratified, seeded) under ``--variants`` (statement-only and the profile context),
   each part in one batch at the model's concurrency: band AUC with 95% intervals, the paired
   difference, seconds per review, the contamination count against the model's training-data date.
3. Run one paper Table 2 cell (default: CHM-APL, R-GCN, HyGRAIL-Auto, i.e. template evidence)
   with the same model: test recall and F1 beside GNN-only, the call rate, LLM calls and seconds.
   The data is the config's default (the calibrated synthetic MatKG: the MatKG release is not
   here); the paper's pooled Table 2 F1 for this backbone and model is written beside it.
4. Write one JSON results file (``--out``; default <outputs>/paper_check/<llm>.json) with each
   stage's wall seconds and whether the whole ran within ``--budget-s`` (600: the issue's 10 minutes).

The CPU path, for a machine without a GPU: ``make paper-check LLM=embedded`` (the embedded 1.5B
judge, ``--n`` 30 by default there: ~5-10 s per review on 2 shared cores) or a scripted
OpenAI-compatible server (tests/test_paper_check.py, with small configs through ``--band`` and
``--cell``).

    .venv/bin/python bench/paper_check.py [--llm qwen3_4b] [--n 150] [--variants none,full] [--out FILE]
        [--band <overrides of the band cell>] [--cell <overrides of the Table 2 cell>] [-- <overrides of both>]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_context import HPO, VARIANTS, band_rows, report, summarise  # noqa: E402
from bench_review import PAPER_F1, PAPER_LLMS, run_config  # noqa: E402

CELL = ["relation=chm_apl", "backbone=rgcn", "evidence=template"]  # Table 2: HyGRAIL-Auto, R-GCN, CHM-APL
PAPER_NAMES = {"qwen3_4b": "Qwen3-4B", "qwen3_14b": "Qwen3-14B", "ministral_3b": "Ministral-3B",
               "magistral_14b": "Ministral-14B"}  # PAPER_F1's column per conf/llm file
EVIDENCE_LABEL = {"none": "NE", "template": "Auto", "llm": "LLM"}


def answering(llm: dict, timeout: float = 5.0) -> bool:
    from hygrail.review.client import probe

    try:
        return bool(probe(llm, timeout))
    except Exception:  # not up yet: connection refused, 503 while loading, ...
        return False


def start_server(llm: dict, vllm: str, wait_s: float, log: Path) -> subprocess.Popen | None:
    """``vllm serve`` with Table 8's settings (``hygrail.review.serve.serve_command``, the command
    `make serve` runs) in the background, returned once its endpoint answers; None when nothing needs
    starting (module docstring). ``vllm``: the executable of the environment that has vLLM (it pins
    its own torch, so it is not .venv's)."""
    from hygrail.review.serve import serve_command

    if not llm.get("serve") or not llm.get("base_url") or answering(llm):
        return None
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.Popen([vllm, *serve_command(llm)[1:]], cwd=ROOT, stdout=log.open("w"),
                                stderr=subprocess.STDOUT)
    except FileNotFoundError:
        raise SystemExit(f"{vllm}: not found; run this on the GPU machine with vLLM on PATH (or --vllm PATH), "
                         f"or start the server yourself and pass --no-serve") from None
    t0 = time.monotonic()
    while time.monotonic() - t0 < wait_s:
        if proc.poll() is not None:
            raise SystemExit(f"the model server exited with {proc.returncode} before answering; its log: {log}")
        if answering(llm):
            return proc
        time.sleep(5)
    proc.terminate()
    raise SystemExit(f"the model server did not answer at {llm['base_url']} within {wait_s:.0f} s; its log: {log}")


def table2_cell(overrides: list[str], outputs: str) -> dict:
    """One HyGRAIL cell (``pipeline.run_cell``) and what Table 2 reports of it, with the paper's value."""
    from hydra import compose, initialize_config_dir

    from hygrail.pipeline import run_cell

    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["method=hygrail", f"paths.outputs={outputs}", *overrides])
    t0 = time.perf_counter()
    m = run_cell(cfg).metrics
    keys = ("test_recall", "test_f1", "gnn_test_recall", "gnn_test_f1", "test_call_rate", "llm_calls",
            "llm_failures", "llm_wall_seconds")
    out = {"data": cfg.data.name, "relation": cfg.relation.name, "backbone": cfg.backbone.name,
           "evidence": cfg.evidence.mode, "llm": cfg.llm.name, "seconds": time.perf_counter() - t0,
           **{k: float(m[k]) for k in keys if k in m}}
    paper = PAPER_F1.get(cfg.backbone.name, {}).get(EVIDENCE_LABEL.get(cfg.evidence.mode, ""))
    if paper and cfg.llm.name in PAPER_NAMES:
        out["paper_f1_pooled"] = paper[PAPER_LLMS.index(PAPER_NAMES[cfg.llm.name])]
        out["paper_note"] = "paper Table 2: pooled over the seven MatKG relations on the MatKG release"
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llm", default="qwen3_4b", help="conf/llm/<name>.yaml")
    ap.add_argument("--n", type=int, default=None, help="band pairs (default 150 for a served model, 30 embedded)")
    ap.add_argument("--variants", default="none,full", help=f"evidence variants of the band, of {','.join(VARIANTS)}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-serve", action="store_true", help="never start a server (one is already up)")
    ap.add_argument("--vllm", default="vllm", help="the vllm executable (of the environment that has vLLM)")
    ap.add_argument("--wait-s", type=float, default=300, help="how long the server may take to answer")
    ap.add_argument("--budget-s", type=float, default=600, help="the target wall time of the whole check")
    ap.add_argument("--outputs", default=os.environ.get("HYGRAIL_OUTPUTS", "outputs"))
    ap.add_argument("--out", default=None, help="results file (default <outputs>/paper_check/<llm>.json)")
    ap.add_argument("--band", nargs="*", default=HPO, help="overrides of the band's cell (default make run DATA=hpo's)")
    ap.add_argument("--cell", nargs="*", default=CELL, help="overrides of the Table 2 cell")
    ap.add_argument("overrides", nargs="*", help="overrides of both, e.g. llm.base_url=http://host:8001/v1")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    common = [f"llm={args.llm}", *args.overrides]
    from hygrail.stages import llm_config

    llm = llm_config(run_config([*args.band, *common], args.outputs))
    served = bool(llm.get("serve"))
    n = args.n or (150 if served else 30)
    out = Path(args.out) if args.out else Path(args.outputs) / "paper_check" / f"{args.llm}.json"
    results: dict = {"llm": args.llm, "model": llm.get("model"), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                     "stages_seconds": {}}
    if served:
        from hygrail.review.serve import serve_command

        results["serve_command"] = " ".join(serve_command(llm))
    t0 = time.perf_counter()
    proc = None if args.no_serve else start_server(llm, args.vllm, args.wait_s, out.with_suffix(".serve.log"))
    results["stages_seconds"]["serve"] = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        df, cfg, llm_used = band_rows([*args.band, *common], args.outputs, n, args.seed, args.variants.split(","),
                                      threads=None, one_at_a_time=not served,
                                      rows_file=out.with_suffix(".band.csv"))
        band = summarise(df, cfg, llm_used, args.seed)
        report(band)
        results["hpo_band"] = band | {"data": cfg.data.name, "relation": cfg.relation.name,
                                      "subgraph_nodes": cfg.data.get("subgraph_nodes")}
        results["stages_seconds"]["band"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        results["table2_cell"] = table2_cell([*args.cell, *common], args.outputs)
        results["stages_seconds"]["table2_cell"] = time.perf_counter() - t0
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(60)
    results["wall_seconds"] = time.perf_counter() - t_start
    results["within_budget"] = results["wall_seconds"] <= args.budget_s
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=float))
    c = results["table2_cell"]
    print(f"Table 2 cell ({c['data']}, {c['relation']}, {c['backbone']}, evidence {c['evidence']}, {c['llm']}): "
          f"test F1 {c.get('test_f1', float('nan')):.3f} vs GNN-only {c.get('gnn_test_f1', float('nan')):.3f}"
          + (f" (paper, pooled: {c['paper_f1_pooled']:.3f})" if "paper_f1_pooled" in c else ""))
    print(f"results: {out} ({results['wall_seconds']:.0f} s; within {args.budget_s:.0f} s: {results['within_budget']})")
    return results


if __name__ == "__main__":
    main()
