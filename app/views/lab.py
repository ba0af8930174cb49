"""The lab page: controls on the left, live plots and metrics on the right, the recipe below.

The frame loop runs only while playing, on this session's document: each frame advances the
runs and updates the ColumnDataSources directly, all sent to the page as one message (see
`_one_message`), then schedules the next frame FRAME_MS after its own start. (A fixed-period periodic callback skips a whole period
whenever a frame ends late, which under load with many sessions halves the frame rate; a
self-scheduled one just runs a little later.) The loop stops with the session.
"""
from __future__ import annotations

import contextlib
import html
import time

import panel as pn
from bokeh.layouts import column
from panel.viewable import Viewer

from ..exports import samples_csv, samples_npz
from ..model import RESIDUAL_OK, Lab
from ..plots import KLHistory, RunPlots
from .controls import CompareControls, PotentialPicker, RunControls, SamplerPicker
from .recipe_editor import RecipeEditor, residual_badge

FRAME_MS = 40          # 25 frames per second at most; a frame costs a few ms at 10^4 chains
TEXT_EVERY_S = 0.25    # the metrics numbers refresh 4 times a second (see RunPlots.update)


class LabView(Viewer):
    """The lab page; `compact` is the plots and messages alone (a lesson's embedded demo)."""

    def __init__(self, lab: Lab | None = None, compact: bool = False, **params):
        super().__init__(**params)
        self.lab = lab = lab or Lab()
        self.compact = compact
        self.cfg = lab.config
        self.frames = 0
        self.frame_seconds = 0.0
        self._cb = None
        self._loop_id = 0
        self._text_at = 0.0
        self._closed = False
        self._fresh = False
        self._doc = None
        self._in_tick = False
        self.plots: list[RunPlots] = []
        self.kl = None

        self.alert = pn.pane.Alert("", alert_type="warning", visible=False, sizing_mode="stretch_width",
                                   css_classes=["lab-message"], margin=(5, 10))
        self.block_alert = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width",
                                         css_classes=["lab-blocked"], margin=(5, 10))
        self.plot_area = pn.FlexBox(sizing_mode="stretch_width", flex_wrap="wrap", css_classes=["plot-area"])
        self.kl_area = pn.Column(sizing_mode="stretch_width")
        self.main = pn.Column(self.alert, self.block_alert, self.plot_area, self.kl_area,
                              sizing_mode="stretch_width", styles={"flex": "1 1 600px", "min-width": "0"},
                              css_classes=["lab-main"])
        if not compact:
            self._build_page()
        self._scheduled = set()
        lab.param.watch(lambda e: self._with_lock(self._rebuild_plots), "version")
        lab.param.watch(self._on_playing, "playing")
        lab.param.watch(lambda e: self._with_lock(self._push_metrics), "stepped")
        lab.param.watch(self._show_messages, ["message", "blocks", "level"])
        self._rebuild_plots()
        self._show_messages()

    def _build_page(self):
        """The controls, downloads and recipe editor around the plots (the full lab page)."""
        lab = self.lab
        self.csv = pn.widgets.FileDownload(callback=self._csv, filename="samples.csv", label="Samples (CSV)",
                                           button_type="primary", sizing_mode="stretch_width", css_classes=["csv-download"])
        self.npz = pn.widgets.FileDownload(callback=self._npz, filename="samples.npz", label="Samples (NPZ)",
                                           button_type="primary", sizing_mode="stretch_width", css_classes=["npz-download"])
        self.controls = pn.Column(
            pn.pane.HTML("<b>Target</b>", margin=(5, 10)), PotentialPicker(lab),
            pn.pane.HTML("<b>Sampler</b>", margin=(5, 10)), SamplerPicker(lab, "A"),
            pn.pane.HTML("<b>Run</b>", margin=(5, 10)), RunControls(lab),
            CompareControls(lab),
            pn.pane.HTML("<b>Export</b> <span style='font-size:12px;color:#555'>(plots: the save tool of each "
                         "plot gives a PNG; the URL holds the whole configuration)</span>", margin=(5, 10)),
            pn.Row(self.csv, self.npz, sizing_mode="stretch_width"),
            width=340, css_classes=["lab-controls"], styles={"flex": "0 0 340px"}, margin=(0, 5))
        self.editor = RecipeEditor(lab)
        self.recipe_card = pn.Card(self.editor, title="Recipe (H, D, Q) of sampler A — edit D and Q",
                                   sizing_mode="stretch_width", collapsed=False, css_classes=["recipe-card"])
        self.main.append(self.recipe_card)

    def _with_lock(self, fn):
        """Run fn where it may touch Bokeh models directly. Panel runs widget callbacks without the
        document lock; Bokeh refuses direct model changes there, so they wait for the next tick
        (which holds the lock). Several requests before that tick run once."""
        if self._closed:
            return
        doc = self._doc
        if doc is None or doc.session_context is None or self._in_tick:
            fn()
            return
        if fn.__name__ in self._scheduled:
            return
        self._scheduled.add(fn.__name__)

        def run():
            self._scheduled.discard(fn.__name__)
            fn()
        doc.add_next_tick_callback(run)

    # -- plots ----------------------------------------------------------------------
    def _rebuild_plots(self, *_):
        lab = self.lab
        log_view = self.cfg.log_view
        keys = [RunPlots.structure(run, side, log_view) for run, side in zip(lab.runs, lab.sides)]
        if keys and keys == [p.key for p in self.plots]:
            # same shape of figures: keep them and only reset their data (see RunPlots.structure)
            for p, run, side in zip(self.plots, lab.runs, lab.sides):
                p.rebind(run, side)
            if self.kl is not None:
                self.kl.reset([p.title for p in self.plots])
            self._push_metrics()
            return
        # new figures carry their first data already; touching them again in this callback would reach
        # the browser before Panel (which sends new models on the next tick) has sent the models
        self.plots = [RunPlots(run, side, run.label, log_view) for run, side in zip(lab.runs, lab.sides)]
        for p, side in zip(self.plots, lab.sides):
            p.show_metrics(p.last_metrics | self._extra(side))
        self.plot_area.objects = [p.layout() for p in self.plots]
        self._fresh = True            # the next frame waits one round, for Panel to send the new figures
        if self.kl is None or len(self.kl.sources) != len(self.plots):
            self.kl = KLHistory(lab.runs, [p.title for p in self.plots]) if self.plots else None
            self.kl_area.objects = [pn.pane.Bokeh(column(self.kl.fig, sizing_mode="stretch_width"),
                                                  sizing_mode="stretch_width")] if self.kl else []
        else:
            self.kl.reset([p.title for p in self.plots])

    def _extra(self, side):
        if side.residual is None:
            return {}
        ok = side.residual < RESIDUAL_OK
        return {"residual_text": f"{side.residual:.1e} {'✓' if ok else '✗'}"}

    def _push_metrics(self, force_kl: bool = False):
        now = time.monotonic()
        text = not (self.lab.playing and self._in_tick) or now - self._text_at >= TEXT_EVERY_S
        if text:
            self._text_at = now
        ms = [p.update(run, self._extra(side), text) for p, run, side in zip(self.plots, self.lab.runs, self.lab.sides)]
        if self.kl is not None:
            self.kl.update(ms, force_kl or not self.lab.playing)

    # -- frame loop -------------------------------------------------------------------
    def attach(self, doc) -> None:
        """Bind the frame loop to this session's document (called by the app at session start)."""
        self._doc = doc
        if self.lab.playing:
            self._start()

    def _on_playing(self, event):
        if event.new:
            self._start()
        else:
            self._stop()
            self._with_lock(self._push_metrics)   # the numbers of the last frame, now that it paused

    def _start(self):
        doc = self._doc
        if doc is None or self._cb is not None:
            return
        self._loop_id += 1
        self._schedule(self._loop_id, 0)

    def _schedule(self, loop_id, delay_ms):
        def run():
            if loop_id == self._loop_id:       # a stopped (or restarted) loop's late frame does nothing
                self.tick()
        try:
            self._cb = self._doc.add_timeout_callback(run, max(1, int(delay_ms)))
        except Exception:          # the document has gone with its session
            self._cb = None

    def _stop(self):
        self._loop_id += 1
        if self._cb is not None and self._doc is not None:
            try:
                self._doc.remove_timeout_callback(self._cb)
            except ValueError:      # already run, or gone with the session
                pass
        self._cb = None

    def stop(self):
        """End of session: stop the loop, drop the runs (their memory goes with them)."""
        self._closed = True
        self._doc = None              # the document is being destroyed: schedule nothing more on it
        self._stop()
        self.lab.playing = False
        self.lab.runs = []

    def tick(self):
        """One frame: advance, aggregate, update sources (all inside one document hold)."""
        self._cb = None
        if not self.lab.playing:
            return
        t0 = time.perf_counter()
        if self._doc is not None:
            self._schedule(self._loop_id, FRAME_MS)      # the next frame, FRAME_MS after this one started
        if "_rebuild_plots" in self._scheduled or self._fresh:   # the figures of the new runs are not up yet
            self._fresh = False
            return
        self._in_tick = True
        try:
            with self._one_message():
                self.lab.frame()
                self._push_metrics()
        except Exception as err:   # never let a frame kill the session: pause and say why
            self.lab.playing = False
            self.lab.level = "danger"
            self.lab.message = f"the run stopped: {err}"
        finally:
            self._in_tick = False
        self.frames += 1
        self.frame_seconds += time.perf_counter() - t0

    @contextlib.contextmanager
    def _one_message(self):
        """Collect the frame's changes and send them as one PATCH-DOC message. Bokeh's own hold sends
        one message per changed source on release, and each message costs ~1 ms of server CPU whatever
        its size (its serialiser first indexes every model of the page). Panel's `unlocked` writes them
        as one message once the page has loaded; before that (or without a server) it holds nothing,
        so the frame holds the document itself and Bokeh sends the changes as it always does."""
        doc = self._doc
        with pn.io.unlocked():
            held_here = doc is not None and not doc.callbacks.hold_value
            if held_here:
                doc.hold("combine")
            try:
                yield
            finally:
                if held_here:
                    doc.unhold()

    # -- messages and exports ---------------------------------------------------------
    def _show_messages(self, *_):
        lab = self.lab
        self.alert.object = html.escape(lab.message)
        self.alert.alert_type = lab.level if lab.level != "info" else "info"
        self.alert.visible = bool(lab.message)
        blocks = [v for v in lab.blocks.values()]
        self.block_alert.object = "<br>".join(html.escape(b) for b in blocks)
        self.block_alert.visible = bool(blocks)

    def _csv(self):
        return samples_csv(self.lab.runs)

    def _npz(self):
        from ..urlstate import to_query
        return samples_npz(self.lab.runs, to_query(self.cfg))

    def __panel__(self):
        # compact keeps the page's flex nesting: in plain nested Columns BokehJS lays the figures out at zero width
        parts = [self.main] if self.compact else [self.controls, self.main]
        return pn.FlexBox(*parts, flex_wrap="wrap", sizing_mode="stretch_width", css_classes=["lab-page"])


__all__ = ["LabView", "residual_badge"]
