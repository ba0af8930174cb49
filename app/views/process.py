"""What a server process sets up once, before its first session (app/main.py runs per session)."""
from __future__ import annotations

import gc
import os

from bokeh.settings import settings

from . import bokeh_speedups
from .frame_loop import quiet_closed_sockets
from .page import quiet_late_messages

_prepared = False


def prepare_process() -> None:
    global _prepared
    if _prepared:
        return
    _prepared = True
    quiet_closed_sockets()
    quiet_late_messages()
    bokeh_speedups.install()      # a fifth less server CPU per page open (see its docstring)
    # Panel runs a full gc.collect() after sessions end (panel/io/document.py), and a full collection walks
    # every tracked object, the imports' ~200 000 (sympy, numpy, Bokeh, Panel) that live as long as the
    # process included. Frozen once, before the first session builds anything, they are left out of it.
    # (A flag, not gc.get_freeze_count(): that counts the frozen objects one by one, tens of ms per call.)
    gc.collect()
    gc.freeze()
    # Bokeh checks each new document's models (it logs what it finds), a tenth of a lab page open's CPU, and
    # the signature of each callback Panel registers on a model ("expensive error diagnostics", Bokeh's words;
    # inspect.signature, hundreds per page): both are checks of the app's own code, which the browser tests
    # keep (tests/app_browser_support.py sets both variables to true); a server skips them unless its
    # environment asks for them.
    if "BOKEH_VALIDATE_DOC" not in os.environ:
        settings.perform_document_validation.set_value(False)
    if "BOKEH_PERFORM_ERROR_DIAGNOSTICS" not in os.environ:
        settings.perform_error_diagnostics.set_value(False)
