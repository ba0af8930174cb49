"""The reference for benchmarks/page_open.py: a plain Panel app of about the lab's size, a BootstrapTemplate
with 4 Bokeh figures and 9 widgets, none of the lab's own code. `panel serve benchmarks/bare_app`
serves it at /bare_app.
"""
import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure

pn.extension(sizing_mode="stretch_width")

rng = np.random.default_rng(0)
x = np.linspace(-3, 3, 200)
samples = rng.normal(size=1000)
top, edges = np.histogram(samples, bins=60, density=True)


def _figure(name: str):
    return figure(height=260, sizing_mode="stretch_width", name=name, tools="pan,wheel_zoom,reset,save")


hist = _figure("bare-hist")
hist.quad(top=top, bottom=0, left=edges[:-1], right=edges[1:], alpha=0.6)
hist.line(x, np.exp(-x**2 / 2) / np.sqrt(2 * np.pi), color="black")
trace = _figure("bare-trace")
trace.line(np.arange(500), np.cumsum(rng.normal(size=500)))
scatter = _figure("bare-scatter")
scatter.scatter(source=ColumnDataSource({"x": rng.normal(size=300), "y": rng.normal(size=300)}), size=4)
kl = _figure("bare-kl")
kl.line(np.arange(100), np.exp(-np.arange(100) / 30))

widgets = [
    pn.widgets.Select(name="Target", options=["gaussian", "double-well", "banana"]),
    pn.widgets.Select(name="Sampler", options=["sgld", "sghmc", "sgrld"]),
    pn.widgets.FloatInput(name="eps", value=0.1),
    pn.widgets.FloatInput(name="C", value=1.0),
    pn.widgets.IntInput(name="Chains", value=1000),
    pn.widgets.IntSlider(name="Speed", start=1, end=50, value=5),
    pn.widgets.Checkbox(name="Compare"),
    pn.widgets.Button(name="Play", button_type="primary"),
    pn.widgets.Button(name="Reset"),
]

template = pn.template.BootstrapTemplate(title="Bare reference app")
template.sidebar.extend(widgets)
template.main.append(pn.Column(hist, trace, scatter, kl))
template.servable()
