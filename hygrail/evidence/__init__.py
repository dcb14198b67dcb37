"""Graph evidence for a hypothesis (paper §3.2) and its naturalization into text (§3.3, App. D.2).

``retrieve.retrieve(graph, u, v, relation, cfg) -> Evidence`` (structured, JSON-serialisable);
``naturalize.render(evidence, mode, templates, score, cfg) -> str`` for none / template;
``naturalize.llm_naturalize(evidence, templates, chat, score, cfg) -> str`` for llm (= ``wrap_summary`` of the
chat's summary).
``python -m hygrail.evidence --help`` prints evidence and text for chosen or sampled hypotheses.
"""
