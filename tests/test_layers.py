"""The package's floors (hygrail/__init__.py): no import runs uphill and the import graph has no
circle. Every import counts, module-level or inside a function."""

import ast
from pathlib import Path

import pytest

from hygrail import LAYERS

PACKAGE = Path(__file__).resolve().parents[1] / "hygrail"


def module_name(path: Path) -> str:
    parts = ("hygrail", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def floor(module: str) -> int:
    match = max((k for k in LAYERS if module == k or module.startswith(k + ".")), key=len, default=None)
    if match is None:
        raise AssertionError(f"{module} has no floor in hygrail.LAYERS (hygrail/__init__.py): give it one")
    return LAYERS[match]


def imports(module: str) -> list[tuple[str, int]]:
    """(imported hygrail module, line) for every import in ``module``; ``from pkg import sub``
    counts as an import of the submodule when ``sub`` is one."""
    path = MODULES[module]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.startswith("hygrail")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hygrail") and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.append((sub if sub in MODULES else node.module, node.lineno))
    return [(m, line) for m, line in out if m != "hygrail"]


def test_every_module_has_a_floor():
    for module in MODULES:
        if module != "hygrail":
            floor(module)


def uphill() -> list[str]:
    """One line per import against the floors: file, line, both modules and their floors."""
    out = []
    for module, path in MODULES.items():
        if module == "hygrail":
            continue
        for target, line in imports(module):
            if floor(target) > floor(module):
                out.append(f"{path.name if not path.is_relative_to(PACKAGE) else path.relative_to(PACKAGE.parent)}:{line}: "
                           f"{module} (floor {floor(module)}) imports {target} (floor {floor(target)}); move the shared "
                           f"concept down or the import up")
    return out


def test_no_import_runs_uphill():
    found = uphill()
    assert not found, "imports against the data flow (hygrail/__init__.py):\n" + "\n".join(found)


def test_the_import_graph_has_no_circle():
    # a package's __init__ may lazily load its own submodules (data.load_kg picks a loader): not an edge back
    graph = {m: {t for t, _ in imports(m) if t in MODULES and not (m == t.rsplit(".", 1)[0] and MODULES[m].name == "__init__.py")}
             for m in MODULES}
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                cycle = stack[stack.index(t):] + [t]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_check_names_the_offending_import(tmp_path, monkeypatch):
    """A newcomer's uphill import gets a message naming the file, the line and both floors."""
    source = (PACKAGE / "kg.py").read_text() + "\n\ndef _x():\n    from hygrail.pipeline import run_cell\n"
    (tmp_path / "kg.py").write_text(source)
    monkeypatch.setitem(MODULES, "hygrail.kg", tmp_path / "kg.py")
    line = source.count("\n")
    assert uphill() == [f"kg.py:{line}: hygrail.kg (floor 0) imports hygrail.pipeline (floor 7); move the shared "
                        f"concept down or the import up"]


def test_the_sweep_help_names_every_room():
    """``python -m hygrail.sweep --help`` prints conf/config.yaml's help template: it names each
    floor's rooms as hygrail.LAYERS has them."""
    from omegaconf import OmegaConf

    template = OmegaConf.load(PACKAGE.parent / "conf/config.yaml").hydra.help.template
    missing = [k for k in LAYERS if k.removeprefix("hygrail.") not in template]
    assert not missing, f"conf/config.yaml hydra.help.template does not name {missing}"
