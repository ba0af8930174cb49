"""`panel serve app`: the SG-MCMC lab, one independent lab per browser session.

Bokeh runs this file as a directory app with app/ on sys.path only while it executes; the
repository root goes on sys.path for good so `app.*` imports (including lazy ones inside
callbacks) resolve the same way in the server, in tests and in benchmarks.
"""
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import panel as pn  # noqa: E402

from app.views.app import AppView  # noqa: E402

pn.extension("katex", "mathjax", sizing_mode="stretch_width", notifications=False)

location = pn.state.location
search = location.search if location is not None else ""
view = AppView(search)
view.start(pn.state.curdoc, location)
# a bound method, not a lambda over a module global: Bokeh clears this module's globals after the run
pn.state.on_session_destroyed(view.on_session_destroyed)
view.servable(title="SG-MCMC lab")
