"""What a server process sets up once, before its first session (app/main.py runs per session)."""
from __future__ import annotations

import gc
import importlib
import os

import threadpoolctl
from bokeh.settings import settings

from . import bokeh_speedups
from .frame_loop import quiet_closed_sockets
from .page import quiet_late_messages

_prepared = False
_warm = False

# What a frame, a build or a Models build imports lazily, imported here once, on the event loop's thread before
# the first session. First imported on a worker instead, a module sits half-initialised in sys.modules while
# the loop's frames look it up there (Bokeh's `stream` and narwhals read sys.modules["pandas"]): a logistic
# regression opened in one session once stopped every session's run with "partially initialized module
# 'pandas' has no attribute 'Series'" (issue 28). tests/test_frame_loop.py checks that a frame and every
# Models build import nothing more.
FIRST_USE = (
    "pandas", "narwhals", "contourpy",                    # Bokeh's stream and contour_data look these up
    # the Models page's data (logistic-digits, lda-reuters); load_digits finds its files as packages
    "sklearn.datasets", "sklearn.datasets.data", "sklearn.datasets.descr", "lda.datasets",
    # sympy's own lazy imports, met by a typed potential's build and lambdify
    "sympy.codegen.ast", "sympy.combinatorics", "sympy.tensor.tensor", "sympy.sets.setexpr",
    "sympy.assumptions.wrapper",
)


def import_first_use() -> None:
    for name in FIRST_USE:
        importlib.import_module(name)


def prepare_process() -> None:
    global _prepared
    if _prepared:
        return
    _prepared = True
    quiet_closed_sockets()
    quiet_late_messages()
    warm()


def warm() -> None:
    """What prepare_process does that needs no event loop: also run, once, by the parent of a deployment's Panel
    process before it forks it (deploy/lab_process.py), which then inherits it all."""
    global _warm
    if _warm:
        return
    _warm = True
    # One BLAS thread in the server (its workers inherit it): the compute pool forks workers from threads, and
    # OpenBLAS's fork handler waits for its own threads to finish the call another thread has under way, which
    # never happens (a server hung in blas_thread_shutdown_, issue 28); two cores shared by the sessions and the
    # pool's workers gain nothing from BLAS threads either.
    threadpoolctl.threadpool_limits(1)
    bokeh_speedups.install()      # a fifth less server CPU per page open (see its docstring)
    import_first_use()
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
