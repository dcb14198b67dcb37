"""HyGRAIL: cost-aware, evidence-grounded hypothesis discovery over typed knowledge graphs.

The package is built in floors, each a room per concept; a module imports only from its own floor
or the floors below it, never upward, so the data flow of DESIGN.md runs one way
(``tests/test_layers.py`` checks every import against ``LAYERS``):

    0  kg, cache, treeio, redact,    the KG object and plain utilities
       threads
    1  data                          loaders, subgraph, split, stats
    2  names, descriptors,           shared concepts: entity-name embeddings, local pair
       thresholds, metrics           descriptors, decision thresholds, metrics
    3  evidence                      retrieval and naturalization (paper §3.2-3.3), evidence modes
    4  review                        the LLM reviewer: client, prompts, contract, calibration (§3.4)
    5  triage, baselines             GNN scores and the band (§3.1); TSH, KG-FM, structural heuristics
    6  stages, tracking              the stages task=run and task=discover share; MLflow logging
    7  pipeline, discovery, explain, tasks: one sweep cell, one discovery run, evidence for a person,
       recipes                       precursor sets for a chemist
    8  sweep, report                 the Hydra app composing tasks; tables from MLflow
"""

# module or package prefix -> floor (the longest matching prefix decides)
LAYERS = {
    "hygrail.kg": 0, "hygrail.cache": 0, "hygrail.treeio": 0, "hygrail.redact": 0, "hygrail.threads": 0,
    "hygrail.data": 1,
    "hygrail.names": 2, "hygrail.descriptors": 2, "hygrail.thresholds": 2, "hygrail.metrics": 2,
    "hygrail.evidence": 3,
    "hygrail.review": 4,
    "hygrail.triage": 5, "hygrail.baselines": 5,
    "hygrail.stages": 6, "hygrail.tracking": 6,
    "hygrail.pipeline": 7, "hygrail.discovery": 7, "hygrail.explain": 7, "hygrail.recipes": 7,
    "hygrail.sweep": 8, "hygrail.report": 8,
}

# The config's ``threads: ${hygrail_threads:...}`` resolver, registered before any config is resolved.
from hygrail import threads as _threads  # noqa: E402,F401
