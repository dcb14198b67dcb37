"""Graph evidence for a hypothesis (paper §3.2) and what the reviewer reads about it (§3.3, App. D.2).

``retrieve.retrieve(graph, u, v, relation, cfg) -> Evidence`` (structured, JSON-serialisable).
``mode.load_mode(evidence_cfg, templates)`` builds an evidence mode (``conf/evidence/*.yaml``):
``naturalize`` holds the paper's three (none, template, llm); ``profile`` the ontology-aware context
a small judge can read (issue #37); other modules hold the related systems' strategies.
``python -m hygrail.explain --help`` prints evidence and text for chosen or sampled hypotheses.
"""
