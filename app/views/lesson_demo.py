"""A lesson's live demo, embedded in its page: the lesson's lab preset at a classroom size.

The run is built on the first press of "Run the demo here", so reading a page costs the server
nothing; it reuses the lab's model (Lab), frame loop and plots (LabView in compact form) and the
lab's play/step/reset buttons, and it pauses when the reader leaves the page or the tab.
"""
from __future__ import annotations

import html

import panel as pn
from panel.viewable import Viewer

from samplers.registry import REGISTRY

from ..model.config import LabConfig
from ..model.lab import Lab
from ..model.urlstate import apply_query, parse_search
from .controls import RunControls
from .frame_loop import session_schedule
from .lab import LabView

EMBED_CHAINS = 1000     # enough for a smooth histogram; the full preset runs in the lab


def embedded_config(query: str) -> tuple[LabConfig, list[str]]:
    """The preset's configuration, with at most EMBED_CHAINS chains, and anything it had to ignore."""
    cfg = LabConfig()
    errors = apply_query(cfg, parse_search(query))
    cfg.chains = min(cfg.chains, EMBED_CHAINS)
    return cfg, errors


def describe(cfg: LabConfig, sides=None) -> str:
    """Who runs, by title: the built sides' titles (which say what an edit changed), or before the run is
    built (building it costs the server) the registered titles."""
    if sides:
        titles = [side.title for side in sides]
    else:
        title_a = REGISTRY[cfg.sampler].title
        titles = [f"naive form of {title_a}" if cfg.naive and not REGISTRY[cfg.sampler].naive else title_a]
        if cfg.compare:
            titles.append(REGISTRY[cfg.sampler_b].title)
    who = " beside ".join(f"<b>{html.escape(t)}</b>" for t in titles)
    return f"{who} on <b>{html.escape(cfg.potential)}</b>, {cfg.chains} chains, seed {cfg.seed}"


class LessonDemo(Viewer):
    def __init__(self, query: str, lab_href: str = "", doc=None, **params):
        super().__init__(**params)
        self.query, self.lab_href, self._doc = query, lab_href, doc
        self.cfg, errors = embedded_config(query)
        self.view: LabView | None = None
        self._lab: Lab | None = None
        link = f" · <a class='lesson-demo' href='{lab_href}'>open it in the full lab →</a>" if lab_href else ""
        note = f"<br><span style='color:#b00020'>ignored: {html.escape('; '.join(errors))}</span>" if errors else ""
        self._header = lambda sides=None: f"<b>Live demo</b>: {describe(self.cfg, sides)}{link}{note}"
        self.header = pn.pane.HTML(self._header(), sizing_mode="stretch_width", margin=(5, 10),
                                   css_classes=["lesson-demo-header"])
        self.start_button = pn.widgets.Button(name="▶ Run the demo here", button_type="success", width=200,
                                              css_classes=["lesson-demo-start"])
        self.start_button.on_click(lambda e: self._start_soon())
        self.body = pn.Column(self.header, self.start_button, sizing_mode="stretch_width",
                              css_classes=["lesson-live-demo"],
                              styles={"border": "1px solid #ddd", "border-radius": "6px", "padding": "4px"})

    def attach(self, doc) -> None:
        self._doc = doc
        if self.view is not None:
            self.view.attach(doc)

    def _start_soon(self) -> None:
        """Say it is building before building: a data posterior's first build takes seconds, and the
        button's new label only reaches the browser once this callback has returned."""
        doc = self._doc or pn.state.curdoc
        if self.view is not None or doc is None or doc.session_context is None:
            self.start()
            return
        self.start_button.name, self.start_button.disabled = "Building the run…", True
        doc.add_next_tick_callback(self.start)

    def lab(self) -> Lab:
        """The demo's lab, built on first use (the demo's run, or its step-size ladder)."""
        if self._lab is None:
            self._lab = Lab(self.cfg, schedule=session_schedule(self._doc or pn.state.curdoc))
            self._lab.param.watch(lambda e: setattr(self.header, "object", self._header(self._lab.sides)), "version")
        return self._lab

    def start(self) -> None:
        """Build the run (first time) and play it."""
        if self.view is None:
            lab = self.lab()
            self.view = LabView(lab, compact=True)
            self.view.attach(self._doc or pn.state.curdoc)
            self.header.object = self._header(lab.sides)
            buttons = RunControls(lab)
            # a narrow window wraps the slider under the buttons rather than cutting its label
            speed = pn.Column(buttons.speed, styles={"flex": "1 1 220px", "min-width": "200px"})
            row = pn.FlexBox(buttons.play, buttons.step, buttons.reset, speed, flex_wrap="wrap",
                             sizing_mode="stretch_width", css_classes=["lesson-demo-buttons"])
            self.body.objects = [self.header, row, self.view]
        self.view.lab.play()

    def pause(self) -> None:
        if self.view is not None:
            self.view.lab.pause()

    def stop(self) -> None:
        if self.view is not None:
            self.view.stop()

    def __panel__(self):
        return self.body
