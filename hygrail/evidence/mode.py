"""What an evidence mode is: one object behind one small interface (paper §3.2-3.3 and the related
systems' strategies), chosen by ``conf/evidence/<mode>.yaml``.

A mode turns hypotheses into what the reviewer reads:

    mode = load_mode(evidence_cfg, templates)              # the class named by cfg["strategy"]
    prepared = mode.prepare(graph, relation, hyps, llm)    # retrieve, optional LLM pre-stages, render

``graph`` is the graph evidence may come from (a split's training graph); ``hyps`` are
``Hypothesis(src, dst, score)``; ``llm`` is the reviewer's client (``chat_many(conversations,
max_tokens) -> [str | None]``, cached like every call) for modes with LLM pre-stages, or None.
Each ``Prepared`` holds the hypothesis statement, the reviewer's evidence text (None: the
no-evidence prompt), the structured evidence as JSON-able data (artifacts, discovery cards) and
per-hypothesis ``info`` columns (e.g. an ARIA tier) that go into ``predictions.parquet``. A mode
whose LLM pre-stage fails for a hypothesis falls back to template evidence and marks it
(``fallback``). A mode may decide a hypothesis without review (``skip``: "reject" decides 0,
"gnn" leaves the GNN-only decision); the reviewer then sends it to no LLM. ``summary`` turns a
cell's prepared list into logged metrics, and the pipeline logs test F1 per value of each ``info``
key the mode lists in ``breakdown`` (e.g. per tier).

Adding a mode touches its own module and its config file only: the config's ``strategy`` is the
class's import path, and ``label`` is the method label the report uses (e.g. "HyGRAIL-Auto").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from hygrail.kg import KG, DataError, Relation

SKIPS = ("reject", "gnn")


@dataclass(frozen=True)
class Hypothesis:
    """A typed candidate pair (KG node ids, oriented as the relation) and its GNN score, if any."""

    src: int
    dst: int
    score: float | None = None


@dataclass
class Prepared:
    """What the reviewer reads about one hypothesis, and what a table or a person needs about it."""

    statement: str  # the hypothesis sentence (the relation's template)
    text: str | None  # the reviewer's evidence text; None selects the no-evidence prompt
    structured: dict[str, Any] | None = None  # JSON-able structured evidence
    info: dict[str, Any] = field(default_factory=dict)  # per-hypothesis columns (flat, scalar values)
    fallback: bool = False  # an LLM pre-stage failed and template evidence was used instead
    skip: str | None = None  # decided without review: "reject" (0) or "gnn" (the GNN-only decision)


class Chat(Protocol):
    # who the reviewer is ("an expert clinical geneticist": review.prompts.domain_words of the schema's
    # ``domain:``); a client without it gets the paper's (``expert_words``)
    expert: str

    def chat_many(self, conversations: Sequence[list[dict]], max_tokens: int | None = None) -> list[str | None]: ...


def expert_words(llm) -> str:
    """Who a pre-stage prompt addresses: the reviewer's own role, so an HPO run's pre-stages do not
    ask a materials scientist about diseases; the paper's (review.prompts.MATERIALS) without one."""
    return getattr(llm, "expert", None) or "an expert materials scientist"


class EvidenceMode:
    """Base class: subclasses implement ``prepare`` and may extend ``summary``."""

    uses_llm = False  # whether prepare() makes LLM calls of its own (pre-stages)
    breakdown: tuple[str, ...] = ()  # info keys whose values get their own test F1 in the cell's metrics

    def __init__(self, cfg: Mapping, templates: Mapping, calibrated: Mapping[str, float] | None = None):
        # calibrated: the cell's validation-calibrated triage quantities (gnn_threshold, band_low,
        # band_high) that evidence rules may name, e.g. the GNN-score contradiction cuts
        self.cfg, self.templates = dict(cfg), dict(templates)
        self.calibrated = dict(calibrated) if calibrated else None

    @property
    def name(self) -> str:
        return str(self.cfg.get("mode"))

    def statement(self, graph: KG, h: Hypothesis) -> str:
        return self.templates["hypothesis"].format(left=graph.label(h.src), right=graph.label(h.dst))

    def prepare(self, graph: KG, relation: Relation, hyps: Sequence[Hypothesis], llm: Chat | None) -> list[Prepared]:
        raise NotImplementedError

    def summary(self, prepared: Sequence[Prepared]) -> dict[str, float]:
        """Per-cell metrics over the prepared hypotheses (``evidence_*``)."""
        return {"evidence_fallbacks": float(sum(p.fallback for p in prepared)),
                "evidence_skipped": float(sum(p.skip is not None for p in prepared))}


def load_mode(cfg: Mapping, templates: Mapping, calibrated: Mapping[str, float] | None = None) -> EvidenceMode:
    """The evidence mode a ``conf/evidence/*.yaml`` (or KG-FM's ``method.context``) names;
    ``calibrated``: the cell's validation-calibrated triage quantities (``EvidenceMode.__init__``)."""
    from hydra.utils import get_class

    path = cfg.get("strategy")
    try:
        cls = get_class(str(path))
    except Exception:  # ImportError, AttributeError, or Hydra's wrapper of them
        raise DataError(f"evidence.strategy={path!r} (mode {cfg.get('mode')!r}): expected the import path of an "
                        f"EvidenceMode class, e.g. hygrail.evidence.naturalize.Template") from None
    if not (isinstance(cls, type) and issubclass(cls, EvidenceMode)):
        raise DataError(f"evidence.strategy={path!r} is not an EvidenceMode class")
    return cls(cfg, templates, calibrated)
