"""Materials-science vocabulary of the synthetic MatKG: real names, grouped by research topic.

Each topic lists genuine entity names per MatKG node type (CHM material, PRO property, APL
application, SMT synthesis method, DSC descriptor, CMT characterization method, SPL
symmetry/phase label), most canonical first, so that the links the generator plants inside a topic
are ones a materials scientist (or an LLM) would find plausible. A name listed under two topics is
one entity belonging to both. ``GENERIC`` names belong to no topic: they are the hubs ("Structure",
"XRD", "Nanoparticles") that co-occur with everything. When a type needs more nodes than the
vocabulary holds, ``derive_names`` extends it with realistic variants ("Nb-doped LiFePO4",
"In situ XRD", "Ionic conductivity at high temperature") that inherit their base name's topics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

TYPES = ("CHM", "PRO", "APL", "SMT", "DSC", "CMT", "SPL")
MAX_TOPICS = 2  # an entity belongs to one or two research topics


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(";") if n.strip())


@dataclass(frozen=True)
class Topic:
    key: str
    title: str
    names: dict[str, tuple[str, ...]]  # node type -> genuine names, most canonical first
    # Elements/modifiers used to derive further material names: "{d}-doped {b}" or ``pattern``.
    dopants: tuple[str, ...]
    pattern: str = "{d}-doped {lb}"  # {lb}: the base name, first word lower-cased where it is a word


def _topic(key, title, dopants, pattern="{d}-doped {lb}", **names) -> Topic:
    return Topic(key, title, {t: _names(names[t]) for t in TYPES}, _names(dopants), pattern)


TOPICS: tuple[Topic, ...] = (
    _topic(
        "energy_storage",
        "Batteries and supercapacitors",
        "Al; Nb; Mg; Ti; Zr; F; Na; W",
        CHM="""LiFePO4; LiCoO2; LiMn2O4; LiNi0.8Co0.1Mn0.1O2; LiNi1/3Co1/3Mn1/3O2; Li4Ti5O12; Graphite;
            LiNiO2; LiNi0.5Mn1.5O4; Li2MnO3; Li3V2(PO4)3; Li7La3Zr2O12; Li10GeP2S12; Li6PS5Cl; Li3PS4;
            LiPF6; LiTFSI; Lithium metal; Sodium metal; Na3V2(PO4)3; NaFePO4; Prussian blue; Hard carbon;
            SiOx; Sn; Fe3O4; Co3O4; NiO; MnO2; V2O5; MoS2; Ti3C2Tx; RuO2; Ni(OH)2; Activated carbon;
            Ethylene carbonate; Dimethyl carbonate; Polyvinylidene fluoride; Zn; Li2S; Sulfur;
            Li1.3Al0.3Ti1.7(PO4)3; LiPON; Polyethylene oxide; Li2CO3; LiNi0.8Co0.15Al0.05O2; Na2Ti3O7;
            NaNi1/3Fe1/3Mn1/3O2; K; Nb2O5; TiO2(B); Li3N; LiF; Fluoroethylene carbonate""",
        PRO="""Specific capacity; Reversible capacity; Discharge capacity; Coulombic efficiency; Cycling stability;
            Capacity retention; Rate capability; Energy density; Power density; Specific capacitance;
            Ionic conductivity; Li-ion diffusion coefficient; Charge transfer resistance; Electrochemical performance;
            Voltage hysteresis; Operating voltage; Electrochemical stability window; Solid electrolyte interphase;
            Dendrite growth; Volume expansion; Capacity fading; Self-discharge; Cycle life; Polarization;
            Lithium storage; Sodium storage; Intercalation; Redox potential; Areal capacity;
            Initial coulombic efficiency; Capacitance retention; Pseudocapacitance; Shuttle effect;
            Thermal runaway; Interfacial resistance; Tap density; Electronic conductivity; Charge-discharge profile;
            Cation mixing; Lithium-ion transference number; Voltage fade; Structural stability; Gravimetric capacity;
            Volumetric energy density; Oxygen release; Electrolyte decomposition; Capacitive contribution;
            Lithium plating; Mass loading; Energy efficiency; Rate performance; Cycle performance;
            Specific energy; Irreversible capacity loss; Transition metal dissolution; Particle cracking;
            Electrolyte wettability; Low-temperature performance; Fast-charging capability; Calendar aging;
            Internal resistance; Zinc dendrites""",
        APL="""Lithium-ion batteries; Sodium-ion batteries; Lithium-sulfur batteries; Solid-state batteries;
            Supercapacitors; Anodes; Cathodes; Electrolytes; Separators; Lithium metal batteries; Zinc-ion batteries;
            Potassium-ion batteries; Redox flow batteries; Electric vehicles; Grid energy storage;
            Energy storage devices; Hybrid capacitors; Lithium-air batteries; Current collectors; Binders;
            Micro-batteries; Solid electrolytes; Portable electronics; Battery recycling;
            Consumer electronics; Lithium-ion capacitors; Aqueous batteries; Flexible batteries;
            Stationary storage""",
        SMT="""Carbothermal reduction; Spray drying; Co-precipitation; Ball milling; Electrospinning;
            Atomic layer deposition; Pre-lithiation; Carbon coating; Freeze drying; Hydrothermal method;
            Solid-state reaction; Electrode calendering; Slurry casting; Sol-gel""",
        DSC="""Layered; Olivine; Spinel; Core-shell; Yolk-shell; Hollow spheres; Hierarchical; Nanosheets;
            NASICON-type; Garnet-type; Nanoflowers; Binder-free""",
        CMT="""Galvanostatic charge-discharge; Cyclic voltammetry; Electrochemical impedance spectroscopy;
            Galvanostatic intermittent titration technique; Differential capacity analysis;
            Cryogenic electron microscopy; 7Li NMR; Neutron depth profiling; X-ray computed tomography;
            Accelerating rate calorimetry; In situ XRD; Operando X-ray absorption spectroscopy; Time-of-flight SIMS;
            Solid-state NMR; Distribution of relaxation times analysis; Isothermal microcalorimetry;
            Electrochemical dilatometry; Online electrochemical mass spectrometry;
            Synchrotron X-ray tomography; Soft X-ray absorption spectroscopy""",
        SPL="R-3m; Pnma; Fd-3m; Ia-3d; R-3c; O3-type; P2-type",
    ),
    _topic(
        "electrocatalysis",
        "Electrocatalysis and fuel cells",
        "Fe; Co; Ni; Mo; N; P; S; Cu",
        CHM="""Pt/C; IrO2; RuO2; Platinum; Pd; PtNi; Pt3Co; NiFe layered double hydroxide; Co3O4; MoS2; MoP; Ni2P;
            CoP; Ni3S2; NiCo2O4; Fe-N-C; Co-N-C; Nitrogen-doped carbon; Carbon black; Nafion;
            La0.6Sr0.4Co0.2Fe0.8O3; Yttria-stabilized zirconia; Gd-doped ceria; Ni-YSZ; Ba0.5Sr0.5Co0.8Fe0.2O3;
            NiOOH; Cu; Cu2O; Bi; Au; MnOx; Nickel foam; Carbon paper; KOH; H2SO4; MoSe2; WS2; Mo2C; CoSe2;
            Ir; Ru; FeOOH; PtRu; Pd/C; NiMo alloy; CoFe2O4; Sr2Fe1.5Mo0.5O6""",
        PRO="""Overpotential; Tafel slope; Exchange current density; Onset potential; Half-wave potential;
            Mass activity; Specific activity; Turnover frequency; Electrochemically active surface area;
            Faradaic efficiency; Current density; Electrocatalytic activity; Durability;
            Hydrogen adsorption free energy; d-band center; Charge transfer kinetics; Electron transfer number;
            Limiting current density; Proton conductivity; Oxygen vacancies; Peak power density;
            Open-circuit voltage; Polarization resistance; Area-specific resistance; Oxygen reduction activity;
            Methanol tolerance; CO tolerance; Double-layer capacitance; Adsorption energy; Intrinsic activity;
            Active sites; Catalyst stability; Lattice oxygen activity; Surface reconstruction; Product selectivity;
            Oxygen evolution activity; Hydrogen evolution activity; Conductivity;
            Water dissociation kinetics; Hydroxide adsorption; Charge transfer coefficient; Water management;
            Membrane conductivity; Platinum loading; Catalyst layer porosity; Oxygen binding energy;
            Ammonia yield rate; CO selectivity; Formate selectivity; Electrochemical stability;
            Stability number""",
        APL="""Oxygen evolution reaction; Hydrogen evolution reaction; Oxygen reduction reaction; Water splitting;
            Fuel cells; Proton exchange membrane fuel cells; Solid oxide fuel cells; Electrolyzers;
            Zinc-air batteries; CO2 electroreduction; Nitrogen reduction reaction; Methanol oxidation;
            Direct methanol fuel cells; Alkaline water electrolysis; Hydrogen production; Electrocatalysts;
            Metal-air batteries; Anion exchange membrane electrolyzers; Solid oxide electrolysis cells;
            Formic acid oxidation; Nitrate reduction;
            Hydrogen fuel cells; Electrochemical ammonia synthesis; Chlor-alkali electrolysis; Green hydrogen;
            PEM electrolyzers""",
        SMT="""Electrodeposition; Pyrolysis; Impregnation; Galvanic replacement; Wet chemical reduction; Polyol method;
            Electrochemical activation; Phosphidation; Sulfidation; Dealloying; Screen printing; Tape casting;
            Hydrothermal method""",
        DSC="""Single-atom; Nanoclusters; Defect-rich; Nanoarrays; Heterostructure; Bimetallic; Self-supported;
            Edge sites; Porous; Alloyed""",
        CMT="""Linear sweep voltammetry; Rotating disk electrode; Rotating ring-disk electrode; Chronoamperometry;
            Chronopotentiometry; X-ray absorption near-edge structure; Extended X-ray absorption fine structure;
            HAADF-STEM; Differential electrochemical mass spectrometry; Electrochemical quartz crystal microbalance;
            Gas chromatography; Electrochemical impedance spectroscopy; Cyclic voltammetry;
            Inductively coupled plasma mass spectrometry; Scanning electrochemical microscopy;
            In situ Raman spectroscopy; Identical-location TEM; Isotope labeling experiments;
            Online gas chromatography; Operando X-ray absorption spectroscopy""",
        SPL="Fm-3m; P63/mmc; P-3m1",
    ),
    _topic(
        "heterogeneous_catalysis",
        "Heterogeneous catalysis and porous frameworks",
        "Pt; Pd; Ni; Cu; Ce; La; K; Zr",
        CHM="""ZSM-5; Zeolite Y; SAPO-34; Beta zeolite; MCM-41; SBA-15; CeO2; ZrO2; Pd/Al2O3; Pt/Al2O3; Au/TiO2;
            Ni/Al2O3; Cu/ZnO/Al2O3; Rh; Ru; Co/SiO2; V2O5/TiO2; MoO3; Cr2O3; UiO-66; ZIF-8; HKUST-1; MIL-101;
            MOF-5; PtSn; CO; CO2; CH4; Methanol; Ethylene; NH3; Syngas; Ce0.5Zr0.5O2; LaCoO3; Hydrotalcite;
            Propane; Fe2O3; Co3O4; Pd; Zeolites; Metal-organic frameworks; Covalent organic frameworks; H2;
            MgO; Ni; Iron oxide; Formic acid; Glycerol""",
        PRO="""Catalytic activity; Selectivity; Conversion; Yield; Turnover frequency; Activation energy; Acidity;
            Brønsted acidity; Lewis acidity; Coke resistance; Sintering resistance; Metal dispersion; Reducibility;
            Oxygen storage capacity; Space-time yield; Light-off temperature; Adsorption energy; Reaction rate;
            Catalyst deactivation; Metal-support interaction; Pore size distribution; Hydrothermal stability;
            Shape selectivity; Surface acidity; Carbon deposition; Product distribution; Apparent activation energy;
            CO2 uptake; Pore volume; Adsorption selectivity; Isosteric heat of adsorption; Regenerability;
            Oxygen mobility; Strong metal-support interaction; Catalytic performance;
            Catalyst lifetime; Deactivation rate; Particle size effect; Turnover number; Olefin selectivity;
            Methane conversion; CO conversion; Hydrogen spillover; Oxygen vacancy formation energy;
            Adsorption enthalpy; Framework stability; Coke formation; BET surface area; Micropore volume;
            Acid site density; Breakthrough capacity""",
        APL="""CO oxidation; CO2 hydrogenation; Methane reforming; Dry reforming of methane; Fischer-Tropsch synthesis;
            Ammonia synthesis; Methanol synthesis; Water-gas shift reaction; Selective catalytic reduction;
            Three-way catalysts; Hydrodesulfurization; Fluid catalytic cracking; Biomass conversion;
            Oxidative dehydrogenation; Hydrogenation; Gas separation; CO2 capture; Hydrogen storage;
            Catalytic converters; Propane dehydrogenation; Methanol-to-olefins; Heterogeneous catalysis;
            Olefin metathesis; Steam reforming; Catalytic cracking; Volatile organic compound oxidation;
            Automotive exhaust treatment; Biodiesel production""",
        SMT="""Incipient wetness impregnation; Deposition-precipitation; Wet impregnation; Ion exchange;
            Template-assisted synthesis; Strong electrostatic adsorption; Solvothermal method; Hydrogen reduction;
            Calcination; Hydrothermal method; Impregnation""",
        DSC="""Mesoporous; Microporous; Supported; Highly dispersed; Hierarchical porous; Nanoporous; Acid sites;
            Crystalline framework""",
        CMT="""Temperature-programmed reduction; NH3 temperature-programmed desorption; CO chemisorption;
            Pyridine FTIR; DRIFTS; N2 physisorption; Gas chromatography; Mass spectrometry; 27Al MAS NMR;
            X-ray absorption fine structure; CO2 temperature-programmed desorption; H2 chemisorption;
            Temperature-programmed oxidation; Temperature-programmed desorption; 29Si MAS NMR;
            Ambient-pressure XPS; Operando DRIFTS; Kinetic isotope effect measurements;
            Steady-state isotopic transient kinetic analysis; Thermogravimetry-mass spectrometry""",
        SPL="Fm-3m; Fd-3m; Pnma",
    ),
    _topic(
        "photocatalysis",
        "Photocatalysis and environmental remediation",
        "N; C; S; Fe; Ag; Cu; Bi; Ce",
        CHM="""TiO2; g-C3N4; ZnO; BiVO4; WO3; Bi2WO6; BiOBr; BiOCl; Ag3PO4; CdS; α-Fe2O3; P25; Methylene blue;
            Rhodamine B; Methyl orange; Phenol; Tetracycline; Cr(VI); Arsenic; Pb2+; Cd2+; Activated carbon;
            Biochar; Graphene oxide; Chitosan; H2O2; Persulfate; Peroxymonosulfate; ZnIn2S4; SrTiO3; Cu2O;
            Hydroxyl radical; NOx; Nitrate; Congo red; Bisphenol A; Ciprofloxacin; Ag; Fe3O4; Bi2MoO6;
            MIL-88B(Fe); Superoxide radical; Montmorillonite; Zeolites""",
        PRO="""Photocatalytic activity; Degradation efficiency; Removal efficiency; Adsorption capacity;
            Visible-light absorption; Charge separation; Electron-hole recombination; Quantum efficiency;
            Apparent quantum yield; Hydrogen evolution rate; Band edge positions; Reactive oxygen species generation;
            Rate constant; Pseudo-first-order kinetics; Reusability; Mineralization; Photocurrent density;
            Point of zero charge; Photostability; Toxicity; Zeta potential; Light absorption; Langmuir isotherm;
            Adsorption kinetics; Charge carrier lifetime; Light harvesting; Photocatalytic performance;
            Chemical oxygen demand; Specific surface area;
            Hydrogen production rate; Photocatalytic stability; Solar-to-hydrogen efficiency;
            Charge transfer efficiency; Redox ability; Recombination rate; Oxygen evolution rate;
            Interfacial charge transfer; Antibacterial efficiency; Regeneration efficiency;
            Adsorption equilibrium; Photothermal effect""",
        APL="""Photocatalysis; Photocatalytic degradation; Water treatment; Wastewater treatment;
            Photocatalytic hydrogen production; CO2 photoreduction; Dye degradation; Heavy metal removal;
            Air purification; Antibacterial applications; Self-cleaning surfaces; Photoelectrochemical water splitting;
            Adsorbents; Desalination; Advanced oxidation processes; Soil remediation; Water disinfection;
            Photocatalysts; Pollutant removal; Environmental remediation;
            Antibiotic removal; Photocatalytic nitrogen fixation; Organic synthesis;
            Hydrogen peroxide production; Uranium extraction; Solar fuels""",
        SMT="""Hydrothermal method; Sol-gel; Calcination; Photodeposition; Solvothermal method; Precipitation;
            Ultrasonic-assisted synthesis; Thermal polymerization; Impregnation; Microwave-assisted synthesis""",
        DSC="""Heterojunction; Z-scheme; Visible-light-driven; Nanorods; Mesoporous; Nanocomposite; Oxygen-deficient;
            Doped; Porous; S-scheme""",
        CMT="""UV-vis diffuse reflectance spectroscopy; Photoluminescence spectroscopy; Electron spin resonance;
            Total organic carbon analysis; Mott-Schottky analysis; Transient photocurrent response; HPLC;
            Zeta potential measurement; Atomic absorption spectroscopy; ICP-OES; Radical trapping experiments;
            LC-MS;
            Photoelectrochemical measurements; Surface photovoltage spectroscopy;
            Femtosecond transient absorption spectroscopy; EPR spin trapping; Ion chromatography;
            Kelvin probe force microscopy; Isotope tracing experiments""",
        SPL="I41/amd; P42/mnm; P63mc; Anatase; Rutile",
    ),
    _topic(
        "photovoltaics",
        "Photovoltaics",
        "Cs; Rb; K; Cl; Br; Sn; Na; Sb",
        CHM="""CH3NH3PbI3; CsPbI3; CsPbBr3; FAPbI3; CH3NH3PbBr3; Spiro-OMeTAD; PEDOT:PSS; PC61BM; PC71BM; P3HT;
            PTB7; PM6; Y6; Indium tin oxide; FTO; TiO2; SnO2; NiOx; CdTe; CdS; Cu(In,Ga)Se2; Cu2ZnSnS4;
            Crystalline silicon; Amorphous silicon; GaAs; N719 dye; PbI2; Methylammonium iodide; C60; Perovskite;
            Sb2Se3; ITIC; PTAA; BCP; MoO3; ZnO; Formamidinium iodide; Cs2AgBiBr6; CsFAMA perovskite""",
        PRO="""Power conversion efficiency; Open-circuit voltage; Short-circuit current density; Fill factor;
            External quantum efficiency; Carrier lifetime; Diffusion length; Trap density; Hysteresis;
            Absorption coefficient; Charge extraction; Non-radiative recombination; Series resistance;
            Shunt resistance; Moisture stability; Phase stability; Light-induced degradation; Exciton binding energy;
            Energy level alignment; Work function; Transmittance; Sheet resistance; Urbach energy;
            Operational stability; Ion migration; Defect density; Grain size; Tolerance factor; Carrier mobility;
            Band gap; Photocurrent density; Charge recombination;
            Built-in potential; Ideality factor; Recombination lifetime; Bandgap tunability;
            Passivation quality; Contact selectivity; Quasi-Fermi level splitting; Reflectance; Haze;
            Lead leakage; Stabilized power output; Efficiency loss; Thermal stability of perovskites""",
        APL="""Solar cells; Perovskite solar cells; Organic solar cells; Dye-sensitized solar cells; Tandem solar cells;
            Silicon solar cells; Thin-film solar cells; Photovoltaics; Hole transport layers; Electron transport layers;
            Transparent electrodes; Photodetectors; Building-integrated photovoltaics; Quantum dot solar cells;
            Light-emitting diodes; Photoelectrodes; Solar modules; Indoor photovoltaics;
            Perovskite/silicon tandem solar cells; Semitransparent solar cells; Space photovoltaics;
            Agrivoltaics; Solar fuels""",
        SMT="""Spin coating; Antisolvent treatment; Two-step deposition; Thermal evaporation; Blade coating;
            Slot-die coating; Close-spaced sublimation; Chemical bath deposition; Sputtering; Selenization;
            Solution processing; Atomic layer deposition; Vapor-assisted solution process""",
        DSC="""Thin film; Planar; Mesoscopic; Polycrystalline; Inverted; Bulk heterojunction; Pinhole-free;
            Quasi-two-dimensional; Large-grain""",
        CMT="""J-V measurements; Incident photon-to-current efficiency measurement; Time-resolved photoluminescence;
            Space-charge-limited current; Kelvin probe force microscopy; Ultraviolet photoelectron spectroscopy;
            Transient absorption spectroscopy; GIWAXS; Thermal admittance spectroscopy; Photoluminescence mapping;
            Maximum power point tracking; Transient photovoltage decay;
            Electroluminescence imaging; Light-beam-induced current mapping; XPS depth profiling;
            Impedance spectroscopy; Dark J-V measurements; Steady-state photoluminescence;
            Photoluminescence quantum yield measurement""",
        SPL="I4/mcm; Pm-3m; F-43m; I-42d; α phase; δ phase",
    ),
    _topic(
        "semiconductors",
        "Semiconductors, electronics and sensors",
        "Mg; Si; Al; Ga; In; Sb; P; B",
        CHM="""Silicon; GaN; GaAs; Germanium; InGaN; AlGaN; InP; SiC; Ga2O3; ZnO; InGaZnO; HfO2; Si3N4; In2O3; SnO2;
            Indium tin oxide; MoS2; WSe2; Black phosphorus; Pentacene; AlN; ZnSe; CdSe; PbS; InAs; Ge2Sb2Te5; TiN;
            NiSi; WO3; NO2; H2S; NH3; Ethanol; Acetone; Formaldehyde; Poly(3-hexylthiophene); Ta2O5; SiGe;
            Cu; Al2O3; Graphene; TiO2""",
        PRO="""Carrier mobility; Electron mobility; Hole mobility; Carrier concentration; Resistivity; On/off ratio;
            Threshold voltage; Subthreshold swing; Leakage current; Dielectric constant; Breakdown voltage;
            Breakdown field; Effective mass; Direct band gap; Indirect band gap; Work function;
            Schottky barrier height; Contact resistance; Sheet resistance; Gas response; Sensitivity; Response time;
            Recovery time; Detection limit; Responsivity; Detectivity; Dark current; Doping concentration;
            Interface trap density; Fermi level; Hall mobility; n-type conductivity; p-type conductivity;
            Photoresponse; Band gap; Band structure; Electrical conductivity; Operating temperature;
            Switching speed; Thermal conductivity;
            Electron affinity; Saturation velocity; Transconductance; Drain current; Fermi level pinning;
            Surface states; Bias stress stability; Noise equivalent power; Gas selectivity;
            Conduction band offset; Valence band offset; Piezoresistivity; Intrinsic carrier concentration""",
        APL="""Transistors; Field-effect transistors; Thin-film transistors; High-electron-mobility transistors;
            Power electronics; Integrated circuits; Memory devices; Resistive switching memory; Phase-change memory;
            Photodetectors; Gas sensors; Light-emitting diodes; Laser diodes; Transparent electrodes;
            Flexible electronics; Gate dielectrics; Optoelectronic devices; Solar-blind photodetectors;
            Humidity sensors; Neuromorphic computing; Microelectronics; Sensors;
            Radio-frequency devices; Image sensors; Power amplifiers; Ultraviolet photodetectors;
            CMOS technology""",
        SMT="""Metal-organic chemical vapor deposition; Molecular beam epitaxy; Chemical vapor deposition;
            Atomic layer deposition; Pulsed laser deposition; Magnetron sputtering; Ion implantation;
            Thermal oxidation; Photolithography; Epitaxial growth; Hydride vapor phase epitaxy; Czochralski method;
            Rapid thermal annealing; Mechanical exfoliation""",
        DSC="""Epitaxial; Single crystal; Heterostructure; Nanowires; Quantum wells; Quantum dots; Wide-bandgap;
            Ultrathin; n-type; p-type""",
        CMT="""Hall effect measurements; Four-point probe; Capacitance-voltage measurements;
            Deep-level transient spectroscopy; Current-voltage measurements; Cathodoluminescence;
            Secondary ion mass spectrometry; High-resolution XRD; Ellipsometry;
            Reflection high-energy electron diffraction;
            Atomic force microscopy; Photoluminescence spectroscopy; Transfer length method;
            Photoconductivity measurements; X-ray rocking curve; Electron beam induced current;
            Admittance spectroscopy; Conductive atomic force microscopy; Noise spectroscopy;
            Gas sensing measurements""",
        SPL="P63mc; F-43m; Fd-3m; C2/m; Wurtzite; Zinc blende",
    ),
    _topic(
        "structural_alloys",
        "Structural alloys and metallurgy",
        "Sc; Zr; B; Y; Nb; V; Mo; Cu",
        pattern="{d}-modified {lb}",
        CHM="""Ti-6Al-4V; 316L stainless steel; 304 stainless steel; Inconel 718; Inconel 625; AA7075; AA6061; AA2024;
            AZ31 magnesium alloy; AZ91 magnesium alloy; Ni-based superalloys; CoCrFeMnNi; AlCoCrFeNi;
            High-entropy alloys; TiAl; NiTi; Vitreloy 1; TWIP steel; Dual-phase steel; Maraging steel;
            H13 tool steel; CuCrZr; AlSi10Mg; Magnesium; Aluminum; Titanium; Iron; Nickel; Chromium; Molybdenum;
            Niobium; Tungsten; Cementite; TiB2; TiC; Carbon steel; Zircaloy-4; Ti-6Al-2Sn-4Zr-2Mo; CrMnFeCoNi;
            Al-Cu alloy; Medium-manganese steel; Oxide dispersion strengthened steel; WC-Co""",
        PRO="""Yield strength; Ultimate tensile strength; Ductility; Elongation; Hardness; Fracture toughness;
            Fatigue life;
            Fatigue strength; Creep resistance; Work hardening; Strain hardening rate; Grain size;
            Dislocation density; Young's modulus; Impact toughness; Stacking fault energy; Precipitation hardening;
            Texture; Residual stress; Wear resistance; Corrosion resistance; Plasticity; Superelasticity;
            Shape memory effect; Glass-forming ability; Martensitic transformation; Recrystallization;
            Hall-Petch relationship; Oxidation resistance; Specific strength; Flow stress; Strain rate sensitivity;
            Microhardness; Compressive strength; Mechanical properties; Solid solution strengthening;
            Grain boundary segregation; Hydrogen embrittlement; Phase stability;
            Fatigue crack growth rate; Damping capacity; Creep rupture life; Weldability; Formability;
            Machinability; Strain hardening exponent; Twinning; Transformation-induced plasticity;
            Grain refinement; Lattice distortion; Sluggish diffusion; Strength""",
        APL="""Aerospace; Automotive; Structural applications; Gas turbines; Turbine blades; Nuclear reactors;
            Biomedical implants; Lightweight structures; Pressure vessels; Pipelines; Armor;
            High-temperature applications; Cutting tools; Shipbuilding; Fasteners; Engine components;
            Nuclear fuel cladding; Railway;
            Additive manufacturing; Spacecraft; Heat exchangers; Welding; Molds and dies""",
        SMT="""Selective laser melting; Laser powder bed fusion; Electron beam melting; Directed energy deposition;
            Hot rolling; Cold rolling; Forging; Equal channel angular pressing; High-pressure torsion;
            Friction stir welding; Arc melting; Casting; Heat treatment; Solution treatment; Aging treatment;
            Powder metallurgy; Spark plasma sintering; Hot isostatic pressing; Extrusion; Quenching""",
        DSC="""Nanocrystalline; Ultrafine-grained; As-cast; Equiaxed; Columnar; Lamellar; Dual-phase; Precipitates;
            Coarse-grained; Bulk metallic glass""",
        CMT="""Electron backscatter diffraction; Tensile testing; Vickers hardness test; Nanoindentation;
            Atom probe tomography; Differential scanning calorimetry; Dilatometry; Neutron diffraction;
            Optical microscopy; Fatigue testing; Creep testing; Charpy impact test; Digital image correlation;
            Synchrotron X-ray diffraction; Fractography;
            X-ray line profile analysis; Scanning transmission electron microscopy;
            In situ neutron diffraction; Thermal desorption spectroscopy; Micropillar compression;
            Positron annihilation spectroscopy; Ultrasonic testing; High-energy X-ray diffraction""",
        SPL="Fm-3m; Im-3m; P63/mmc; Austenite; Martensite; Fcc; Bcc; Hcp; L12; B2",
    ),
    _topic(
        "polymers",
        "Polymers and composites",
        "Cross-linked; Functionalized; Grafted; Sulfonated; Fluorinated; Carboxylated; Recycled; Plasticized",
        pattern="{d} {lb}",
        CHM="""Polyethylene; Polypropylene; Polystyrene; Poly(methyl methacrylate); Polycarbonate;
            Polyethylene terephthalate; Polyvinyl chloride; Nylon 6; Polyimide; Epoxy resin; Polyurethane;
            Polydimethylsiloxane; Polyvinyl alcohol; Polyethylene glycol; Polylactic acid; Polycaprolactone;
            Polyvinylidene fluoride; Polyaniline; Polypyrrole; PEDOT:PSS; Polyacrylonitrile; Polyether ether ketone;
            Polytetrafluoroethylene; Natural rubber; Styrene-butadiene rubber; Cellulose; Cellulose nanocrystals;
            Lignin; Carbon fiber; Glass fiber; Bisphenol A; Chitosan; Polyethylene oxide;
            Poly(N-isopropylacrylamide); Polysulfone; Polyethersulfone; Polyacrylamide; Polybutylene succinate;
            Ethylene vinyl acetate; Acrylonitrile butadiene styrene; Polyhydroxyalkanoates""",
        PRO="""Glass transition temperature; Melting temperature; Molecular weight; Tensile strength;
            Elongation at break;
            Storage modulus; Viscosity; Viscoelasticity; Thermal degradation temperature; Flame retardancy;
            Water absorption; Gas permeability; Swelling ratio; Biodegradability; Hydrophobicity;
            Interfacial adhesion; Toughness; Flexural strength; Impact strength; Self-healing; Processability;
            Chain mobility; Crosslinking density; Rheological properties; Permeability; Water flux; Salt rejection;
            Melt flow index; Dielectric properties; Polydispersity index; Degree of crystallinity;
            Thermal conductivity; Young's modulus; Creep; Weathering resistance;
            Hydrolytic stability; Solubility; Miscibility; Phase separation; Peel strength;
            Shape recovery ratio; Stress relaxation; Fatigue resistance; Abrasion resistance;
            Optical transparency; Oxygen permeability; Water vapor permeability; Recyclability;
            Chain entanglement; Free volume""",
        APL="""Packaging; Membranes; Adhesives; Fiber-reinforced composites; 3D printing; Flexible electronics;
            Food packaging; Gas separation membranes; Electromagnetic interference shielding; Textiles;
            Cable insulation; Tires; Biodegradable plastics; Actuators; Wearable sensors; Soft robotics; Sealants;
            Automotive; Composites;
            Medical devices; Paints; Footwear; Proton exchange membranes; Sports equipment;
            Wind turbine blades; Aircraft structures""",
        SMT="""Free radical polymerization; Atom transfer radical polymerization; RAFT polymerization;
            Ring-opening polymerization; Emulsion polymerization; Melt blending; Extrusion; Injection molding;
            Electrospinning; Solution casting; Compression molding; In situ polymerization; Interfacial polymerization;
            Phase inversion; Thermal curing; Melt spinning""",
        DSC="""Semicrystalline; Crosslinked; Block copolymer; Thermoplastic; Thermosetting; Hydrogel; Nanofibers;
            Elastomeric; Aerogel; Amorphous""",
        CMT="""Gel permeation chromatography; Dynamic mechanical analysis; Thermogravimetric analysis;
            Differential scanning calorimetry; Rheometry; 1H NMR; Small-angle X-ray scattering;
            Wide-angle X-ray scattering; Tensile testing; Contact angle measurement; Polarized optical microscopy;
            Limiting oxygen index test; Cone calorimetry; MALDI-TOF mass spectrometry;
            Size exclusion chromatography; Dielectric analysis; Thermomechanical analysis; Shore hardness test;
            Positron annihilation lifetime spectroscopy; Attenuated total reflectance FTIR; 13C NMR;
            Gas permeation testing; Peel test; Izod impact test""",
        SPL="α phase; β phase; γ phase; Orthorhombic",
    ),
    _topic(
        "biomaterials",
        "Biomaterials and nanomedicine",
        "Sr; Mg; Zn; Ag; Si; F; Cu; Ce",
        CHM="""Hydroxyapatite; β-Tricalcium phosphate; 45S5 Bioglass; Collagen; Gelatin; Chitosan; Sodium alginate;
            Hyaluronic acid; Silk fibroin; Polylactic acid; PLGA; Polycaprolactone; Polyethylene glycol;
            Commercially pure titanium; NiTi; Mg-Zn-Ca alloy; Silver nanoparticles; Gold nanoparticles; Fe3O4;
            Doxorubicin; Curcumin; Bovine serum albumin; DNA; Calcium phosphate; Mesoporous silica nanoparticles;
            BMP-2; Simulated body fluid; Fibrin; Cisplatin; Paclitaxel; Zirconia; Polyetheretherketone implants;
            Gentamicin; Vancomycin; Dextran; Calcium silicate; Ti-6Al-4V""",
        PRO="""Biocompatibility; Cytotoxicity; Bioactivity; Cell viability; Cell adhesion; Cell proliferation;
            Osteogenic differentiation; Osseointegration; Biodegradability; Degradation rate; Drug release;
            Drug loading capacity; Encapsulation efficiency; Antibacterial activity; Hemocompatibility;
            Protein adsorption; Swelling behavior; Apatite-forming ability; Inflammatory response; Cellular uptake;
            Zeta potential; Hydrophilicity; Compressive strength; Injectability; Mucoadhesion; Antioxidant activity;
            Sustained release; pH responsiveness; Angiogenesis; Osteoconductivity; Circulation time;
            Elastic modulus; Ion release; Cell migration; Cell differentiation; Bone ingrowth; Vascularization;
            Immune response; Hemolysis ratio; Platelet adhesion; Biofilm inhibition; Tumor targeting;
            Photothermal conversion efficiency; Corrosion rate""",
        APL="""Tissue engineering; Bone tissue engineering; Drug delivery; Wound healing; Wound dressings;
            Orthopedic implants; Dental implants; Scaffolds; Biosensors; Cancer therapy; Photothermal therapy;
            Magnetic hyperthermia; Bioimaging; Gene delivery; Controlled release; Cartilage repair; Bone regeneration;
            Antibacterial coatings; Cardiovascular stents; Biomedical implants; Antibacterial applications;
            Contact lenses; Nerve regeneration; Hemostasis; Dental restoration; Theranostics; Vaccine delivery""",
        SMT="""Freeze drying; Electrospinning; 3D bioprinting; Wet chemical precipitation; Biomimetic mineralization;
            Chemical crosslinking; Emulsion solvent evaporation; Layer-by-layer assembly; Plasma spraying;
            Micro-arc oxidation; Particulate leaching; Nanoprecipitation""",
        DSC="""Biodegradable; Injectable; Hydrogel; Nanofibrous; Biomimetic; Macroporous; Stimuli-responsive;
            Nanocarriers; Interconnected porous""",
        CMT="""MTT assay; Live/dead staining; CCK-8 assay; Alkaline phosphatase activity assay;
            Confocal laser scanning microscopy; Flow cytometry; Dynamic light scattering; Hemolysis assay;
            Micro-computed tomography; Histological analysis; Fluorescence microscopy;
            Quantitative real-time PCR; Western blot; Zeta potential measurement;
            ELISA; Immunofluorescence staining; Scratch wound assay; Disk diffusion assay;
            Minimum inhibitory concentration test; In vivo fluorescence imaging; Compression testing""",
        SPL="P63/m; R3c",
    ),
    _topic(
        "magnetism",
        "Magnetic materials and spintronics",
        "Co; Mn; Zn; Gd; Dy; Al; Cr; La",
        CHM="""Fe3O4; γ-Fe2O3; CoFe2O4; NiFe2O4; MnFe2O4; ZnFe2O4; BaFe12O19; SrFe12O19; Nd2Fe14B; SmCo5; Sm2Co17;
            FePt; CoFeB; Permalloy; Fe-Si electrical steel; Y3Fe5O12; BiFeO3; La0.7Sr0.3MnO3; MnBi; Cobalt;
            Gadolinium; Co2MnSi; Ni-Mn-Ga; CrI3; Fe3GeTe2; MnSi; Gd5Si2Ge2; La(Fe,Si)13; MgO; Tantalum; Pt;
            Finemet; Mn3Sn; Fe16N2; Alnico; Ni0.5Zn0.5Fe2O4; Dysprosium; CoPt; Heusler alloys""",
        PRO="""Saturation magnetization; Coercivity; Remanence; Magnetic anisotropy; Magnetocrystalline anisotropy;
            Curie temperature; Néel temperature; Magnetic susceptibility; Magnetic moment; Maximum energy product;
            Magnetoresistance; Tunnel magnetoresistance; Giant magnetoresistance; Exchange bias; Superparamagnetism;
            Ferromagnetism; Antiferromagnetism; Spin polarization; Gilbert damping; Magnetocaloric effect;
            Magnetic entropy change; Spin-orbit torque; Magnetic skyrmions; Magnetic hysteresis;
            Magnetic permeability; Core loss; Magnetostriction; Specific absorption rate; Exchange coupling;
            Spin Hall angle; Anomalous Hall effect; Domain wall motion; Blocking temperature; Magnetic properties;
            Reflection loss; Perpendicular magnetic anisotropy;
            Magnetization; Spin-orbit coupling; Dzyaloshinskii-Moriya interaction; Spin relaxation time;
            Spin diffusion length; Remanent magnetization; Squareness ratio; Magnetic ordering;
            Spin reorientation; Magnetic frustration; Exchange stiffness; Magnetoelectric coupling;
            Eddy current loss; Hysteresis loss""",
        APL="""Permanent magnets; Spintronics; Magnetic storage; Magnetic refrigeration; Magnetic resonance imaging;
            Magnetic hyperthermia; Magnetic separation; Electric motors; Transformers; Microwave absorption;
            Magnetic sensors; Magnetic random-access memory; Spin valves; Magnetic tunnel junctions; Inductors;
            Wind turbine generators; Hard disk drives; Electromagnetic wave absorption;
            Magnetic particle imaging; Wireless power transfer; Magnetic actuators; Racetrack memory;
            Electromagnetic shielding""",
        SMT="""Co-precipitation; Thermal decomposition; Magnetron sputtering; Melt spinning;
            Hydrogenation-disproportionation-desorption-recombination; Molecular beam epitaxy;
            Sol-gel auto-combustion; Grain boundary diffusion; Strip casting; Arc melting; Annealing""",
        DSC="""Superparamagnetic; Ferromagnetic; Antiferromagnetic; Soft magnetic; Hard magnetic; Multiferroic;
            Monodisperse; Exchange-coupled; Single-domain""",
        CMT="""Vibrating sample magnetometry; SQUID magnetometry; Mössbauer spectroscopy; Magnetic force microscopy;
            Ferromagnetic resonance; X-ray magnetic circular dichroism; Magneto-optical Kerr effect;
            Lorentz transmission electron microscopy; Neutron diffraction; Polarized neutron reflectometry;
            Electron paramagnetic resonance; Zero-field-cooled and field-cooled measurements;
            AC susceptibility measurements; Brillouin light scattering; Spin-polarized STM; Kerr microscopy;
            Small-angle neutron scattering; Torque magnetometry; Magnetotransport measurements;
            X-ray photoemission electron microscopy""",
        SPL="Fd-3m; P63/mmc; P42/mnm; L10; R3c; Inverse spinel",
    ),
    _topic(
        "thermoelectrics",
        "Thermoelectrics",
        "Na; Ag; Cu; Sb; Bi; In; Yb; Se",
        CHM="""Bi2Te3; Sb2Te3; Bi0.5Sb1.5Te3; PbTe; PbSe; SnSe; SnTe; GeTe; Mg2Si; Mg3Sb2; CoSb3; Yb14MnSb11; Cu2Se;
            Ag2Se; ZrNiSn; NbFeSb; TiNiSn; SiGe; Bi2Se3; Ca3Co4O9; SrTiO3; BiCuSeO; Zn4Sb3; AgSbTe2; Mg2Sn;
            PEDOT:PSS; Cu2S; In4Se3; Skutterudites; Half-Heusler compounds; Bi2Te2.7Se0.3; Mg3Bi2; CuGaTe2""",
        PRO="""Seebeck coefficient; Thermoelectric figure of merit; Power factor; Lattice thermal conductivity;
            Electronic thermal conductivity; Thermal conductivity; Carrier concentration; Electrical conductivity;
            Phonon scattering; Band convergence; Density-of-states effective mass; Weighted mobility;
            Anharmonicity; Grüneisen parameter; Conversion efficiency; Bipolar conduction; Debye temperature;
            Sound velocity; Point defect scattering; Resonant levels; Lorenz number; Thermoelectric performance;
            ZT value; Phonon mean free path; Thermal stability; Carrier mobility; Output power density;
            Average ZT; Hall carrier concentration; Deformation potential; Valley degeneracy; Phonon softening;
            Contact resistivity; Cooling capacity; Maximum temperature difference; Peltier coefficient;
            Thomson coefficient; Lone pair electrons; Rattling modes""",
        APL="""Thermoelectric generators; Thermoelectric cooling; Waste heat recovery; Peltier coolers;
            Thermoelectric devices; Radioisotope thermoelectric generators; Wearable thermoelectric generators;
            Thermoelectric modules; Solid-state cooling; Power generation;
            Automotive waste heat recovery; Self-powered sensors; Thermal sensors; Space power systems;
            Body heat harvesting""",
        SMT="""Spark plasma sintering; Hot pressing; Ball milling; Melt spinning; Zone melting; Bridgman method;
            Melting and quenching; Solvothermal method; Arc melting; Mechanical alloying""",
        DSC="""Nanostructured; Polycrystalline; Nanoprecipitates; Textured; Layered; Bulk""",
        CMT="""Laser flash analysis; ZEM-3; Hall effect measurements; Ultrasonic pulse-echo measurement;
            Inelastic neutron scattering; Aberration-corrected STEM; Boltzmann transport calculations;
            Thermal diffusivity measurement; Differential scanning calorimetry;
            Scanning thermal microscopy; Time-domain thermoreflectance; Three-omega method;
            Inelastic X-ray scattering; Thermal conductivity measurement; Seebeck coefficient measurement""",
        SPL="R-3m; Fm-3m; Pnma; Im-3; F-43m; Cmcm",
    ),
    _topic(
        "coatings",
        "Coatings, corrosion and tribology",
        "Cr; Al; Si; Ti; W; Zr; Y; Ce",
        CHM="""TiN; CrN; TiAlN; Diamond-like carbon; WC-Co; Cr2O3; Yttria-stabilized zirconia; Hydroxyapatite;
            Zinc phosphate; Hexavalent chromium; NaCl; Benzotriazole; Epoxy resin; Polyurethane; Silane; MoS2;
            Hexagonal boron nitride; Ni-P; Zn-Ni; Mild steel; Q235 steel; AZ31 magnesium alloy; AA2024; MCrAlY;
            Zinc; Cerium nitrate; Sodium molybdate; Al2O3 coating; SiO2 coating; TiO2; Polytetrafluoroethylene;
            Carbon steel; Chromium carbide""",
        PRO="""Corrosion resistance; Corrosion rate; Corrosion potential; Corrosion current density;
            Polarization resistance; Inhibition efficiency; Adhesion strength; Wear resistance; Wear rate;
            Friction coefficient; Hardness; Surface roughness; Contact angle; Hydrophobicity; Superhydrophobicity;
            Oxidation resistance; Thermal shock resistance; Coating thickness; Pitting corrosion; Scratch resistance;
            Barrier properties; Self-healing; Residual stress; Antifouling performance; Passivation;
            Tribological properties; Erosion resistance; Impedance modulus; Coating delamination; Critical load;
            Sliding angle; Ice adhesion strength; Corrosion protection efficiency; Coating porosity;
            Elastic recovery; Load-bearing capacity; Thermal cycling lifetime; Interfacial bonding strength;
            Chemical resistance; UV resistance; Gloss""",
        APL="""Protective coatings; Anticorrosion coatings; Thermal barrier coatings; Wear-resistant coatings;
            Cutting tools; Self-cleaning surfaces; Anti-icing surfaces; Marine antifouling coatings;
            Corrosion inhibitors; Hard coatings; Solid lubricants; Antireflection coatings; Oil-water separation;
            Antibacterial coatings; Gas turbines; Automotive;
            Biomedical coatings; Pipeline protection; Drilling tools; Decorative coatings; Anti-fog coatings;
            Aircraft engines""",
        SMT="""Physical vapor deposition; Magnetron sputtering; Thermal spraying; Plasma spraying;
            High-velocity oxy-fuel spraying; Cathodic arc deposition; Electroless plating; Electrodeposition;
            Dip coating; Spray coating; Micro-arc oxidation; Anodization; Laser cladding; Cold spraying""",
        DSC="""Superhydrophobic; Multilayer; Nanocomposite; Dense; Columnar; Self-lubricating; Hydrophobic;
            Gradient""",
        CMT="""Potentiodynamic polarization; Electrochemical impedance spectroscopy; Salt spray test; Pin-on-disc test;
            Scratch test; Profilometry; Contact angle measurement; Weight loss measurements;
            Scanning vibrating electrode technique; Open circuit potential measurement;
            Glow discharge optical emission spectroscopy; Scanning Kelvin probe;
            Electrochemical noise measurement; Ball-on-disc wear test; 3D optical profilometry;
            Pull-off adhesion test; Cross-cut adhesion test; Thermal cycling test; Immersion test;
            Nanoscratch test; X-ray stress analysis""",
        SPL="Fm-3m; R-3c; Corundum",
    ),
    _topic(
        "carbon_2d",
        "Carbon nanomaterials and 2D materials",
        "N; B; S; P; F; O; Co; Fe",
        CHM="""Graphene; Graphene oxide; Reduced graphene oxide; Carbon nanotubes; Single-walled carbon nanotubes;
            Multi-walled carbon nanotubes; C60; Carbon quantum dots; Graphite; Diamond; Nanodiamond;
            Hexagonal boron nitride; MoS2; WS2; WSe2; MoSe2; Black phosphorus; Ti3C2Tx; Ti3AlC2; Graphdiyne;
            Silicene; Borophene; Carbon fiber; Carbon black; g-C3N4; Nitrogen-doped graphene; NbSe2;
            Graphene quantum dots; Hydrazine; MXenes; Amorphous carbon; Carbon aerogel; Fullerenes; PtSe2;
            In2Se3; Twisted bilayer graphene""",
        PRO="""Young's modulus; Specific surface area; Number of layers; Dirac point; D band; G band; ID/IG ratio;
            Interlayer spacing; Exfoliation energy; Dispersibility; Flexibility; Transparency; Band structure;
            Quantum Hall effect; Valley polarization; Exciton binding energy; Oxygen-containing functional groups;
            Chirality; Aspect ratio; Charge density wave; EMI shielding effectiveness; Electrical conductivity;
            Thermal conductivity; Carrier mobility; Sheet resistance; Defect density; Tensile strength;
            Adsorption capacity; Photoluminescence quantum yield; Electron transport;
            Ballistic transport; Interlayer coupling; Layer-dependent band gap; Phonon modes;
            Mechanical strength; Wettability; Oxidation stability; Piezoresistive response;
            Lithium adsorption energy; In-plane stiffness; Thermal expansion""",
        APL="""Transparent conductive films; Flexible electronics; Supercapacitors; EMI shielding; Field emission;
            Membranes; Conductive inks; Thermal management; Nanoelectronics; Valleytronics; Strain sensors;
            Solid lubricants; Composites; Desalination; Hydrogen storage; Transistors;
            Water purification; Quantum emitters; Catalyst supports; Lubricant additives; Gas barrier films""",
        SMT="""Chemical vapor deposition; Hummers method; Modified Hummers method; Liquid-phase exfoliation;
            Mechanical exfoliation; Chemical reduction; Thermal reduction; Arc discharge; Laser ablation; HF etching;
            Wet transfer; Electrochemical exfoliation""",
        DSC="""Two-dimensional; Monolayer; Few-layer; Multilayer; Nanosheets; Freestanding; Vertically aligned;
            Functionalized; Wrinkled; Van der Waals heterostructures""",
        CMT="""Raman spectroscopy; Atomic force microscopy; Scanning tunneling microscopy;
            Angle-resolved photoemission spectroscopy; Selected area electron diffraction;
            Low-energy electron diffraction; Electron energy loss spectroscopy; Four-point probe;
            Photoluminescence mapping; Nitrogen adsorption-desorption;
            Tip-enhanced Raman spectroscopy; Field emission measurements; Four-dimensional STEM;
            Conductive atomic force microscopy; Thermogravimetric analysis; Optical contrast microscopy""",
        SPL="P63/mmc; Fd-3m; P-3m1; 2H phase; 1T phase; 1T' phase",
    ),
    _topic(
        "ferroelectrics",
        "Ferroelectrics, piezoelectrics and dielectric ceramics",
        "La; Nb; Mn; Ca; Sr; Zr; Sm; Li",
        CHM="""BaTiO3; PbTiO3; Pb(Zr,Ti)O3; (K,Na)NbO3; BiFeO3; SrTiO3; LiNbO3; LiTaO3; (Bi0.5Na0.5)TiO3; PMN-PT;
            Hf0.5Zr0.5O2; AlN; Polyvinylidene fluoride; P(VDF-TrFE); CaCu3Ti4O12; (Ba,Sr)TiO3; Y2O3; Ta2O5;
            ZrO2; Si3N4; SiC; MgO; Bi4Ti3O12; Sc-doped AlN; BaZrO3; KTaO3; Lead magnesium niobate; SrBi2Ta2O9;
            Al2O3; HfO2; ZnO; Glass-ceramics; Mullite""",
        PRO="""Dielectric constant; Dielectric loss; Permittivity; Ferroelectricity; Remanent polarization;
            Spontaneous polarization; Coercive field; Piezoelectric coefficient; d33; Electromechanical coupling factor;
            Curie temperature; Energy storage density; Energy storage efficiency; Breakdown strength; Leakage current;
            Polarization fatigue; Relaxor behavior; Phase transition; Tetragonality; Domain structure;
            Piezoelectricity; Pyroelectric coefficient; Electrocaloric effect; Quality factor;
            Temperature coefficient of resonant frequency; Electric-field-induced strain; Morphotropic phase boundary;
            Relative density; Sinterability; Flexural strength; Fracture toughness; Second harmonic generation;
            Electro-optic coefficient; Grain growth; Thermal shock resistance;
            Depolarization temperature; Dielectric tunability; Mechanical quality factor; Negative capacitance;
            Wake-up effect; Imprint; Domain switching; Recoverable energy density; Diffuse phase transition;
            Temperature stability; Hardness""",
        APL="""Capacitors; Multilayer ceramic capacitors; Piezoelectric sensors; Actuators; Energy harvesting;
            Piezoelectric nanogenerators; Ferroelectric memories; Ultrasonic transducers; Microwave devices;
            Pulsed power; Electro-optic modulators; Electrocaloric cooling; Refractories; Nonvolatile memory;
            Cutting tools; Surface acoustic wave devices;
            Sonar; Medical ultrasound imaging; Tunable microwave devices;
            Ferroelectric field-effect transistors; High-voltage capacitors""",
        SMT="""Solid-state reaction; Spark plasma sintering; Two-step sintering; Tape casting; Hot pressing;
            Pulsed laser deposition; Sol-gel; Molten salt synthesis; Electric poling; Templated grain growth;
            Cold sintering; Microwave sintering; Sintering""",
        DSC="""Ceramic; Relaxor; Lead-free; Textured; Epitaxial; Dense; Nanograined; Core-shell; Polycrystalline""",
        CMT="""P-E hysteresis loops; Piezoresponse force microscopy; Dielectric spectroscopy; Quasi-static d33 meter;
            Rietveld refinement; Archimedes method; PUND measurements; Laser Doppler vibrometry;
            Second harmonic generation microscopy; Impedance analyzer;
            Resonance-antiresonance method; Berlincourt method; In situ electric-field synchrotron XRD;
            Thermally stimulated depolarization current; Temperature-dependent Raman spectroscopy;
            Ferroelectric hysteresis measurements""",
        SPL="P4mm; R3m; R3c; Pm-3m; Amm2; Pca21; Perovskite structure",
    ),
    _topic(
        "luminescence",
        "Luminescence, phosphors and photonics",
        "Eu; Tb; Ce; Er; Yb; Mn; Tm; Bi",
        CHM="""Y3Al5O12:Ce3+; Eu3+; Tb3+; Ce3+; Er3+; Yb3+; Tm3+; Mn4+; Eu2+; NaYF4; NaYF4:Yb,Er; CaAlSiN3:Eu2+;
            SrAl2O4:Eu,Dy; CdSe; CdSe/ZnS; InP; CsPbBr3; Carbon quantum dots; Y2O3; ZnS; Alq3; Ir(ppy)3;
            Rhodamine 6G; Silica; Chalcogenide glass; Nd:YAG; Ti:sapphire; Upconversion nanoparticles; Gold;
            Silver; K2SiF6:Mn4+; Ba2SiO4:Eu2+; LaPO4; Gd2O3; CaF2; Lanthanide complexes""",
        PRO="""Photoluminescence; Emission intensity; Quantum yield; Photoluminescence quantum yield;
            Luminescence lifetime; Emission wavelength; Color purity; Color rendering index;
            Correlated color temperature; Thermal quenching; Upconversion luminescence; Persistent luminescence;
            Energy transfer; Concentration quenching; Stokes shift; Full width at half maximum; Refractive index;
            Nonlinear optical properties; Optical absorption; Transmittance; Optical band gap;
            Surface plasmon resonance; Electroluminescence; External quantum efficiency; Luminous efficacy;
            CIE chromaticity coordinates; Third-order nonlinear susceptibility; Optical loss; Lasing threshold;
            Photostability; Thermal stability; Optical properties;
            Internal quantum efficiency; Decay time; Blinking; Afterglow duration; Emission bandwidth;
            Crystal field splitting; Nephelauxetic effect; Upconversion efficiency; Brightness;
            Color tunability; Absorption cross section""",
        APL="""White light-emitting diodes; Phosphor-converted LEDs; Displays; OLEDs; Lasers; Solid-state lighting;
            Bioimaging; Optical thermometry; Anti-counterfeiting; Optical fibers; Waveguides; Optical sensors;
            Scintillators; SERS substrates; Optical data storage; Laser diodes; Light-emitting diodes;
            Photonic devices;
            Plant growth lighting; Medical diagnostics; Security inks; Near-infrared light sources;
            Luminescent solar concentrators; X-ray imaging""",
        SMT="""Solid-state reaction; Hot-injection method; Combustion synthesis; Co-precipitation; Solvothermal method;
            Ligand-assisted reprecipitation; Melt-quenching; Ion exchange; Thermal decomposition; Czochralski method;
            Flux growth""",
        DSC="""Luminescent; Nanocrystals; Quantum dots; Colloidal; Transparent; Glassy; Rare-earth-doped;
            Monodisperse; Core-shell""",
        CMT="""Photoluminescence excitation spectroscopy; Time-resolved photoluminescence;
            Fluorescence lifetime measurement;
            Integrating sphere measurement; Cathodoluminescence; Thermoluminescence; Z-scan technique; Ellipsometry;
            Fluorescence spectroscopy; Electroluminescence spectroscopy; Photoluminescence spectroscopy;
            X-ray excited luminescence; Single-particle spectroscopy; Two-photon excited fluorescence;
            Fluorescence microscopy; Electron paramagnetic resonance; Absorption spectroscopy""",
        SPL="Ia-3d; Ia-3; Fm-3m; Cmc21; P63/m",
    ),
    _topic(
        "superconductors",
        "Superconductivity and quantum materials",
        "Sr; Ca; K; Co; Ni; La; Se; Te",
        CHM="""YBa2Cu3O7; Bi2Sr2CaCu2O8; Bi2Sr2Ca2Cu3O10; La2-xSrxCuO4; HgBa2Ca2Cu3O8; MgB2; Nb3Sn; NbTi; Niobium;
            NbN; LaFeAsO; BaFe2As2; FeSe; H3S; LaH10; Sr2RuO4; Bi2Se3; Bi2Te3; NbSe2; CeCoIn5; UTe2; CsV3Sb5;
            Twisted bilayer graphene; Nd0.8Sr0.2NiO2; La3Ni2O7; Cuprates; Iron pnictides; SmB6; TaAs; Cd3As2;
            MnBi2Te4; FeTe0.5Se0.5; Ba1-xKxFe2As2; REBCO""",
        PRO="""Superconductivity; Critical temperature; Critical current density; Upper critical field; Meissner effect;
            Superconducting gap; Coherence length; Penetration depth; Flux pinning; Pairing symmetry; Pseudogap;
            Charge density wave; Spin density wave; Topological surface states; Quantum anomalous Hall effect;
            Berry curvature; Weyl fermions; Electron-phonon coupling; Fermi surface; Isotope effect;
            Irreversibility field; Nematicity; Heavy fermion behavior; Metal-insulator transition;
            Specific heat jump; Josephson effect; Strange metal behavior; Magnetoresistance; Néel temperature;
            Zero resistance; Diamagnetism; Lower critical field; Vortex dynamics; Superfluid density;
            Kinetic inductance; Quantum criticality; Hall coefficient; Spin fluctuations; Orbital ordering;
            Kondo effect; Superconducting dome""",
        APL="""Superconducting magnets; Superconducting wires; Superconducting cables; Fault current limiters;
            Quantum computing; Qubits; SQUID sensors; Maglev; Particle accelerators; Fusion reactors;
            Topological quantum computing; Josephson junctions; Coated conductors; Magnetic resonance imaging;
            Power transmission; High-field magnets; Superconducting electronics; Single-photon detectors;
            Superconducting magnetic energy storage""",
        SMT="""Pulsed laser deposition; Solid-state reaction; Flux growth; Floating zone method; Molecular beam epitaxy;
            Powder-in-tube method; High-pressure synthesis; Chemical vapor transport; Melt-textured growth;
            Metal-organic deposition; Bridgman method""",
        DSC="""Single crystal; Epitaxial; Layered; Underdoped; Optimally doped; Overdoped; Moiré; Unconventional""",
        CMT="""Angle-resolved photoemission spectroscopy; Scanning tunneling spectroscopy; Muon spin rotation;
            Electrical resistivity measurement; Specific heat measurement; Inelastic neutron scattering;
            Quantum oscillation measurements; Resonant inelastic X-ray scattering; Physical property measurement system;
            Point-contact Andreev reflection spectroscopy; SQUID magnetometry;
            Optical conductivity measurements; Ultrafast pump-probe spectroscopy;
            AC susceptibility measurements; Microwave surface impedance measurements;
            Nernst effect measurements; Magnetotransport measurements; High-pressure X-ray diffraction""",
        SPL="I4/mmm; Pmmm; P6/mmm; P4/nmm; Im-3m; Pm-3n; A15",
    ),
)

# Topics whose communities overlap, so that cross-topic ("bridge") links, the kind of links new
# discoveries tend to be, join fields that plausibly meet.
RELATED: tuple[tuple[str, str], ...] = (
    ("energy_storage", "carbon_2d"), ("energy_storage", "electrocatalysis"), ("energy_storage", "polymers"),
    ("energy_storage", "ferroelectrics"), ("electrocatalysis", "heterogeneous_catalysis"),
    ("electrocatalysis", "photocatalysis"), ("electrocatalysis", "carbon_2d"),
    ("heterogeneous_catalysis", "photocatalysis"), ("photocatalysis", "semiconductors"),
    ("photocatalysis", "photovoltaics"), ("photovoltaics", "semiconductors"), ("photovoltaics", "luminescence"),
    ("semiconductors", "luminescence"), ("semiconductors", "carbon_2d"), ("semiconductors", "ferroelectrics"),
    ("semiconductors", "thermoelectrics"), ("structural_alloys", "coatings"), ("structural_alloys", "magnetism"),
    ("structural_alloys", "biomaterials"), ("polymers", "biomaterials"), ("polymers", "coatings"),
    ("polymers", "carbon_2d"), ("biomaterials", "coatings"), ("biomaterials", "luminescence"),
    ("magnetism", "superconductors"), ("magnetism", "ferroelectrics"), ("magnetism", "biomaterials"),
    ("thermoelectrics", "superconductors"), ("carbon_2d", "superconductors"),
)

# Hubs: names that co-occur with almost everything of their field, most generic first.
GENERIC: dict[str, tuple[str, ...]] = {
    "CHM": _names(
        """Carbon; Oxygen; Water; Hydrogen; Nitrogen; Silicon; Gold; Silver; Copper; Iron; Aluminum; Titanium;
        Nickel; Ethanol; Metal oxides; SiO2; Al2O3; Zinc oxide; Platinum; Metals"""
    ),
    "PRO": _names(
        """Structure; Stability; Morphology; Microstructure; Crystal structure; Composition; Surface area;
        Particle size; Thermal stability; Mechanical properties; Optical properties; Electronic structure;
        Electrical conductivity; Thermal conductivity; Density; Porosity; Crystallinity; Band gap; Performance;
        Efficiency; Activity; Surface morphology; Defects; Phase composition; Lattice parameters;
        Chemical composition; Physical properties; Electrochemical properties; Magnetic properties; Durability;
        Conductivity; Temperature dependence; Interface; Binding energy"""
    ),
    "APL": _names(
        """Catalysts; Electrodes; Sensors; Devices; Coatings; Energy storage; Energy conversion; Electronics;
        Composites; Membranes; Biomedical applications; Optoelectronics; Environmental applications"""
    ),
    "SMT": _names(
        """Annealing; Calcination; Sintering; Hydrothermal method; Sol-gel; Solid-state reaction;
        Chemical vapor deposition; Heat treatment; Precipitation; Ball milling; Doping; Spin coating; Sputtering"""
    ),
    "DSC": _names(
        """Nanoparticles; Thin film; Nanostructures; Amorphous; Porous; Crystalline; Nanocomposite; Nanocrystalline;
        Single crystal; Bulk; Polycrystalline; Composite; Nanosheets; Nanorods; Nanowires; Layered; Doped;
        Hierarchical"""
    ),
    "CMT": _names(
        """XRD; SEM; TEM; XPS; FTIR; Raman spectroscopy; EDS; HRTEM; UV-vis spectroscopy; TGA; BET; DFT calculations;
        Photoluminescence spectroscopy; AFM; NMR spectroscopy; SAED; Differential scanning calorimetry;
        Rietveld refinement; Optical microscopy"""
    ),
    "SPL": _names("Cubic; Hexagonal; Tetragonal; Orthorhombic; Monoclinic; Rhombohedral; Trigonal; Triclinic"),
}

# Variants for types whose vocabulary runs out: "{}" keeps the base name, "{l}" lower-cases its
# first word where that is an ordinary word ("Ionic conductivity" -> "ionic conductivity").
PREFIXES: dict[str, tuple[str, ...]] = {
    "PRO": (
        "Room-temperature {l}", "Temperature dependence of {l}", "Enhanced {l}", "Intrinsic {l}",
        "Anisotropic {l}", "Size-dependent {l}", "Thickness-dependent {l}", "Local {l}", "Interfacial {l}",
        "Theoretical {l}", "Strain-dependent {l}", "Long-term {l}", "Pressure dependence of {l}",
    ),
    "APL": (
        "Advanced {l}", "Low-cost {l}", "Large-scale {l}", "Next-generation {l}", "Sustainable {l}",
        "Industrial {l}", "High-efficiency {l}", "Practical {l}", "Emerging {l}", "Commercial {l}", "Green {l}",
    ),
    "SMT": (
        "Modified {l}", "Low-temperature {l}", "Two-step {l}", "Scalable {l}", "Improved {l}", "Rapid {l}",
        "Conventional {l}", "Optimized {l}", "Facile {l}", "Controlled {l}",
    ),
    # A descriptor prefix only qualifies an "<adjective> <noun>" descriptor ("Ultrathin porous nanosheets").
    "DSC": (
        "Ultrathin {l}", "Uniform {l}", "Hollow {l}", "Well-dispersed {l}", "Highly crystalline {l}",
        "Ultrasmall {l}", "Vertically aligned {l}", "Interconnected {l}", "Three-dimensional {l}",
        "Monodisperse {l}",
    ),
    "CMT": (
        "In situ {l}", "Operando {l}", "High-resolution {l}", "Temperature-dependent {l}", "Quantitative {l}",
        "Ex situ {l}", "Time-resolved {l}", "Automated {l}", "Combined {l}", "Low-temperature {l}",
    ),
    "SPL": (
        "Metastable {l}", "High-pressure {l}", "High-temperature {l}", "Low-temperature {l}", "Distorted {l}",
        "Pseudo-{l}", "Disordered {l}", "Ordered {l}", "Strained {l}", "Modulated {l}",
    ),
}
SUFFIXES: dict[str, tuple[str, ...]] = {
    "PRO": (
        "{} at high temperature", "{} at low temperature", "{} under strain", "{} under pressure",
        "{} enhancement", "{} of nanostructures", "{} of thin films", "{} at grain boundaries",
    ),
    "APL": ("{} in harsh environments", "{} at elevated temperature", "{} under ambient conditions",
            "{} at industrial scale", "{} for space environments"),
    "SMT": ("{} route", "{} under inert atmosphere", "{} with post-annealing", "{} in air",
            "{} at reduced pressure", "{} followed by calcination"),
    "DSC": tuple(
        "{} " + noun
        for noun in _names(
            """nanoparticles; nanosheets; thin films; nanorods; nanowires; nanofibers; microspheres; nanocrystals;
            nanotubes; films; particles; nanoplates; nanocubes; coatings; monoliths; foams; powders; frameworks;
            membranes; fibers; clusters; crystals"""
        )
    ),
    "CMT": ("{} analysis", "{} measurements", "{} mapping", "{} depth profiling", "{} under bias",
            "{} with in situ heating"),
    "SPL": ("{} phase", "{} polymorph", "{} superstructure", "{} modification", "{} variant"),
}
# Descriptors that are nouns, so cannot qualify a noun in a derived descriptor.
_NOUN_DESCRIPTORS = set(
    _names(
        """Heterojunction; Thin film; Z-scheme; S-scheme; Heterostructure; Block copolymer; Hydrogel;
        Bulk heterojunction; Bulk; Aerogel; Bulk metallic glass; Crystalline framework; Composite; Nanocomposite"""
    )
)

# First words that keep their capital when a prefix is put in front ("Temperature dependence of Seebeck ...").
_PROPER = {
    "Seebeck", "Curie", "Néel", "Hall", "Hall-Petch", "Young's", "Vickers", "Poisson's", "Debye", "Fermi",
    "Dirac", "Lorenz", "Grüneisen", "Josephson", "Meissner", "Weyl", "Berry", "Langmuir", "Schottky",
    "Gilbert", "Brønsted", "Lewis", "Coulombic", "Mössbauer", "Kelvin", "Rietveld", "Archimedes", "Raman",
    "Hummers", "Mott-Schottky", "Czochralski", "Bridgman", "Van", "Charpy", "CIE", "Stokes", "Faradaic",
    "Prussian", "Nafion", "Dzyaloshinskii-Moriya", "Peltier", "Thomson", "Kondo", "Nernst", "Berlincourt",
    "Brillouin", "Kerr", "ELISA", "Inconel", "Vitreloy", "Zircaloy-4", "Permalloy", "Finemet", "Alnico", "Heusler",
    "Hexagonal", "Cubic",
}


def lower_first(name: str) -> str:
    """'Ionic conductivity' -> 'ionic conductivity'; acronyms, formulas and eponyms are kept."""
    first = name.split(" ", 1)[0]
    letters = first.replace("-", "")
    # Element symbols ("Pd"), ions ("Tb3+"), formulas and acronyms are not words.
    word = letters.isalpha() and letters[0].isupper() and letters[1:].islower()
    if first in _PROPER or len(letters) < 3 or not word:
        return name
    return name[0].lower() + name[1:]


def _apply(template: str, base: str) -> str:
    return template.replace("{l}", lower_first(base)).replace("{}", base)


@dataclass(frozen=True)
class Vocabulary:
    """Names of one node type, with topic membership (indices into TOPICS; empty for hubs)."""

    names: tuple[str, ...]
    topics: tuple[tuple[int, ...], ...]
    hub_rank: tuple[int, ...]  # rank among GENERIC names, -1 for topical names
    derived: tuple[bool, ...]
    topic_rank: tuple[int, ...]  # best position of the (base) name in a topic list; 0 = most canonical
    topic_position: tuple[float, ...]  # that position as a fraction of the list: neighbours in a list are close kin


def genuine(node_type: str) -> dict[str, tuple[tuple[int, ...], int, float]]:
    """Topical names of a type -> (topics, rank, position), interleaved across topics, canonical first.

    A name listed by several topics belongs to the (at most) two where it ranks most canonically;
    ``rank`` is its best position in a topic list (0 = the topic's flagship name) and ``position``
    the same as a fraction of that list's length.
    """
    listed: dict[str, list[tuple[int, int]]] = {}
    lists = [t.names[node_type] for t in TOPICS]
    for pos in range(max(len(names) for names in lists)):
        for ti, names in enumerate(lists):
            if pos < len(names):
                listed.setdefault(names[pos], []).append((pos, ti))
    out = {}
    for name, pt in listed.items():
        best = sorted(pt)[:MAX_TOPICS]
        pos, ti = best[0]
        out[name] = (tuple(t for _, t in best), pos, pos / len(lists[ti]))
    return out


@lru_cache(maxsize=64)
def vocabulary(node_type: str, n: int) -> Vocabulary:
    """Exactly ``n`` unique names of ``node_type``: hubs, then genuine topical names, then derived ones.

    Hubs take at most a quarter of the names; derived names inherit their base's topics and rank
    (a variant of a hub, e.g. "In situ XRD", belongs to no topic and is not itself a hub).
    """
    generic = GENERIC[node_type]
    topical = {k: v for k, v in genuine(node_type).items() if k not in generic}
    n_hub = min(len(generic), -(-n // 4))
    rows: list[tuple] = [(g, (), i, False, i, 0.0) for i, g in enumerate(generic[:n_hub])]
    rows += [(name, ts, -1, False, rank, pos) for name, (ts, rank, pos) in topical.items()][: n - len(rows)]
    if len(rows) < n:
        bases = dict(topical)
        if node_type != "CHM":
            bases.update({g: ((), i, 0.0) for i, g in enumerate(generic)})
        seen = {r[0] for r in rows} | set(generic)
        for name, base in _derivations(node_type, bases):
            if name in seen:
                continue
            seen.add(name)
            ts, rank, pos = bases[base]
            rows.append((name, ts, -1, True, rank, pos))
            if len(rows) == n:
                break
    if len(rows) < n:
        raise ValueError(f"the {node_type} vocabulary yields {len(rows)} names; {n} requested")
    return Vocabulary(*zip(*rows))


def _derivations(node_type: str, bases: dict[str, tuple]):
    """(name, base) variants, rotating templates across bases so that small counts look varied."""
    if node_type == "CHM":
        yield from _material_derivations(list(bases), bases)
        return
    names = list(bases)
    prefixes, suffixes = PREFIXES[node_type], SUFFIXES[node_type]
    if node_type == "DSC":
        names = [b for b in names if not b.endswith("s") and b not in _NOUN_DESCRIPTORS]
        prefixes_alone: tuple[str, ...] = ()
    else:
        prefixes_alone = prefixes
    for level in (prefixes_alone + suffixes, [(p, s) for p in prefixes for s in suffixes]):
        for r in range(len(level)):
            for i, b in enumerate(names):
                t = level[(i + r) % len(level)]
                yield (_apply(t[0], _apply(t[1], b)) if isinstance(t, tuple) else _apply(t, b)), b


def _material_derivations(bases: list[str], topical: dict[str, tuple]):
    """Materials doped with their topic's usual dopants, then binary composites within a topic."""
    rounds = max(len(t.dopants) for t in TOPICS)
    for r in range(rounds):
        for i, b in enumerate(bases):
            topic = TOPICS[topical[b][0][0]]
            d = topic.dopants[(i + r) % len(topic.dopants)]
            if b.endswith("+") or re.search(rf"{re.escape(d)}(?![a-z])", b):
                continue  # no doped ions, no "Co-doped CoFe2O4" (the dopant is already a constituent)
            yield topic.pattern.replace("{d}", d).replace("{lb}", lower_first(b)).replace("{b}", b), b
    members: list[list[str]] = [[] for _ in TOPICS]
    for b in bases:
        members[topical[b][0][0]].append(b)
    for r in range(1, max(len(m) for m in members)):
        for group in members:
            for i, b in enumerate(group):
                if r < len(group):
                    yield f"{b}/{lower_first(group[(i + r) % len(group)])} composite", b
