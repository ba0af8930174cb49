"""The live lab (placeholder until the app issue lands): shows the registry and a potential."""
import panel as pn

from samplers.potentials import preset_names
from samplers.registry import REGISTRY, sampler_names

pn.extension()

names = sampler_names()
rows = "\n".join(f"| `{n}` | {REGISTRY[n].title} | {REGISTRY[n].source} |" for n in names)
pn.Column(
    "# SG-MCMC lab",
    "The samplers of the complete recipe:\n\n| name | sampler | source |\n|---|---|---|\n" + rows,
    "Potentials: " + ", ".join(f"`{p}`" for p in preset_names()),
).servable(title="SG-MCMC lab")
