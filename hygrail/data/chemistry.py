"""Chemistry of a written formula, for the recipes and for discovery's new compositions (issues #36, #56):
reading a formula a person types, judging whether a precursor is a compound at all, and the kind of a
material by its anions.

``amounts``: element symbol -> atoms per formula unit of a formula as a chemist writes it: symbols with
optional amounts (``Li2FeTiO4``, ``LiNi0.8Mn0.1Co0.1O2``), bracketed groups with a multiplier
(``Ca3(PO4)2``) and hydrates or adducts joined by ``·`` (or ``•``, ``∙``, ``*``) or by a ``.`` before water,
each part with an optional leading count (``CuSO4·5H2O``, ``CuSO4.5H2O``, ``FeC2O4·2H2O``; the recipes'
own output writes ``·``). A ``.`` between digits is otherwise a decimal point (``Ni0.8``), so
``YBa2Cu3O6.5`` keeps its 6.5 oxygens. A formula that reads as something else than what was meant is
refused, naming the token: an amount with a leading zero (``BaTi03``: the digit 0 for the letter O would
read as BaTi3) with the spelling that was probably meant, a count that is no number (``·xH2O``).

``charge_balanced``: whether a precursor admits charge-balanced oxidation states (pymatgen's
``Composition.oxi_state_guesses``), the test a chemist applies at a glance to ``Li2O3`` or ``Ba2CO3``
(text-mining slips for Li2O2 / Li2CO3 and BaCO3, recorded 10 and 31 times in the recipes). The check
asks pymatgen for every element's ICSD and common oxidation states, and all its states where the ICSD
lists none (pymatgen's default search reads the ICSD list alone: it lacks Cl7+ in HClO4 and any state of
Np, so NpO2 failed), with two constraints the default search does not know:

- O is oxide (-2); peroxide (-1) or superoxide (-1/2) only in a precursor without C (BaO2, Li2O2,
  H2O2, KO2 are recorded precursors; with them anywhere, LiCO3 balanced as Li+ C3+ O2- O- O-);
- C without H is a carbonate (+4), an oxalate (+3) or a carbide (-4) (the ICSD list's C2+ balanced
  Ba2CO3).

Judged: precursors holding O or a halogen (oxides, salts, hydroxides, hydrates), where formal
oxidation states describe the compound. Not judged (``None``): an organic precursor (C with H: its C
atoms take any state from -4 to +4, so nearly every formula balances), a boride, silicide, carbide,
nitride, chalcogenide or alloy (ZrB2, MoSi2, Cu6Sn5: metallic or covalent bonding, no formal balance
to check), a formula of more than ``MAX_ATOMS`` atoms (nonstoichiometric phases written as
``Mn1000O1839``; pymatgen's search is combinatorial in the atoms, 3 s and more past ~40), and a
formula pymatgen cannot read. On the 2019-12-03 release's 1,810 precursor identities: 54 judged
unbalanced (155 recipe uses; by hand all slips but SiO: Ba2CO3, Sr2CO3, Li2O3, Ca2CO3, IrO6, Al2O2,
Na2O3, CeO, Li7OH, Y3O3, ...); experiments/recipes_sets.md lists them.

``kind``: the kind of material its anions make it (oxygen-bearing, chalcogenide, halide, pnictide /
carbide / boride / silicide, intermetallic, the first that applies), which decides whether a ``metallic`` precursor (a bare
element or an alloy) is plausible for it (``recipes.library``: measured per kind on the library);
``GASES`` are never a precursor as bare elements (O2, N2, H2, Cl2 are the firing atmosphere, not a
weighed powder). A mixed-anion material holding O (LaFeAsO, Bi2O2Se) is oxygen-bearing here, though
its recipes often use metallic precursors (FeAs, Se): the kinds are read from the elements alone.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Mapping

ELEMENTS = frozenset(
    "H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr Rb Sr Y "
    "Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm Yb Lu Hf Ta W Re "
    "Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No Lr Rf Db Sg Bh Hs Mt Ds Rg "
    "Cn Nh Fl Mc Lv Ts Og".split()
)
GASES = frozenset("H N O F Cl He Ne Ar Kr Xe Rn".split())
NON_METALS = frozenset("H He C N O F Ne P S Cl Ar Se Br Kr I Xe At Rn Ts Og".split())  # pymatgen's is_metal/is_metalloid
HALOGENS = frozenset("F Cl Br I".split())
CHALCOGENS = frozenset("S Se Te".split())
PNICTOGENS_ETC = frozenset("N P As C B Si".split())
KINDS = ("oxygen-bearing", "chalcogenide", "halide", "pnictide, carbide, boride or silicide", "intermetallic")
MAX_ATOMS = 40  # a larger formula is not judged (module docstring)

_TOKEN = re.compile(r"([A-Z][a-z]?)|(\d+(?:\.\d+)?|\.\d+)|([(\[])|([)\]])")
# a part joined by ``·`` and its kin always; by ``.`` only before a count of water (``CuSO4.5H2O``)
_JOIN = re.compile(r"\s*[·•∙*]\s*|\.(?=\s*(?:\d+|[a-z]|\([a-z]\))?\s*H2O(?:\b|$))")
_COUNT = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)?\s*")


def amounts(text: str) -> dict[str, float]:
    """Element symbol -> atoms per formula unit of ``text`` (module docstring); ValueError naming the
    offending token and its character (1-based) when it is not a formula of chemical elements, or reads
    as something other than what was surely meant."""
    s = text.strip()
    if not s:
        raise ValueError("it is empty")
    total: dict[str, float] = {}
    start = 0
    cuts = list(_JOIN.finditer(s))
    for cut in [*cuts, None]:
        end = cut.start() if cut is not None else len(s)
        part_start = start
        m = _COUNT.match(s, start) if cuts else None  # a count leads a part of an adduct only (5H2O, 0.5Li2S)
        times = float(m.group(1)) if m and m.group(1) else 1.0
        if m and m.group(1) and times <= 0:
            raise ValueError(f"{m.group(1)!r} (character {start + 1}) counts nothing")
        for e, n in _part(s, m.end() if m else start, end, part_start).items():
            total[e] = total.get(e, 0.0) + times * n
        start = cut.end() if cut is not None else end
    return {e: round(n, 9) for e, n in total.items()}  # 1 + (0.1 - 1) is 0.09999999999999998


def _part(s: str, at: int, end: int, part_start: int) -> dict[str, float]:
    """One part of a formula, ``s[at:end]`` (``amounts``)."""
    stack: list[dict[str, float]] = [{}]
    last = None  # what an amount multiplies: ("element", symbol) or ("group", amounts)
    if at >= end:
        raise ValueError(f"the part at character {part_start + 1} names no element")
    while at < end:
        m = _TOKEN.match(s, at, end)
        if m is None:
            bad = re.match(r"[a-z]+|.", s[at:end]).group(0)
            what = " (a count of water must be a number: CuSO4·5H2O)" if re.fullmatch(r"[a-z]", bad) else ""
            raise ValueError(f"{bad!r} (character {at + 1}) is no element symbol, amount or bracket{what}")
        symbol, amount, open_, close = m.groups()
        if symbol is not None:
            if symbol not in ELEMENTS:
                raise ValueError(f"{symbol!r} (character {at + 1}) is not a chemical element")
            stack[-1][symbol] = stack[-1].get(symbol, 0.0) + 1.0
            last = ("element", symbol)
        elif amount is not None:
            if last is None:
                raise ValueError(f"{amount!r} (character {at + 1}) is an amount of nothing")
            if amount.startswith("0") and not amount.startswith("0."):  # 03, 0: the letter O meant?
                meant = s[:at] + "O" + s[at + 1:]
                raise ValueError(f"{amount!r} (character {at + 1}) is an amount with a leading zero; the letter O "
                                 f"was probably meant: {meant.strip()}")
            if float(amount) <= 0:
                raise ValueError(f"{amount!r} (character {at + 1}) is an amount of nothing")
            kind, what = last
            if kind == "element":
                stack[-1][what] += float(amount) - 1.0
            else:
                for e, n in what.items():
                    stack[-1][e] += n * (float(amount) - 1.0)
            last = None
        elif open_ is not None:
            stack.append({})
            last = None
        else:
            if len(stack) == 1:
                raise ValueError(f"{close!r} (character {at + 1}) closes no bracket")
            group = stack.pop()
            for e, n in group.items():
                stack[-1][e] = stack[-1].get(e, 0.0) + n
            last = ("group", group)
        at = m.end()
    if len(stack) > 1:
        raise ValueError("a bracket is never closed")
    if not stack[0]:
        raise ValueError(f"the part at character {part_start + 1} names no element")
    return stack[0]


@lru_cache(maxsize=None)
def charge_balanced(formula: str) -> bool | None:
    """Whether a precursor of this composition formula admits charge-balanced oxidation states (module
    docstring); None where it is not judged. Cached per formula: one call takes up to seconds."""
    try:
        from pymatgen.core import Composition, Element

        comp = Composition(formula)
        symbols = {el.symbol for el in comp.elements}
        if not symbols & (HALOGENS | {"O"}) or {"C", "H"} <= symbols:
            return None
        comp = comp.reduced_composition
        if comp.num_atoms > MAX_ATOMS or any(not float(a).is_integer() for a in comp.values()):
            return None
        states = {s: sorted(set(Element(s).icsd_oxidation_states) | set(Element(s).common_oxidation_states)
                            | (set() if Element(s).icsd_oxidation_states else set(Element(s).oxidation_states)))
                  for s in symbols}
    except (ValueError, KeyError):  # pymatgen cannot read it
        return None
    if "C" in symbols:
        states["C"] = [-4, 3, 4]
    oxygen = [[-2]] + ([[-2, -1], [-2, -0.5]] if "C" not in symbols else [])
    return any(comp.oxi_state_guesses(oxi_states_override=states | {"O": o}) for o in oxygen) if "O" in symbols \
        else bool(comp.oxi_state_guesses(oxi_states_override=states))


def metallic(elements: Mapping | frozenset | set) -> bool:
    """A bare element other than a gas, or an alloy (metals and metalloids only): ``Bi``, ``S``, ``NiTi``,
    and the recipes' slips ``BaCo3`` (BaCO3 with cobalt for C O) and ``BaCu3``."""
    els = set(elements)
    return (len(els) == 1 and not els & GASES) or (len(els) > 1 and not els & NON_METALS)


def kind(elements: Mapping | frozenset | set) -> str:
    """The kind of a material of ``elements`` by its anions (``KINDS``)."""
    els = set(elements)
    if "O" in els:
        return KINDS[0]
    if els & CHALCOGENS:  # before the halogens: a thiohalide (Li6PS5Cl) is made like a sulfide
        return KINDS[1]
    if els & HALOGENS:
        return KINDS[2]
    if els & PNICTOGENS_ETC:
        return KINDS[3]
    return KINDS[4]
