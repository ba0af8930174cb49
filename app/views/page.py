"""The whole page: a header and three sections (Lab, Lessons, Paper figures), with the URL kept
in step with the configuration so a copied link reproduces the run."""
from __future__ import annotations

import panel as pn
from panel.viewable import Viewer

from ..model.config import LabConfig
from ..model.lab import Lab
from ..model.reasons import Notice, NoticeKind
from ..model.urlstate import apply_query, parse_search, query_string
from .figures import FiguresView
from .lab import LabView
from .lessons import LessonsView

TABS = ["lab", "lessons", "figures"]
CSS = """
.lab-page { gap: 4px; }
@media (max-width: 700px) { .lab-controls { flex: 1 1 100% !important; width: 100% !important; } }
"""


class AppView(Viewer):
    def __init__(self, search: str = "", **params):
        super().__init__(**params)
        query = parse_search(search)
        self.config = LabConfig()
        errors = apply_query(self.config, query)
        self.lab = Lab(self.config)
        self._report_ignored(errors)
        self.lab_view = LabView(self.lab)
        tab = query.get("tab", "lab")
        self.lessons = LessonsView(query.get("lesson", ""))
        self.tabs = pn.Tabs(("Lab", self.lab_view), ("Lessons", self.lessons),
                            ("Paper figures", FiguresView()), active=TABS.index(tab) if tab in TABS else 0,
                            sizing_mode="stretch_width", dynamic=True, css_classes=["sections"])
        self.autoplay = query.get("play", "") in ("1", "true")
        self._location = None
        self._last_search = None
        self.header = pn.pane.HTML(
            "<div style='display:flex;align-items:baseline;gap:12px;flex-wrap:wrap'>"
            "<span style='font-size:20px;font-weight:700'>SG-MCMC lab</span>"
            "<span style='color:#555;font-size:13px'>every sampler is a recipe (H, D, Q): pick or edit one and "
            "watch it against the exact density</span></div>", sizing_mode="stretch_width", margin=(5, 10))

    def start(self, doc, location=None):
        """Session start: bind the frame loop and the URL."""
        self.lab_view.attach(doc)
        self.lessons.attach(doc)
        self.tabs.param.watch(self._on_tab, "active")
        self._location = location
        if location is not None:
            self.config.param.watch(self._write_url, [p for p in self.config.param if p != "name"])
            self.lab.param.watch(self._write_url, ["version", "blocks"])
            self.tabs.param.watch(self._write_url, "active")
            if getattr(self.lessons, "select", None) is not None:
                self.lessons.select.param.watch(self._write_url, "value")
            location.param.watch(self._read_url, "search")
            # the browser sets the location from its address bar when the page loads: write after that,
            # or a link the lab corrected (bad values dropped) would keep its bad values
            if doc is not None and doc.session_context is not None:
                pn.state.onload(self._write_url)
            else:
                self._write_url()
        if self.autoplay:
            self.lab.play()

    def _on_tab(self, event):
        """Only the shown section runs: leaving one pauses its run (two runs would halve both frame rates)."""
        if TABS[event.new] != "lessons":
            self.lessons.pause()
        if TABS[event.new] != "lab":
            self.lab.pause()

    def nav(self) -> dict:
        tab = TABS[self.tabs.active]
        lesson = getattr(getattr(self.lessons, "select", None), "value", "") if tab == "lessons" else ""
        return {"tab": tab if tab != "lab" else "", "lesson": lesson}

    def _write_url(self, *_):
        """The URL holds the configuration the plots were built from: an edit that blocks the run
        (invalid D or Q) is not written, so a copied link always opens a working lab."""
        search = query_string(self.lab.valid_config or self.config, self.nav())
        self._last_search = search
        if self._location.search != search:
            self._location.search = search

    def _read_url(self, event):
        """Back/forward in the browser: apply the URL's configuration."""
        if event.new == self._last_search:
            return
        query = parse_search(event.new)
        self._last_search = event.new
        self._report_ignored(apply_query(self.config, query))

    def _report_ignored(self, errors: list[str]) -> None:
        if errors:
            self.lab.notice = Notice(NoticeKind.LINK, "Some of the link was ignored: " + "; ".join(errors))

    def stop(self):
        self.lab_view.stop()
        self.lessons.stop()

    def on_session_destroyed(self, session_context):
        self.stop()

    def __panel__(self):
        return pn.Column(pn.pane.HTML(f"<style>{CSS}</style>", height=0, margin=0), self.header, self.tabs,
                         sizing_mode="stretch_width")
