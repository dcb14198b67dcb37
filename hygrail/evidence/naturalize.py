"""Paper §3.3 and App. D.2: structured evidence -> text for the reviewer, as the paper's three
evidence modes (``hygrail.evidence.mode`` says what a mode is):

- ``NoEvidence`` (``evidence=none``, HyGRAIL-NE): the hypothesis statement only.
- ``Template`` (``evidence=template``, Auto-Naturalization, HyGRAIL-Auto): paper Table 9, in its
  order: hypothesis, header, left-entity feature sentences, right-entity feature sentences,
  connecting-path sentences or the no-path sentence, the optional convergence and contradiction
  sentences, then the GNN score line.
- ``LLMNaturalization`` (``evidence=llm``, HyGRAIL-LLM): an LLM rewrites the structured evidence
  (one cached pre-stage call per hypothesis); the prompt is ``NATURALIZE_PROMPT`` below, the only
  place it lives. A failed call falls back to the template text and is counted.

``templates`` is one relation's set (``conf/relation/<name>.yaml`` -> ``templates``), so a new KG
or relation needs YAML, not code.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from tqdm import tqdm

from hygrail.evidence.mode import EvidenceMode, Hypothesis, Prepared
from hygrail.evidence.retrieve import Evidence, Feature, Finding, Path, retrieve, score_contradictions
from hygrail.kg import KG, Relation

MODES = ("none", "template", "llm")

# Paper §3.3: group related evidence, say what supports or weakens the hypothesis, keep graph facts
# apart from background knowledge. Kept short: prompt tokens are the embedded reviewer's main cost.
NATURALIZE_PROMPT = {
    "system": (
        "You summarise knowledge-graph evidence about a scientific hypothesis for an expert reviewer. "
        "You are faithful to the evidence: never invent graph facts, counts or scores."
    ),
    "user": (
        "Hypothesis: {hypothesis}\n\n"
        "Evidence retrieved from the knowledge graph (count = number of papers supporting an association; "
        "norm = its share among the entity's associations of that type; path score in [0, 1], higher is "
        "stronger; a hub is a generic, highly connected node):\n"
        "{evidence}\n\n"
        "Write a concise summary of this evidence (at most {max_words} words):\n"
        "1. Group logically related evidence (for example shared properties or applications) instead of "
        "listing items one by one.\n"
        "2. Explain which evidence supports the hypothesis and which weakens it.\n"
        "3. Start with 'Graph evidence:' and state only what the evidence above contains. Then, only if "
        "highly relevant, add 'Background knowledge (not from the graph):' with established domain "
        "knowledge you are confident of.\n"
        "Do not give a verdict on the hypothesis."
    ),
    "max_words": 180,
}


def render(
    evidence: Evidence,
    mode: str,
    templates: Mapping,
    score: float | None = None,
    cfg: Mapping | None = None,
    calibrated: Mapping[str, float] | None = None,
) -> str:
    """Text for one hypothesis in mode ``none`` or ``template`` (mode ``llm`` needs the chat client:
    ``LLMNaturalization``)."""
    if mode == "none":
        return hypothesis(evidence, templates)
    if mode == "template":
        return compose(evidence, templates, template_sentences(evidence, templates, score, cfg, calibrated), score)
    if mode == "llm":
        raise ValueError("evidence mode 'llm' needs a chat client: use LLMNaturalization.prepare")
    raise ValueError(f"evidence mode {mode!r}; expected one of {', '.join(MODES)}")


def hypothesis(ev: Evidence, t: Mapping) -> str:
    return t["hypothesis"].format(left=ev.left.name, right=ev.right.name)


def compose(ev: Evidence, t: Mapping, sentences: list[str], score: float | None) -> str:
    """Table 9 "Full Structure" around already rendered evidence sentences."""
    text = t["layout"].format(
        hypothesis=hypothesis(ev, t), left=ev.left.name, right=ev.right.name, sentences="\n".join(sentences)
    )
    return text if score is None else f"{text}\n{t['score'].format(score=score)}"


def sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def feature_sentence(ev: Evidence, entity: str, f: Feature, styles: Mapping) -> str:
    return sentence(
        styles[f.style].format(
            entity=entity,
            feature=f.name,
            feature_type=ev.type_name(f.node_type),
            norm=f.weight,
            count=f.count,
            score=f.score,
        )
    )


def path_sentence(p: Path, t: Mapping) -> str:
    style = "hub" if p.hub else p.strength
    return sentence(
        t["paths"][style].format(
            left=p.names[0], right=p.names[-1], intermediate=t["intermediate_join"].join(p.intermediates), score=p.score
        )
    )


def mechanisms(f: Finding) -> str:
    return f"{f.detail['via']}: {', '.join(f.detail['intermediates'])}"


def contradiction_text(f: Finding, t: Mapping) -> str:
    d = dict(f.detail)
    if "competitors" in d:
        d["competitors"] = ", ".join(d["competitors"])
    if "via" in d:
        d["via"] = t["intermediate_join"].join(d["via"])
    return t["contradictions"][f.kind].format(**d)


def template_sentences(ev: Evidence, t: Mapping, score: float | None, cfg: Mapping | None,
                       calibrated: Mapping[str, float] | None = None) -> list[str]:
    out = [feature_sentence(ev, ev.left.name, f, t["left_features"]) for f in ev.left.features]
    out += [feature_sentence(ev, ev.right.name, f, t["right_features"]) for f in ev.right.features]
    if ev.paths:
        out += [path_sentence(p, t) for p in ev.paths]
    else:
        out.append(sentence(t["no_path"].format(left=ev.left.name, right=ev.right.name)))
    if ev.convergence:
        out.append(sentence(t["convergence"].format(mechanisms="; ".join(mechanisms(f) for f in ev.convergence))))
    found = ev.contradictions + (score_contradictions(ev, score, cfg, calibrated) if cfg is not None else [])
    return out + contradiction_sentences(found, t)


def contradiction_sentences(found: list, t: Mapping) -> list[str]:
    """Table 9's contradiction sentence for the found inconsistencies (none: no sentence)."""
    if not found:
        return []
    return [sentence(t["contradiction"].format(description="; ".join(contradiction_text(f, t) for f in found)))]


