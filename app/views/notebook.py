"""The lab in a notebook: after `pn.extension("katex")`, `design_lab(...)` as a cell's last line shows the lab on
a design (its editor open), optionally beside a named sampler, as the web app does. Its runs play on a server's
frame loop: `design_lab(...).show()` (or `pn.serve`, `.servable()`) opens it live in a browser tab."""
from __future__ import annotations

import panel as pn
from panel.viewable import Viewer

from samplers.design import Design, load_design

from ..model.config import LabConfig
from ..model.design import DESIGN, as_data
from ..model.lab import Lab
from .frame_loop import quiet_closed_sockets
from .lab import LabView
from .page import quiet_late_messages


class DesignLab(Viewer):
    """A LabView that binds its frame loop to the page it is served on, as app/main.py does for the app's pages
    (with the same filters for a closed page's last messages, and the runs dropped with the session)."""

    def __init__(self, view: LabView, **params):
        super().__init__(**params)
        self.view = view

    def __panel__(self):
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:
            quiet_closed_sockets()
            quiet_late_messages()
            self.view.attach(doc)
            pn.state.on_session_destroyed(lambda context: self.view.stop())
        return self.view


def design_lab(design, potential: str = "double-well", compare: str | None = None, chains: int = 1000,
               **config) -> DesignLab:
    """The lab running `design` (a dict as a design file holds, YAML text, a shipped design's name, a path, or a
    Design) on `potential`, beside the named sampler `compare` if given; other LabConfig settings as keywords
    (V, seed, speed, burn). Built at once, in this process: a notebook has no other sessions to keep playing."""
    data = as_data(design if isinstance(design, Design) else load_design(design))
    cfg = LabConfig(potential=potential, sampler=DESIGN, design=data, chains=chains,
                    compare=compare is not None, **({"sampler_b": compare} if compare else {}), **config)
    view = LabView(Lab(cfg), recipe_open=True)
    view._build_recipe_now()
    return DesignLab(view)
