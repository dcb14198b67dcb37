"""Loading a KG from config: MatKG release files, generic CSV, or the calibrated synthetic MatKG."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

import numpy as np
from omegaconf import OmegaConf

from hygrail.kg import KG, DataError, Schema

CONF = Path(__file__).resolve().parents[2] / "conf"


def data_config(name: str = "matkg_synthetic", **overrides) -> dict:
    """``conf/data/<name>.yaml`` with its schema filled in, as a plain dict, for scripts and tests
    that build a KG without composing the whole Hydra app."""
    cfg = OmegaConf.to_container(OmegaConf.load(CONF / "data" / f"{name}.yaml"))
    schema = next(d["schema"] for d in cfg.pop("defaults", []) if isinstance(d, dict) and "schema" in d)
    cfg["schema"] = OmegaConf.to_container(OmegaConf.load(CONF / "data" / "schema" / f"{schema}.yaml"))
    return cfg | overrides


def data_path(path: str) -> Path:
    """``data.path``: a relative one is taken from the working directory, or else from the repository
    root when it exists only there (``../shared`` beside the repository, whatever the cwd)."""
    p = Path(path)
    if p.is_absolute() or p.exists() or not (CONF.parent / p).exists():
        return p
    return CONF.parent / p


def load_kg(cfg: Mapping, cutoff: int | None = None, keep: Callable[[KG], np.ndarray] | None = None) -> KG:
    """Build the KG a ``conf/data/*.yaml`` describes (then an optional type-preserving subgraph,
    drawn by what was known at ``cutoff`` when one is given: ``subgraph.sample_subgraph``; ``keep``:
    the node ids of the whole KG the subgraph must hold, e.g. ``discovery.run.sample_keep``)."""
    schema = Schema.from_config(cfg["schema"])
    loader = cfg["loader"]
    if loader == "synthetic":
        from hygrail.data.synthetic import generate

        kg = generate(schema, cfg)
    elif loader == "matkg":
        from hygrail.data.matkg import load_matkg

        root = Path(cfg["path"])
        years = root / cfg["entptnerdoi"] if cfg.get("entptnerdoi") else None
        kg = load_matkg(root / cfg["subrelobj"], schema, years if years and years.exists() else None)
    elif loader == "csv":
        from hygrail.data.csv import load_csv

        root = Path(cfg["path"])
        kg = load_csv(root / cfg["nodes"], root / cfg["edges"], schema)
    elif loader == "hpo":
        from hygrail.data.hpo import hpo_folder, load_hpo

        kg = load_hpo(hpo_folder(None if cfg.get("path") is None else data_path(cfg["path"])), schema,
                      bool(cfg.get("gene_phenotype", False)))
    elif loader == "synthesis_recipes":
        from hygrail.data.recipes import load_recipes

        kg = load_recipes(data_path(cfg["path"]), schema)
    else:
        raise DataError(f"data.loader={loader!r}; expected one of synthetic, matkg, csv, hpo, synthesis_recipes")
    if cfg.get("subgraph_nodes"):
        from hygrail.data.subgraph import sample_subgraph

        kg = sample_subgraph(kg, int(cfg["subgraph_nodes"]), seed=int(cfg.get("subgraph_seed", 42)), cutoff=cutoff,
                             keep=None if keep is None else keep(kg))
    return kg
