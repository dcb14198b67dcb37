import os
from pathlib import Path

import pytest

# The CI machine has 2 cores and other work on it: one thread per process.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def matkg_schema():
    from omegaconf import OmegaConf

    from hygrail.kg import Schema

    return Schema.from_config(OmegaConf.to_container(OmegaConf.load(CONF / "data/schema/matkg.yaml")))
