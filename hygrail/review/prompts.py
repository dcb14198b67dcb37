"""Review prompts (paper App. B.2, Fig. 6): a no-evidence prompt eliciting the model's prior and
an evidence prompt conditioning it on the naturalized KG evidence (template or LLM text).

Every instruction lives in the system message and the variable part (hypothesis, evidence) comes
last, so consecutive reviews share a token prefix that vLLM's and llama.cpp's prefix caches reuse.
The `compact` style is the same contract in as few tokens as possible, for the CPU-embedded model
whose cost is dominated by prompt tokens.

The reviewer's field comes from the KG's schema (``domain:`` in conf/data/schema/<name>.yaml, passed as
``llm.domain``): the paper's prompts say "materials scientist" and "materials science", which told
the embedded judge reviewing HPO disease annotations to judge a "materials-science hypothesis".
Without a domain the prompts are the paper's, word for word (``MATERIALS``), so MatKG's requests and
their cached replies are unchanged.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from hygrail.review.contract import Example, ReviewRequest

STYLES = ("full", "compact")

# The paper's field (App. B.2, Fig. 6); a schema's ``domain`` replaces any of these keys.
MATERIALS = {
    "expert": "an expert materials scientist",
    "graph": "a materials-science knowledge graph mined from the literature",
    "field": "materials-science",  # as an adjective: "a materials-science hypothesis"
    "knowledge": "known chemistry, physics and materials science",
}

_ROLE = (
    "You are {expert} reviewing candidate hypotheses proposed by a link "
    "predictor over {graph}."
)

_NO_EVIDENCE = (
    "Judge from your own scientific knowledge whether the hypothesis is true: whether the "
    "relationship is established or strongly expected from {knowledge}. Be sceptical of vague or "
    "generic links, and do not assume a link holds merely because both entities are common."
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
_CLAUSE = {"full": '"reasoning": "one short clause"', "compact": '"reasoning":"a few words"'}

_CONTRACT = (
    "Reply with a single-line JSON object and nothing else: {{{fields}}}. confidence is your "
    'probability that the hypothesis is true, and review is "yes" exactly when confidence >= 0.5.'
)
_CONTRACT_VERDICT = "Reply with a single-line JSON object and nothing else: {{{fields}}}."

_COMPACT = (
    "Judge if a {field} hypothesis is true{using}. Reply only with JSON: "
    '{{{fields}}}; confidence = probability it is true.'
)
_COMPACT_VERDICT = "Judge if a {field} hypothesis is true{using}. Reply only with JSON: {{{fields}}}."
_COMPACT_FIELDS = {
    "review": '"review":"yes"|"no"',
    "confidence": '"confidence":0-1',
    "reasoning": '"reasoning":"one short sentence"',
}

# The few-shot block (hygrail.review.fewshot): solved training hypotheses in the reviewed format,
# after the instructions and before the variable part, so it is part of the cached prefix.
_EXAMPLES_HEAD = ("Solved examples: hypotheses from the same knowledge graph with their evidence and the right "
                  "verdict. Judge new hypotheses the same way.")

PAPER_FIELDS = ("reasoning", "review", "confidence")


def _field_text(fields: Sequence[str], style: str, reasoning: str) -> str:
    table = _COMPACT_FIELDS if style == "compact" else _FIELDS
    texts = [_CLAUSE[style] if f == "reasoning" and reasoning == "clause" else table[f] for f in fields]
    return ("," if style == "compact" else ", ").join(texts)


def domain_words(domain: Mapping[str, str] | None) -> dict[str, str]:
    """The paper's field words with a schema's ``domain`` over them; unknown keys are refused."""
    domain = dict(domain or {})
    if unknown := sorted(set(domain) - set(MATERIALS)):
        raise ValueError(f"llm.domain keys {unknown}: expected some of {sorted(MATERIALS)} (conf/data/schema/<name>.yaml domain:)")
    return MATERIALS | {k: str(v) for k, v in domain.items()}


def system_prompt(with_evidence: bool, style: str = "full", fields: Sequence[str] = PAPER_FIELDS,
                  reasoning: str = "full", examples: Sequence[Example] = (),
                  domain: Mapping[str, str] | None = None) -> str:
    """Instructions, the reply contract for ``fields`` (``contract.review_fields``), then the few-shot
    block if any. ``reasoning="clause"`` asks for one short clause instead of the style's default;
    ``domain`` names the reviewer's field (``domain_words``; None: the paper's materials science)."""
    if style not in STYLES:
        raise ValueError(f"prompt style {style!r}: expected one of {STYLES}")
    text = _field_text(fields, style, reasoning)
    stated = "confidence" in fields
    words = domain_words(domain)
    if style == "compact":
        using = " given knowledge-graph evidence" if with_evidence else ""
        head = (_COMPACT if stated else _COMPACT_VERDICT).format(using=using, fields=text, field=words["field"])
    else:
        task = _EVIDENCE if with_evidence else _NO_EVIDENCE.format(**words)
        head = f"{_ROLE.format(**words)} {task}\n\n{(_CONTRACT if stated else _CONTRACT_VERDICT).format(fields=text)}"
    if not examples:
        return head
    block = "\n\n".join(f"Example {i}:\n{user_text(e.request)}\nVerdict: {e.verdict}" for i, e in enumerate(examples, 1))
    return f"{head}\n\n{_EXAMPLES_HEAD}\n\n{block}"


def user_text(request: ReviewRequest) -> str:
    user = f"Hypothesis: {request.hypothesis.strip()}"
    if request.evidence is None:
        return user
    # Naturalized evidence is paper Table 9's full structure, which opens with the hypothesis
    # itself; stating it twice would only cost the embedded model prompt tokens.
    text = request.evidence.strip()
    return text if text.startswith("Hypothesis:") else f"{user}\nEvidence:\n{text}"


def review_messages(request: ReviewRequest, style: str = "full", fields: Sequence[str] = PAPER_FIELDS,
                    reasoning: str = "full", examples: Sequence[Example] = (),
                    domain: Mapping[str, str] | None = None) -> list[dict]:
    return [
        {"role": "system", "content": system_prompt(request.evidence is not None, style, fields, reasoning, examples,
                                                    domain)},
        {"role": "user", "content": user_text(request)},
    ]
