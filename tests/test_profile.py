"""evidence=profile (hygrail/evidence/profile.py, issue #37): what the small judge reads about "disease X
has clinical feature Y", checked value by value on a hand-made HPO-like KG, each part switched off
alone, and the prompt-token budget."""

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp
from omegaconf import OmegaConf

from hygrail.evidence.mode import Hypothesis, load_mode
from hygrail.evidence.profile import estimate_tokens
from hygrail.kg import KG, DataError, Schema

from conftest import CONF, relation_templates

# is_a (child, parent): an eye branch and a heart branch under the root
IS_A = [("Abnormality of the eye", "Phenotypic abnormality"), ("Cataract", "Abnormality of the eye"),
        ("Glaucoma", "Abnormality of the eye"), ("Juvenile cataract", "Cataract"),
        ("Juvenile glaucoma", "Glaucoma"), ("Abnormality of the heart", "Phenotypic abnormality"),
        ("Atrial septal defect", "Abnormality of the heart")]
ANNOTATIONS = {
    "D0": ["Juvenile cataract", "Cataract", "Atrial septal defect", "Abnormality of the eye"],  # asked about Glaucoma
    "D1": ["Cataract", "Juvenile cataract", "Glaucoma"],  # shares 2 with D0, has Glaucoma
    "D2": ["Cataract", "Atrial septal defect", "Juvenile cataract"],  # shares 3, has Glaucoma's sibling Cataract
    "D3": ["Atrial septal defect"],  # shares 1 (Jaccard 1/4), has neither
    "D4": ["Juvenile glaucoma", "Cataract"],  # shares 1 (Jaccard 1/5), has a subtype of Glaucoma
    "D5": ["Abnormality of the heart"],  # shares nothing
}


def hpo_like_kg(annotations=ANNOTATIONS, is_a=IS_A) -> KG:
    schema = Schema.from_config(OmegaConf.to_container(OmegaConf.load(CONF / "data/schema/hpo.yaml")))
    terms = sorted({t for pair in is_a for t in pair} | {t for ts in annotations.values() for t in ts})
    names = list(annotations) + terms
    types = ["Disease"] * len(annotations) + ["Phenotype"] * len(terms)
    ids = {n: i for i, n in enumerate(names)}
    pairs = [(ids[d], ids[t], "Disease-Phenotype") for d, ts in annotations.items() for t in ts]
    pairs += [(ids[c], ids[p], "Phenotype-Phenotype") for c, p in is_a]
    edges = pl.DataFrame({"u": [a for a, _, _ in pairs], "v": [b for _, b, _ in pairs], "type": [e for *_, e in pairs],
                          "count": [1] * len(pairs), "year": [2010] * len(pairs)})
    parent = {}
    for c, p in is_a:
        parent.setdefault(c, []).append(p)

    def up(t):
        return {a for p in parent.get(t, []) for a in {p} | up(p)}

    anc = [(ids[t], ids[a]) for t in terms for a in up(t)]
    ancestors = sp.csr_matrix((np.ones(len(anc), dtype=bool), tuple(zip(*anc))), shape=(len(names),) * 2)
    return KG(schema, pl.DataFrame({"name": names, "type": types}), edges, ancestors=ancestors)


def profile(**changes):
    cfg = OmegaConf.to_container(OmegaConf.load(CONF / "evidence/profile.yaml")) | changes
    return load_mode(cfg, relation_templates("hpo_dis_phe"))


def prepare(mode, kg, left="D0", right="Glaucoma"):
    h = Hypothesis(kg.node_id("Disease", left), kg.node_id("Phenotype", right), 0.4)
    return mode.prepare(kg, kg.schema.relation("hpo_dis_phe"), [h], None)[0]


def test_the_full_profile_says_each_fact_of_the_hand_made_kg():
    kg = hpo_like_kg()
    p = prepare(profile(similar=4), kg)
    assert p.statement == "The disease D0 has the clinical feature Glaucoma."
    assert p.text.split("\n") == [
        # depth (ancestors) first: Juvenile cataract 3; Atrial septal defect and Cataract 2, ASD annotated
        # by 3 diseases, Cataract by 4 (fewer first); Abnormality of the eye 1
        "D0 has 4 known clinical features, most specific first: Juvenile cataract; Atrial septal defect; "
        "Cataract; Abnormality of the eye.",
        "Glaucoma is a kind of: Abnormality of the eye.",  # the root is an ancestor of it, not its parent
        "Among the disease's known clinical features, broader than Glaucoma: Abnormality of the eye. "
        "Among the disease's known clinical features, siblings of Glaucoma (same parent): Cataract.",
        # most shared first; the two sharing one by Jaccard (D3 1/4 before D4 1/5); D5 shares nothing
        "Similar diseases (shared clinical features), and Glaucoma: D2 (3): not recorded, has sibling Cataract; "
        "D1 (2): has it; D3 (1): not recorded; D4 (1): has it, as Juvenile glaucoma.",
    ]
    assert p.structured["similar"][0] == {"name": "D2", "shared": 3, "status": "sibling", "via": "Cataract"}
    assert p.info["profile_features"] == 4 and p.info["profile_siblings"] == 1 and p.info["profile_broader"] == 1
    assert p.info["profile_similar_with"] == 2  # D1 and D4


def test_each_part_switches_off_alone():
    kg = hpo_like_kg()
    full = prepare(profile(), kg).text.split("\n")
    assert len(full) == 4 and full[3].count("): ") == 3  # similar: 3 by default
    assert prepare(profile(features=0), kg).text.split("\n") == full[1:]
    assert prepare(profile(ontology=False), kg).text.split("\n") == [full[0], full[3]]
    assert prepare(profile(similar=0), kg).text.split("\n") == full[:3]


def test_a_disease_without_known_features_gets_the_candidates_place_only():
    kg = hpo_like_kg({**ANNOTATIONS, "D6": ["Cataract"]})
    p = prepare(profile(), kg, left="D6", right="Cataract")  # its one feature is the question itself
    assert p.text.split("\n") == ["D6 has no other known clinical features.", "Cataract is a kind of: Abnormality of the eye."]


def test_the_text_stays_within_the_token_budget_and_counts_what_it_leaves_out():
    many = [f"Very long and remarkably specific clinical abnormality number {i}" for i in range(60)]
    is_a = IS_A + [(t, "Abnormality of the heart") for t in many]
    ann = {"D0": many, **{f"Similar disease with a long name {k}": many[k:k + 30] + ["Glaucoma"] for k in range(5)}}
    kg = hpo_like_kg(ann, is_a)
    p = prepare(profile(features=50), kg)
    assert p.info["profile_tokens_est"] <= 400
    assert estimate_tokens(f"Hypothesis: {p.statement}\nEvidence:\n{p.text}", 3.0) == p.info["profile_tokens_est"]
    assert 3 <= p.info["profile_features_shown"] < 50
    assert f"and {60 - p.info['profile_features_shown']} more." in p.text
    assert "Similar diseases" in p.text  # the neighbours survive the cut; the feature list shrank first
    tight = prepare(profile(features=50, max_tokens=120), kg)
    assert tight.info["profile_tokens_est"] <= 120


def test_bad_options_are_named():
    with pytest.raises(DataError, match="evidence.similar"):
        profile(similar=-1)
    kg = hpo_like_kg()
    flat = KG(kg.schema, kg.nodes.select("name", "type"), kg.edges)  # no ontology
    with pytest.raises(DataError, match="evidence.ontology=false"):
        prepare(profile(), flat)
    assert "kind of" not in prepare(profile(ontology=False), flat).text
