"""The Hydra app: ``python -m hygrail.sweep [-m] group=option ...``.

Only composes: loads the KG the config names and runs the requested task. Every stage it calls is
a plain function elsewhere.
"""

from __future__ import annotations

import json
import logging
import sys

import hydra
from omegaconf import DictConfig, OmegaConf

from hygrail.kg import DataError

log = logging.getLogger("hygrail")


def stats(cfg: DictConfig) -> dict:
    from hygrail.data import load_kg
    from hygrail.data.stats import format_tables, kg_stats, split_stats

    kg = load_kg(OmegaConf.to_container(cfg.data, resolve=True))
    figures = kg_stats(kg)
    splits = split_stats(kg, cfg.split)
    if cfg.format == "json":
        print(json.dumps(figures | {"splits": splits}, indent=2))
    else:
        print(format_tables(figures, splits))
    return figures | {"splits": splits}


TASKS = {"stats": stats}


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig):
    task = TASKS.get(cfg.task)
    if task is None:
        sys.exit(f"error: task={cfg.task!r}; expected one of {sorted(TASKS)}")
    try:
        return task(cfg)
    except DataError as e:
        # User errors are one line and a non-zero exit, never a traceback.
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()
