"""What a chemist asks the recipes page for (issue #56): the targets as typed, read as materials of the
recipes or as compositions, each answered or reported on its own.

A value names a recorded material when it is one of the library's names (exactly, else
case-insensitively: ``batio3``, ``barium titanate``), and otherwise is read as a formula
(``data.chemistry.amounts``: ``TiO3Ba``, ``LiNi0.8Mn0.1Co0.1O2``, ``CuSO4·5H2O``) and matched by
composition (``data.recipes.composition_formula``, He et al.'s identity): ``TiO3Ba`` is BaTiO3, and
``LiNi0.8Mn0.1Co0.1O2`` finds the recorded ``LiNi0.8Co0.1Mn0.1O2``. Every recorded material of that
composition answers it (``Asked.materials``: the best documented first), so a name the recipes spell
another way still gets its recorded sets. A formula no recorded material has is a new composition,
ranked from its elements alone (He et al.'s unseen target).

A value that is neither, or that reads as something other than what was surely meant (``BaTi03``: the
digit 0 for the letter O), is a ``Problem``: named with its reason on the page and in the terminal,
while the other targets are answered. Two values of one target (``BaTiO3`` and ``TiO3Ba``, or the same
twice) are answered once, the second named as a repeat.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Sequence

from hygrail.data.chemistry import amounts
from hygrail.data.recipes import composition_formula
from hygrail.kg import DataError
from hygrail.recipes.library import Library


@dataclass(frozen=True)
class Asked:
    """A target as asked: what the page calls it, the recorded materials answering it (none: a new
    composition), its elements, how it was matched."""

    name: str
    materials: tuple[str, ...]
    elements: frozenset[str]
    matched: str = ""  # e.g. "by composition: BaTiO3"; "" when named exactly

    @property
    def material(self) -> str | None:
        """The best documented recorded material answering it; None: a new composition."""
        return self.materials[0] if self.materials else None


@dataclass(frozen=True)
class Problem:
    """A value not answered, and why."""

    value: str
    why: str


def resolve(lib: Library, value: str) -> Asked:
    """The target ``value`` names (module docstring); a one-line ``DataError`` when it names none."""
    folded = [m for m in lib.names if m.casefold() == value.casefold()]
    if value in lib.index or len(folded) == 1:
        m = value if value in lib.index else folded[0]
        others = [x for x in (lib.of_composition(lib.composition[m]) if m in lib.composition else []) if x != m]
        more = (f"by name, with {len(others)} more name{'s' * (len(others) > 1)} of its composition "
                f"({', '.join(others[:2])}{', ...' * (len(others) > 2)})") if others else ""
        return Asked(value, (m, *others), lib.elements[lib.index[m]], more)
    try:
        parsed = amounts(value)
    except ValueError as why:
        close = difflib.get_close_matches(value, lib.names, n=5, cutoff=0.6)
        raise DataError(f"recipes.targets: {value!r} is no material of the recipes"
                        + (f" (closest: {', '.join(close)})" if close else "")
                        + f" and not a formula: {why}") from None
    elements = frozenset(parsed)
    same = lib.of_composition(composition_formula(parsed))
    if same:
        more = f" (and {len(same) - 1} more name{'s' * (len(same) > 2)})" if len(same) > 1 else ""
        return Asked(value, tuple(same), elements, f"by composition: {same[0]}{more}")
    lib.check_elements(elements, f"recipes.targets: {value!r}")
    return Asked(value, (), elements)


def targets(lib: Library, values: Sequence[str]) -> tuple[list[Asked], list[Problem]]:
    """Each value resolved (``resolve``), repeats of one target answered once (module docstring):
    (the targets to answer, in the order asked; the values not answered, with why)."""
    asked: list[Asked] = []
    problems: list[Problem] = []
    first: dict[str, str] = {}  # a target's key -> the value that asked it first
    for value in values:
        try:
            a = resolve(lib, value)
        except DataError as e:
            problems.append(Problem(value, str(e).removeprefix("recipes.targets: ")))
            continue
        key = a.material or composition_formula(amounts(a.name))
        if key in first:
            problems.append(Problem(value, f"{value!r} is the same target as {first[key]!r}, answered once"))
            continue
        first[key] = value
        asked.append(a)
    return asked, problems


def itself(lib: Library, a: Asked) -> frozenset[str]:
    """The precursors that are the target itself (no synthesis of it): those written as its name or as
    any of its materials' names, and its composition's identity."""
    out = {a.name} | lib.naming(a.name)
    for m in a.materials:
        out |= {m} | lib.naming(m) | ({lib.composition[m]} if m in lib.composition else set())
    try:
        out.add(composition_formula(amounts(a.name)))
    except ValueError:  # a material's name that is no formula (``barium titanate``): its materials' suffice
        pass
    return frozenset(out)
