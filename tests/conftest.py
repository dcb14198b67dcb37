import os
import socket
from pathlib import Path

import pytest

# The CI machine has 2 cores and other work on it: one thread per process.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("HYGRAIL_THREADS", "1")  # conf/config.yaml's threads (hygrail/threads.py), subprocesses too
# Name vectors on disk would carry stub encoders' vectors from one test into the next.
os.environ["HYGRAIL_NAMES_CACHE"] = ""

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return
    torch.set_num_threads(1)


@pytest.fixture
def closed_url():
    """``http://127.0.0.1:<port>/v1`` where nothing listens: the port stays bound (not listening) for the test,
    so a connection is refused at once and no other process (another xdist worker's server) can take it,
    as it could a port closed before use."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"


@pytest.fixture(scope="session")
def matkg_schema():
    from omegaconf import OmegaConf

    from hygrail.kg import Schema

    return Schema.from_config(OmegaConf.to_container(OmegaConf.load(CONF / "data/schema/matkg.yaml")))


def scripted_llm(url: str) -> dict:
    """conf/llm/scripted.yaml pointed at a running ScriptedServer."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(CONF / "llm/scripted.yaml")) | {"base_url": url}


def named_kg(schema, nodes, edges):
    """A hand-built KG: ``nodes`` as (name, type), ``edges`` as (name, name, support count), year 2000."""
    import polars as pl

    from hygrail.kg import KG

    types, ids = dict(nodes), {n: i for i, (n, _) in enumerate(nodes)}
    table = pl.DataFrame({
        "u": [ids[a] for a, _, _ in edges], "v": [ids[b] for _, b, _ in edges],
        "type": [schema.edge_type(types[a], types[b]) for a, b, _ in edges],
        "count": [c for *_, c in edges], "year": [2000] * len(edges),
    })
    return KG(schema, pl.DataFrame({"name": [n for n, _ in nodes], "type": [t for _, t in nodes]}), table)


def relation_templates(name: str) -> dict:
    """The evidence templates of conf/relation/<name>.yaml."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(CONF / f"relation/{name}.yaml"))["templates"]
