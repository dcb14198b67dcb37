"""Starter configs for a CSV KG of your own: ``python -m hygrail.data.init PATH [--out DIR] [--name NAME]``.

A KG with other node types than MatKG's needs a schema, a data config that selects it, and one
relation file of evidence templates per hypothesis relation. Written by hand, that meant guessing
Hydra's group syntax (``data/schema=x``, not ``data.schema=x``) and editing the package's own
``conf/``. This reads ``PATH/nodes.csv`` and ``PATH/edges.csv`` (the csv loader's formats, with all
its checks: hygrail/data/csv.py) and writes a config folder outside the package (default
``PATH/conf``) for Hydra's ``--config-dir``:

- ``data/<name>.yaml``: loader csv, PATH (absolute), schema <name>.
- ``data/schema/<name>.yaml``: the node types in order of first appearance, display names, one
  relation per observed type pair that the default split (conf/config.yaml: 7:1:2, 20 negatives
  per positive) can be drawn for (the others as comments saying why, since ``task=stats`` splits
  every relation of the schema), and per node type every edge type touching it as its evidence.
- ``relation/<src>_<dst>.yaml`` per relation: the package's paper Table 9 file
  (conf/relation/chm_apl.yaml) with its materials wording replaced by generic wording to edit.

It prints the sweep commands that use them. Hydra finds a config in the package's ``conf/`` before
one under ``--config-dir``, so a name the package already has would be silently shadowed: a data
name like that is refused, a relation like that gets the data name as a prefix. Existing files are
never overwritten without ``--force``.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path

import polars as pl
from omegaconf import OmegaConf

from hygrail.data import CONF
from hygrail.data.csv import NODE_COLUMNS, ROW, collect, editor_lines, empty, load_csv, scan_checked
from hygrail.data.split import candidate_pairs, split_sizes
from hygrail.kg import NO_YEAR, DataError, Relation, Schema

# What chm_apl.yaml says in materials terms, said generically ({src}/{dst}: the display names).
GENERIC = {
    "hypothesis": "The {src} {{left}} is related to the {dst} {{right}}.",
    "left_features": {
        "well_established": "{{entity}} is strongly associated with {{feature}} (norm={{norm:.2f}}, count={{count:.0f}}), "
                            "representing a well-established and defining trait",
        "promising": "{{entity}} shows a notable association with {{feature}} (norm={{norm:.2f}}, count={{count:.0f}}), "
                     "suggesting a promising but less-explored characteristic",
        "common": "{{entity}} has some association with {{feature}} (norm={{norm:.2f}}, count={{count:.0f}}), though "
                  "many other {src} entities share it",
        "weak": "{{entity}} has a weak association with {{feature}} (norm={{norm:.2f}}, count={{count:.0f}}), providing "
                "limited discriminative evidence",
    },
    "right_features": {
        "well_established": "{{entity}} is strongly associated with {{feature}} (norm={{norm:.2f}}, count={{count:.0f}}), "
                            "a well-documented defining trait",
        "promising": "{{entity}} shows a notable association with {{feature}} (norm={{norm:.2f}}, count={{count:.0f}}), "
                     "an emerging but less-explored trait",
        "common": "{{entity}} has some association with {{feature}} (norm={{norm:.2f}}, count={{count:.0f}}), though "
                  "many other {dst} entities share it",
        "weak": "{{entity}} has a weak association with {{feature}} (norm={{norm:.2f}}, count={{count:.0f}}), suggesting "
                "peripheral relevance",
    },
    "paths": {
        "strong": "A strong link exists: {{left}} is closely related to {{intermediate}}, which is directly related to "
                  "{{right}} (path score={{score:.3f}}, indicating robust evidence)",
        "moderate": "A plausible connection exists: {{left}} relates to {{intermediate}}, which relates to {{right}} "
                    "(path score={{score:.3f}}, suggesting moderate evidence)",
        "weak": "A weak connection exists: {{left}} is linked to {{right}} via {{intermediate}} (path score={{score:.3f}}), "
                "but this provides limited support",
    },
}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m hygrail.data.init", description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="folder holding nodes.csv and edges.csv")
    parser.add_argument("--out", type=Path, help="config folder to write (default PATH/conf), for --config-dir")
    parser.add_argument("--name", help="data and schema config name (default: PATH's folder name)")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    args = parser.parse_args(argv)
    try:
        print(init(args.path, args.out, args.name, args.force))
    except DataError as e:
        sys.exit(f"error: {e}")


def init(path: Path, out: Path | None = None, name: str | None = None, force: bool = False) -> str:
    """Write the configs (module docstring); return what to tell the user, commands included."""
    path = Path(path).resolve()
    out = (Path(out) if out else path / "conf").resolve()
    name = name or slug(path.name) or "mykg"
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise DataError(f"--name {name!r}: expected lowercase letters, digits and '_' (a Hydra option name)")
    for group in ("data", "data/schema"):
        if (CONF / group / f"{name}.yaml").exists():
            raise DataError(f"--name {name}: the package has {group}/{name}.yaml, which Hydra would pick instead "
                            f"of yours; pass another --name")  # fmt: skip
    nodes, edges = path / "nodes.csv", path / "edges.csv"
    types = node_types(nodes)
    kg = load_csv(nodes, edges, Schema.from_config({"node_types": types}))
    split = OmegaConf.load(CONF / "config.yaml").split
    ratios, neg_ratio = tuple(split.ratios), int(split.neg_ratio)
    rule = f"the default split ({':'.join(f'{r:g}' for r in ratios)}, {neg_ratio} negatives per positive)"

    dated = (pl.col("year") != NO_YEAR).sum().alias("dated")
    counts = {t: (n, d) for t, n, d in kg.edges.group_by("type").agg(pl.len(), dated).iter_rows()}
    order = sorted(counts, key=lambda t: tuple(types.index(x) for x in t.split("-")))
    relations, left_out = {}, {}
    for etype in order:
        src, dst = etype.split("-")
        rel = f"{slug(src)}_{slug(dst)}"
        if (CONF / "relation" / f"{rel}.yaml").exists():
            rel = f"{name}_{rel}"  # the package's file of that name would win (module docstring)
        if rel in relations or rel in left_out:
            raise DataError(f"{nodes}: node types {src} and {dst} give the relation name {rel} twice; rename one type")
        n, n_dated = counts[etype]
        sizes = split_sizes(n, ratios)
        free = candidate_pairs(kg, Relation(rel, src, dst)) - n
        if min(sizes) < 1:
            left_out[rel] = (etype, f"{n} edges: too few for {rule}")
        elif free < neg_ratio * n:
            left_out[rel] = (etype, f"{n} edges but {free} unlinked pairs: too dense for {rule}")
        else:
            relations[rel] = (etype, f"{n} edges, {n_dated} dated")

    display = {t: t.lower().replace("_", " ") for t in types}
    files = {out / "data" / f"{name}.yaml": data_yaml(name, path), out / "data" / "schema" / f"{name}.yaml":
             schema_yaml(path, types, display, order, relations, left_out, rule)}  # fmt: skip
    for rel, (etype, _) in relations.items():
        src, dst = etype.split("-")
        files[out / "relation" / f"{rel}.yaml"] = relation_yaml(rel, name, etype, display[src], display[dst])
    existing = [f for f in files if f.exists()]
    if existing and not force:
        raise DataError(f"{existing[0]} exists ({len(existing)} of the {len(files)} files to write do); "
                        f"pass --force to overwrite them")  # fmt: skip
    for f, text in files.items():
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf-8")
    return report(out, name, files, relations, left_out)


def node_types(nodes: Path) -> list[str]:
    """The node types of nodes.csv in order of first appearance (they fix canonical edge-type names)."""
    lf = scan_checked(nodes, NODE_COLUMNS)
    first = collect(lf.filter(~empty("type")).group_by("type").agg(pl.col(ROW).min()).sort(ROW), nodes)
    if first.height == 0:
        raise DataError(f"{nodes}: no node has a type; expected a type in the type column")
    for t, row in first.iter_rows():
        if "-" in t:
            raise DataError(f"{nodes}: line {editor_lines(nodes, [row])[0]}: node type {t!r} contains '-', which joins "
                            f"the two types of an edge type; expected a type name without '-'")  # fmt: skip
    return first["type"].to_list()


def slug(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_")


def q(value) -> str:
    """A YAML scalar or flow collection: JSON is valid YAML, and quotes type names like NO or ON."""
    return json.dumps(value, ensure_ascii=False)


def data_yaml(name: str, path: Path) -> str:
    return "\n".join([
        f"# {path} as a CSV KG (written by python -m hygrail.data.init); select it with data={name}",
        "defaults:",
        f"  - schema: {name}",
        f"name: {name}",
        "loader: csv",
        f"path: {q(str(path))}",
        "nodes: nodes.csv",
        "edges: edges.csv",
        "subgraph_nodes: null          # a number: a type-preserving subgraph of that many nodes",
        "subgraph_seed: 42",
        "",
    ])  # fmt: skip


def schema_yaml(path: Path, types: list[str], display: dict, order: list[str], relations: dict, left_out: dict,
                rule: str) -> str:
    lines = [
        f"# Schema of {path} (written by python -m hygrail.data.init from nodes.csv and edges.csv); edit freely.",
        f"node_types: {q(types)}   # order fixes canonical edge-type names ({q('-'.join(types[:2]))})",
        "display:        # how evidence texts name each type",
        *(f"  {q(t)}: {q(d)}" for t, d in display.items()),
        "# The reviewer's field in the review prompts (hygrail/review/prompts.py): name yours, e.g. an expert",
        "# pharmacologist / a drug-repurposing knowledge graph / pharmacology / known pharmacology and medicine.",
        "domain:",
        "  expert: an expert scientist",
        "  graph: a knowledge graph mined from the literature",
        "  field: scientific",
        "  knowledge: established scientific knowledge",
        f"# Hypothesis relations: one per observed type pair {rule} can be drawn for;",
        "# task=stats splits every relation listed here.",
        "relations:" + ("" if relations else " {}"),
        *(f"  {rel}: {{src: {q(e.split('-')[0])}, dst: {q(e.split('-')[1])}}}   # {e}: {why}"
          for rel, (e, why) in relations.items()),
        *(f"  # {rel}: {{src: {q(e.split('-')[0])}, dst: {q(e.split('-')[1])}}}   # left out, {why}"
          for rel, (e, why) in left_out.items()),
        "# Edge types that describe a node of each type (paper Table 7): here every edge type touching it.",
        "evidence:",
    ]  # fmt: skip
    for t in types:
        touching = [f"{t}-{b if a == t else a}" for a, b in (e.split("-") for e in order) if t in (a, b)]
        lines.append(f"  {q(t)}: {q(touching)}")
    return "\n".join(lines) + "\n"


def relation_yaml(rel: str, name: str, etype: str, src: str, dst: str) -> str:
    """conf/relation/chm_apl.yaml's templates with ``GENERIC`` wording for the ``src``-``dst`` link."""
    templates = OmegaConf.to_container(OmegaConf.load(CONF / "relation" / "chm_apl.yaml"))["templates"]

    def merge(base: dict, generic: dict) -> dict:
        return {k: merge(v, generic.get(k, {})) if isinstance(v, dict) else
                generic[k].format(src=src, dst=dst) if k in generic else v
                for k, v in base.items()}  # fmt: skip

    def dump(d: dict, indent: str) -> list[str]:
        lines = []
        for k, v in d.items():
            lines += [f"{indent}{k}:", *dump(v, indent + "  ")] if isinstance(v, dict) else [f"{indent}{k}: {q(v)}"]
        return lines

    header = [
        f"# {etype} hypotheses of data={name} (written by python -m hygrail.data.init). Paper App. D.2 Table 9's",
        "# structure with generic wording: reword the hypothesis and the feature and path sentences for what a",
        f"# {src}-{dst} link means. Placeholders as in the package's conf/relation/chm_apl.yaml.",
        f"name: {rel}",
        "templates:",
    ]  # fmt: skip
    return "\n".join(header + dump(merge(templates, GENERIC), "  ")) + "\n"


def report(out: Path, name: str, files: dict, relations: dict, left_out: dict) -> str:
    sweep = f"python -m hygrail.sweep --config-dir {shlex.quote(str(out))} data={name}"
    lines = [f"wrote {len(files)} files under {out}: data/{name}.yaml, data/schema/{name}.yaml, "
             f"{len(relations)} relation/*.yaml"]  # fmt: skip
    lines += [f"  relation {rel}: {e}, {why}" for rel, (e, why) in relations.items()]
    lines += [f"  not a relation: {e}, {why}" for e, why in left_out.values()]
    lines += ["Edit the relation files' wording and the schema's domain (the reviewer's field), then:", f"  {sweep} task=stats"]
    if relations:
        first = next(iter(relations))
        lines.append(f"  {sweep} relation={first} method=gnn_only backbone=rgcn_plus")
        if len(relations) > 1:
            lines.append(f"  {sweep} -m relation={','.join(relations)} method=gnn_only,tsh backbone=rgcn_plus")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
