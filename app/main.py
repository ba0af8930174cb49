"""`panel serve app`: the SG-MCMC lab, one independent lab per browser session.

Bokeh runs this file as a directory app; the `app` package it imports is the installed one
(`pip install -e .`), or this checkout's when the server is started from the repository root
with `python -m panel serve app`.
"""
import panel as pn

from app.views.connection import watch_connection
from app.views.page import AppView
from app.views.process import prepare_process

pn.extension("katex", "mathjax", sizing_mode="stretch_width", notifications=False)
# Without a viewport meta a phone lays the page out 980 px wide (lesson text ~5 px, and the narrow-screen
# CSS never applies); Panel extends its base page with a template given as a string.
VIEWPORT = ('{% block preamble %}{{ super() }}'
            '<meta name="viewport" content="width=device-width, initial-scale=1">{% endblock %}')
pn.state.curdoc.template = VIEWPORT

prepare_process()
location = pn.state.location
search = location.search if location is not None else ""
view = AppView(search)
view.start(pn.state.curdoc, location)
watch_connection(pn.state.curdoc)
# a bound method, not a lambda over a module global: Bokeh clears this module's globals after the run
pn.state.on_session_destroyed(view.on_session_destroyed)
view.servable(title="SG-MCMC lab")
