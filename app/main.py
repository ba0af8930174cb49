"""`panel serve app`: the SG-MCMC lab, one independent lab per browser session.

Bokeh runs this file as a directory app; the `app` package it imports is the installed one
(`pip install -e .`), or this checkout's when the server is started from the repository root
with `python -m panel serve app`.
"""
import gc
import os

import panel as pn
from bokeh.settings import settings

from app.views.frame_loop import quiet_closed_sockets
from app.views.page import AppView, quiet_late_messages

pn.extension("katex", "mathjax", sizing_mode="stretch_width", notifications=False)
# Without a viewport meta a phone lays the page out 980 px wide (lesson text ~5 px, and the narrow-screen
# CSS never applies); Panel extends its base page with a template given as a string.
VIEWPORT = ('{% block preamble %}{{ super() }}'
            '<meta name="viewport" content="width=device-width, initial-scale=1">{% endblock %}')
pn.state.curdoc.template = VIEWPORT

quiet_closed_sockets()
quiet_late_messages()
# Panel runs a full gc.collect() after sessions end (panel/io/document.py), and a full collection walks
# every tracked object, the imports' ~200 000 (sympy, numpy, Bokeh, Panel) that live as long as the
# process included. Frozen once, before the first session builds anything, they are left out of it.
if not gc.get_freeze_count():
    gc.collect()
    gc.freeze()
# Bokeh checks each new document's models (it logs what it finds), a tenth of a lab page open's CPU:
# the browser tests keep the check (tests/app_browser_support.py sets BOKEH_VALIDATE_DOC=true), a
# server skips it unless its environment asks for it.
if "BOKEH_VALIDATE_DOC" not in os.environ:
    settings.perform_document_validation.set_value(False)
location = pn.state.location
search = location.search if location is not None else ""
view = AppView(search)
view.start(pn.state.curdoc, location)
# a bound method, not a lambda over a module global: Bokeh clears this module's globals after the run
pn.state.on_session_destroyed(view.on_session_destroyed)
view.servable(title="SG-MCMC lab")
