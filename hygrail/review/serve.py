"""Launch a served reviewer with the paper's vLLM settings (App. B.2, Table 8), on a GPU machine.

    python -m hygrail.review.serve llm=qwen3_4b                # exec `vllm serve ...`
    python -m hygrail.review.serve llm=qwen3_4b --dry-run      # print the command only
    python -m hygrail.review.serve llm=qwen3_4b serve.port=9001

vLLM is CUDA-only and pins its own torch: install it in the serving environment, never the main one.
The client then reaches the server at `llm.base_url` (env HYGRAIL_<MODEL>_URL overrides it).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Mapping

from omegaconf import OmegaConf

CONF_LLM = Path(__file__).resolve().parents[2] / "conf" / "llm"


def serve_command(llm_cfg: Mapping) -> list[str]:
    s = llm_cfg.get("serve")
    if not s:
        raise ValueError(f"llm={llm_cfg.get('name')!r} has no `serve` block: it is not a vLLM-served model")
    cmd = ["vllm", "serve", str(s["model"]), "--host", str(s["host"]), "--port", str(s["port"]),
           "--gpu-memory-utilization", f"{float(s['gpu_memory_utilization']):.2f}"]
    if s.get("max_model_len"):  # null: the model's default (Table 8, Ministral-3B)
        cmd += ["--max-model-len", str(s["max_model_len"])]
    cmd += ["--max-num-seqs", str(s["max_num_seqs"])]
    return cmd + [str(a) for a in s.get("extra_args") or []]


def load_llm_config(name: str, overrides: list[str] = ()) -> dict:
    path = CONF_LLM / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in CONF_LLM.glob("*.yaml"))
        raise SystemExit(f"llm={name}: no {path}; expected one of {known}")
    cfg = OmegaConf.merge(OmegaConf.load(path), OmegaConf.from_dotlist(list(overrides)))
    return OmegaConf.to_container(cfg, resolve=True)


def main(argv: list[str]) -> None:
    dry = "--dry-run" in argv
    args = [a for a in argv if a != "--dry-run"]
    names = [a.split("=", 1)[1] for a in args if a.startswith("llm=")]
    if len(names) != 1:
        raise SystemExit("usage: python -m hygrail.review.serve llm=<name> [serve.key=value ...] [--dry-run]")
    try:
        cmd = serve_command(load_llm_config(names[0], [a for a in args if not a.startswith("llm=")]))
    except ValueError as e:
        raise SystemExit(str(e)) from None
    print(shlex.join(cmd), flush=True)
    if not dry:
        try:
            os.execvp(cmd[0], cmd)
        except FileNotFoundError:
            raise SystemExit("vllm is not installed here: run this on the GPU serving machine (pip install vllm)")


if __name__ == "__main__":
    main(sys.argv[1:])
