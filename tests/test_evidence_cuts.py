"""No test data in evidence (issue #14, item 3): every cut that shapes the evidence text comes from
the split's training graph, so val/test labels and the sampled negatives cannot move it.

On the 3,000-node synthetic MatKG (CHM-APL): the split's val/test labels permuted, or its test
negatives resampled, leave every cut and the structured evidence + template text of the same
hypotheses unchanged; a different training graph (another split seed) does change the cuts, so the
comparison has the power to fail.
"""

import numpy as np
import polars as pl
import pytest
from omegaconf import OmegaConf

from hygrail.data import data_config, load_kg
from hygrail.data.split import Split, sample_unlinked, temporal_split
from hygrail.evidence.naturalize import render
from hygrail.evidence.retrieve import evidence_cuts, retrieve

from conftest import CONF

EVIDENCE = OmegaConf.to_container(OmegaConf.load(CONF / "evidence/template.yaml"))
EVIDENCE["strength"]["calibration_pairs"] = 60  # < CHM-APL's 136 training edges: the sample is exercised too
TEMPLATES = OmegaConf.to_container(OmegaConf.load(CONF / "relation/chm_apl.yaml"))["templates"]


@pytest.fixture(scope="module")
def kg():
    return load_kg(data_config())


@pytest.fixture(scope="module")
def base(kg):
    return temporal_split(kg, kg.schema.relation("chm_apl"))


def same_training_graph(kg, split: Split, pairs: pl.DataFrame) -> Split:
    """A split with other val/test pairs or labels over a freshly built copy of ``split``'s training
    graph (a new object, so no per-graph cache can carry a result over)."""
    held = kg.relation_edges(split.relation).join(
        split.pairs.filter((pl.col("label") == 1) & (pl.col("split") != "train")), on=["src", "dst"]
    )["edge_id"]
    graph = kg.without_edges(held.to_numpy())
    assert graph is not split.train_graph and graph.edges.equals(split.train_graph.edges)
    return Split(split.relation, pairs, graph)


def permuted_labels(kg, split: Split) -> Split:
    """Labels shuffled within val and within test (positives become negatives and back)."""
    rng = np.random.default_rng(1)
    label, part = split.pairs["label"].to_numpy().copy(), split.pairs["split"].to_numpy()
    for name in ("val", "test"):
        idx = np.flatnonzero(part == name)
        label[idx] = rng.permutation(label[idx])
    return same_training_graph(kg, split, split.pairs.with_columns(pl.Series("label", label)))


def resampled_test_negatives(kg, split: Split) -> Split:
    rel = split.relation
    keep = split.pairs.filter(~((pl.col("split") == "test") & (pl.col("label") == 0)))
    n = split.pairs.height - keep.height
    src, dst = sample_unlinked(
        kg, kg.nodes_of_type(rel.src), kg.nodes_of_type(rel.dst), n, np.random.default_rng(99), rel,
        kg.relation_edges(rel).height,
    )  # fmt: skip
    neg = pl.DataFrame({"split": "test", "src": src, "dst": dst, "label": np.zeros(n, np.int8), "year": np.full(n, -1, np.int32)})
    pairs = pl.concat([keep, neg], how="vertical_relaxed")
    return same_training_graph(kg, split, pairs)


def evidence_of(split: Split, hypotheses) -> tuple[dict, list, list[str]]:
    """What the reviewing stage derives from a split: the cuts, the structured evidence, the text."""
    graph, rel = split.train_graph, split.relation
    cuts = evidence_cuts(graph, rel, EVIDENCE)
    evs = [retrieve(graph, u, v, rel, EVIDENCE) for u, v in hypotheses]
    return cuts, [ev.to_dict() for ev in evs], [render(ev, "template", TEMPLATES, None, EVIDENCE) for ev in evs]


def test_val_test_labels_and_negatives_change_no_cut_and_no_evidence(kg, base):
    held = base.pairs.filter(pl.col("split") != "train")
    # every held-out positive and one negative in eight: 58 + ~145 hypotheses
    pick = held.filter((pl.col("label") == 1) | (pl.int_range(pl.len()) % 8 == 0))
    hypotheses = list(pick.select("src", "dst").iter_rows())
    cuts, evs, texts = evidence_of(base, hypotheses)
    assert cuts.calibration_pairs == 60 and base.counts()["train"]["pos"] == 136
    for variant in (permuted_labels(kg, base), resampled_test_negatives(kg, base)):
        assert not variant.pairs.equals(base.pairs)
        other_cuts, other_evs, other_texts = evidence_of(variant, hypotheses)
        assert other_cuts == cuts
        assert other_evs == evs
        assert other_texts == texts

    # Power: another training graph (split seed 7 holds out other edges) moves the cuts.
    moved = evidence_cuts(temporal_split(kg, base.relation, seed=7).train_graph, base.relation, EVIDENCE)
    assert (moved.strong, moved.moderate) != (cuts.strong, cuts.moderate)


def test_variants_really_change_what_a_label_peeking_rule_would_see(kg, base):
    permuted = permuted_labels(kg, base)
    resampled = resampled_test_negatives(kg, base)
    for name in ("val", "test"):
        assert not permuted.part(name)["label"].equals(base.part(name)["label"])
        assert permuted.part(name)["label"].sum() == base.part(name)["label"].sum()
    assert resampled.counts() == base.counts()
    assert set(resampled.part("test")["src"].to_list()) != set(base.part("test")["src"].to_list())
