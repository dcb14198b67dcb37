"""Review prompts (paper App. B.2, Fig. 6): a no-evidence prompt eliciting the model's prior and
an evidence prompt conditioning it on the naturalized KG evidence (template or LLM text).

Every instruction lives in the system message and the variable part (hypothesis, evidence) comes
last, so consecutive reviews share a token prefix that vLLM's and llama.cpp's prefix caches reuse.
The `compact` style is the same contract in as few tokens as possible, for the CPU-embedded model
whose cost is dominated by prompt tokens.
"""

from __future__ import annotations

from hygrail.review.contract import ReviewRequest

STYLES = ("full", "compact")

_ROLE = (
    "You are an expert materials scientist reviewing candidate hypotheses proposed by a link "
    "predictor over a materials-science knowledge graph mined from the literature."
)

_NO_EVIDENCE = (
    "Judge from your own scientific knowledge whether the hypothesis is true: whether the "
    "relationship is established or strongly expected from known chemistry, physics and "
    "materials science. Be sceptical of vague or generic links, and do not assume a link holds "
    "merely because both entities are common."
)

_EVIDENCE = (
    "You are also given evidence extracted from the knowledge graph: how strongly each entity is "
    "associated with related concepts (literature support counts and normalized weights) and the "
    "multi-hop paths connecting the two entities. Assess the scientific plausibility of the "
    "hypothesis based on this evidence and established knowledge, not on unsupported "
    "assumptions. Specific, well-supported mechanistic links support it; links only through "
    "generic hub concepts, weak counts, or the absence of paths weaken it. Counts measure "
    "co-occurrence in papers, not proof."
)

_FIELDS = {
    "review": '"review": "yes" or "no"',
    "confidence": '"confidence": a number between 0 and 1',
    "reasoning": '"reasoning": "2-4 sentences"',
}

_CONTRACT = (
    "Reply with a single-line JSON object and nothing else: {{{fields}}}. confidence is your "
    'probability that the hypothesis is true, and review is "yes" exactly when confidence >= 0.5.'
)

_COMPACT = (
    "Judge if a materials-science hypothesis is true{using}. Reply only with JSON: "
    '{{{fields}}}; confidence = probability it is true.'
)
_COMPACT_FIELDS = {
    "review": '"review":"yes"|"no"',
    "confidence": '"confidence":0-1',
    "reasoning": '"reasoning":"one short sentence"',
}


def _order(review_first: bool) -> tuple[str, ...]:
    return ("review", "confidence", "reasoning") if review_first else ("reasoning", "review", "confidence")


def system_prompt(with_evidence: bool, style: str = "full", review_first: bool = False) -> str:
    if style == "compact":
        fields = ",".join(_COMPACT_FIELDS[f] for f in _order(review_first))
        return _COMPACT.format(using=" given knowledge-graph evidence" if with_evidence else "", fields=fields)
    if style != "full":
        raise ValueError(f"prompt style {style!r}: expected one of {STYLES}")
    fields = ", ".join(_FIELDS[f] for f in _order(review_first))
    task = _EVIDENCE if with_evidence else _NO_EVIDENCE
    return f"{_ROLE} {task}\n\n{_CONTRACT.format(fields=fields)}"


def review_messages(request: ReviewRequest, style: str = "full", review_first: bool = False) -> list[dict]:
    with_evidence = request.evidence is not None
    user = f"Hypothesis: {request.hypothesis.strip()}"
    if with_evidence:
        # Naturalized evidence is paper Table 9's full structure, which opens with the hypothesis
        # itself; stating it twice would only cost the embedded model prompt tokens.
        text = request.evidence.strip()
        user = text if text.startswith("Hypothesis:") else f"{user}\nEvidence:\n{text}"
    return [
        {"role": "system", "content": system_prompt(with_evidence, style, review_first)},
        {"role": "user", "content": user},
    ]