# -- LLM-Naturalization ---------------------------------------------------------------------------
def structured_lines(ev: Evidence, t: Mapping) -> list[str]:
    """The evidence as compact typed lines: what the LLM naturalizer reads."""
    lines = []
    for side, e in (("Left", ev.left), ("Right", ev.right)):
        lines.append(f"{side} entity: {e.name} ({ev.type_name(e.node_type)}, {e.degree} associations)")
        lines += [
            f"- {f.name} ({ev.type_name(f.node_type)}): count={f.count}, norm={f.weight:.2f}, "
            f"{f.style.replace('_', '-')}"
            for f in e.features
        ]
    lines.append("Connecting paths:" if ev.paths else "Connecting paths: none found")
    for p in ev.paths:
        chain = " — ".join(f"{n} ({ev.type_name(ty)})" for n, ty in zip(p.names, p.node_types))
        flag = ", hub" if p.hub else ""
        lines.append(f"- {chain} (score={p.score:.3f}, {p.strength}{flag})")
    lines += [f"Convergence: {mechanisms(f)} ({f.detail['paths']} paths)" for f in ev.convergence]
    lines += [f"Possible inconsistency: {contradiction_text(f, t)}" for f in ev.contradictions]
    return lines


def naturalize_messages(ev: Evidence, t: Mapping, prompt: Mapping = NATURALIZE_PROMPT) -> list[dict]:
    user = prompt["user"].format(
        hypothesis=hypothesis(ev, t), evidence="\n".join(structured_lines(ev, t)), max_words=prompt["max_words"]
    )
    return [{"role": "system", "content": prompt["system"]}, {"role": "user", "content": user}]


def wrap_summary(
    evidence: Evidence, templates: Mapping, summary: str, score: float | None = None, cfg: Mapping | None = None,
    calibrated: Mapping[str, float] | None = None,
) -> str:
    """An LLM summary in Table 9's overall format (hypothesis, header, score). Contradictions against
    the GNN score are added after it as in template mode, since the naturalizer never sees the score."""
    extra = score_contradictions(evidence, score, cfg, calibrated) if cfg is not None else []
    return compose(evidence, templates, [summary.strip(), *contradiction_sentences(extra, templates)], score)


# -- the paper's evidence modes ---------------------------------------------------------------------
def retrieve_many(graph: KG, relation: Relation, hyps: Sequence[Hypothesis], cfg: Mapping) -> list[Evidence]:
    return [retrieve(graph, h.src, h.dst, relation, cfg)
            for h in tqdm(hyps, desc="evidence", unit="hyp", disable=len(hyps) < 50, leave=False)]


class NoEvidence(EvidenceMode):
    """HyGRAIL-NE: the reviewer sees the hypothesis statement only (nothing is retrieved)."""

    def prepare(self, graph, relation, hyps, llm=None) -> list[Prepared]:
        return [Prepared(self.statement(graph, h), None) for h in hyps]


class Template(EvidenceMode):
    """HyGRAIL-Auto: retrieved evidence rendered by the Table 9 templates."""

    def prepare(self, graph, relation, hyps, llm=None) -> list[Prepared]:
        return [self.template(ev, h) for ev, h in zip(retrieve_many(graph, relation, hyps, self.cfg), hyps)]

    def template(self, ev: Evidence, h: Hypothesis, fallback: bool = False) -> Prepared:
        text = render(ev, "template", self.templates, h.score, self.cfg, self.calibrated)
        return Prepared(hypothesis(ev, self.templates), text, ev.to_dict(), fallback=fallback)


class LLMNaturalization(Template):
    """HyGRAIL-LLM: the same evidence rewritten by the reviewer's model (one pre-stage call each)."""

    uses_llm = True

    def prepare(self, graph, relation, hyps, llm) -> list[Prepared]:
        evidence = retrieve_many(graph, relation, hyps, self.cfg)
        summaries = llm.chat_many([naturalize_messages(ev, self.templates) for ev in evidence],
                                  max_tokens=int(self.cfg["naturalize_max_tokens"]))
        out = []
        for ev, h, summary in zip(evidence, hyps, summaries):
            if summary is None:
                out.append(self.template(ev, h, fallback=True))
            else:
                text = wrap_summary(ev, self.templates, summary, h.score, self.cfg, self.calibrated)
                out.append(Prepared(hypothesis(ev, self.templates), text, ev.to_dict()))
        return out
